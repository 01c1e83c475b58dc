"""Merging shards in sort-key order, page by page, with an opaque cursor (pure core)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partita.client.sharding.keys import sort_position
from partita.client.sharding.merge import ShardCursor, ShardMerge


class Shards:
    """Items per shard, answering Query pages as DynamoDB does (sorted, Limit, ExclusiveStartKey)."""

    def __init__(self, data: dict[int, list[dict[str, Any]]], kind: str = "N") -> None:
        self.data = {n: sorted(items, key=lambda i: sort_position(i["sk"])) for n, items in data.items()}
        self.queries = 0

    def page(
        self, shard: int, start: dict[str, Any] | None, limit: int, forward: bool
    ) -> tuple[list[Any], Any]:
        self.queries += 1
        items = list(self.data.get(shard, []))
        if not forward:
            items.reverse()
        if start is not None:
            s = sort_position(start)
            items = [
                i for i in items if (sort_position(i["sk"]) > s if forward else sort_position(i["sk"]) < s)
            ]
        out = items[:limit]
        last = out[-1]["sk"] if len(items) > limit else None
        return out, last


def read_page(shards: Shards, span: int, limit: int, forward: bool, cursor: str | None, fetch_limit: int = 3
              ) -> tuple[list[dict[str, Any]], str | None]:  # fmt: skip
    """One page through the merge, as the reader drives it."""
    merge = ShardMerge("pk", "sk", span, forward, ShardCursor.decode(cursor) if cursor else None)
    out: list[dict[str, Any]] = []
    for _ in range(10_000):
        needed = merge.needs()
        if needed:
            for shard in needed:
                merge.feed(shard, *shards.page(shard, merge.start_of(shard), fetch_limit, forward))
            continue
        item = merge.pop()
        if item is None:
            break
        out.append(item)
        if len(out) == limit:
            break
    return out, None if merge.finished() else merge.cursor().encode()


def read_all(shards: Shards, span: int, limit: int, forward: bool = True) -> tuple[list[Any], int]:
    items: list[Any] = []
    cursor: str | None = None
    for pages in range(1, 10_000):
        page, cursor = read_page(shards, span, limit, forward, cursor)
        items.extend(page)
        if cursor is None:
            return items, pages
    raise AssertionError("did not finish")


def item(sk: int, shard: int) -> dict[str, Any]:
    return {"sk": {"N": str(sk)}, "shard": shard}


def test_items_of_all_shards_come_out_in_sort_key_order() -> None:
    shards = Shards({1: [item(5, 1), item(1, 1)], 2: [item(3, 2), item(4, 2)], 3: [item(2, 3)]})
    items, pages = read_all(shards, 3, limit=100)
    assert [i["sk"]["N"] for i in items] == ["1", "2", "3", "4", "5"]
    assert pages == 1


def test_descending_reads_are_the_exact_reverse_including_ties() -> None:
    data = {1: [item(1, 1), item(2, 1)], 2: [item(1, 2), item(2, 2)], 3: [item(2, 3)]}
    forward, _ = read_all(Shards(data), 3, limit=2)
    backward, _ = read_all(Shards(data), 3, limit=2, forward=False)
    assert [(i["sk"]["N"], i["shard"]) for i in forward] == [("1", 1), ("1", 2), ("2", 1), ("2", 2), ("2", 3)]
    assert backward == list(reversed(forward))


def test_equal_sort_keys_in_different_shards_survive_a_page_boundary_between_them() -> None:
    data = {1: [item(7, 1)], 2: [item(7, 2)], 3: [item(7, 3)]}
    items, pages = read_all(Shards(data), 3, limit=1)
    assert [i["shard"] for i in items] == [1, 2, 3]
    assert pages == 3


def test_the_last_page_has_no_cursor_and_an_empty_key_reads_as_one_empty_page() -> None:
    assert read_page(Shards({}), 4, 10, True, None) == ([], None)
    items, cursor = read_page(Shards({1: [item(1, 1)], 2: [item(2, 2)]}), 2, 2, True, None)
    assert len(items) == 2 and cursor is None


def test_a_cursor_belongs_to_its_partition_key_and_direction() -> None:
    _, cursor = read_page(Shards({1: [item(1, 1), item(2, 1)]}), 1, 1, True, None)
    assert cursor is not None
    with pytest.raises(ValueError):
        ShardMerge("other", "sk", 1, True, ShardCursor.decode(cursor))
    with pytest.raises(ValueError):
        ShardMerge("pk", "sk", 1, False, ShardCursor.decode(cursor))


@pytest.mark.parametrize("token", ["", "not base64!", "eyJ2IjoyfQ==", "e30="])
def test_a_foreign_token_is_refused(token: str) -> None:
    with pytest.raises(ValueError):
        ShardCursor.decode(token)


def test_cursors_carry_string_number_and_binary_sort_keys_exactly() -> None:
    positions = {1: {"S": "a\u00e9\U0001f600"}, 2: {"N": "-1.5E+3"}, 3: {"B": b"\x00\xff"}, 4: None}
    cursor = ShardCursor("/shared/x_y", False, positions)  # type: ignore[arg-type]
    assert ShardCursor.decode(cursor.encode()) == cursor
    assert all(c.isalnum() or c in "-_=" for c in cursor.encode())  # URL-safe


def test_a_shard_added_between_pages_is_read_after_the_cursor_only() -> None:
    """Items of a new shard that sort before where the reader stands are behind it already."""
    data = {1: [item(1, 1), item(3, 1), item(5, 1)], 2: [item(2, 2), item(4, 2), item(6, 2)]}
    first, cursor = read_page(Shards(data), 2, 3, True, None)
    assert [i["sk"]["N"] for i in first] == ["1", "2", "3"]
    data[3] = [item(0, 3), item(3, 3), item(4, 3), item(7, 3)]
    rest, cursor = read_page(Shards(data), 3, 100, True, cursor)
    assert [(i["sk"]["N"], i["shard"]) for i in rest] == [("4", 2), ("4", 3), ("5", 1), ("6", 2), ("7", 3)]
    assert cursor is None


def test_a_cursor_wider_than_the_span_keeps_reading_the_shards_it_knows() -> None:
    data = {1: [item(1, 1), item(3, 1)], 2: [item(2, 2), item(4, 2)]}
    _, cursor = read_page(Shards(data), 2, 1, True, None)
    rest, _ = read_page(Shards(data), 1, 100, True, cursor)  # metadata now says one shard
    assert [i["sk"]["N"] for i in rest] == ["2", "3", "4"]


def test_an_item_written_to_a_finished_shard_after_a_page_is_still_read() -> None:
    data = {1: [item(1, 1)], 2: [item(2, 2), item(3, 2), item(4, 2)]}
    first, cursor = read_page(Shards(data), 2, 2, True, None)
    assert [i["sk"]["N"] for i in first] == ["1", "2"]
    data[1].append(item(9, 1))
    rest, _ = read_page(Shards(data), 2, 100, True, cursor)
    assert [i["sk"]["N"] for i in rest] == ["3", "4", "9"]


def test_pop_before_fetching_is_a_programming_error() -> None:
    merge = ShardMerge("pk", "sk", 2)
    assert merge.needs() == [1, 2]
    with pytest.raises(RuntimeError):
        merge.pop()


@settings(max_examples=200, deadline=None)
@given(
    sort_keys=st.lists(st.tuples(st.integers(1, 6), st.integers(-20, 20)), max_size=60),
    limit=st.integers(1, 9),
    forward=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_paging_returns_every_item_once_in_order(
    sort_keys: list[tuple[int, int]], limit: int, forward: bool, seed: int
) -> None:
    data: dict[int, list[dict[str, Any]]] = {}
    for shard, sk in set(sort_keys):  # (shard, sort key) is the primary key: unique
        data.setdefault(shard, []).append(item(sk, shard))
    random.Random(seed).shuffle(data.get(1, []))
    items, _ = read_all(Shards(data), 6, limit, forward)
    expected = sorted(((sk, shard) for shard, sk in set(sort_keys)), reverse=not forward)
    assert [(int(i["sk"]["N"]), i["shard"]) for i in items] == expected


def test_each_shard_first_asks_for_its_share_of_the_page_then_doubles() -> None:
    from partita.client.sharding.reader import fetch_limit

    assert fetch_limit(100, 1, None) == 100  # one shard: the whole page
    assert fetch_limit(100, 4, None) == 33  # ceil(100 * 1.25 / 4) + 1
    assert fetch_limit(100, 16, None) == 9
    assert fetch_limit(60, 4, 33) == 60  # a refill doubles, capped at what is still wanted
    assert fetch_limit(100, 16, 9) == 18
    assert fetch_limit(1, 64, None) == 1
    assert fetch_limit(5, 64, 40) == 5


def test_skewed_shards_are_read_with_few_rounds_and_little_over_read() -> None:
    """All of a page in one shard of eight (the items written before the count grew)."""
    from partita.client.sharding.reader import fetch_limit

    shards = Shards({1: [item(sk, 1) for sk in range(200)], **{n: [item(1000 + n, n)] for n in range(2, 9)}})
    merge = ShardMerge("pk", "sk", 8)
    sizes: dict[int, int] = {}
    out: list[Any] = []
    rounds = 0
    while len(out) < 100:
        needed = merge.needs()
        if needed:
            rounds += 1
            for shard in needed:
                sizes[shard] = fetch_limit(100 - len(out), merge.width, sizes.get(shard))
                merge.feed(shard, *shards.page(shard, merge.start_of(shard), sizes[shard], True))
            continue
        popped = merge.pop()
        assert popped is not None
        out.append(popped)
    assert [int(i["sk"]["N"]) for i in out] == list(range(100))
    assert rounds <= 4
    assert shards.queries <= 8 + 4
