"""The partition-key metadata item: history entries, changes, read span, item shape."""

from __future__ import annotations

import pytest

from partita.client.sharding.metadata import (
    HistoryEntry,
    ShardMetadata,
    from_item,
    new_metadata,
    pruned,
    to_item,
)

SEED_ITEM = {
    "file_path": {"S": "/shared/firetvGen2.txt"},
    "number_of_shards": {"N": "2"},
    "last_updated": {"N": "1562858912"},
    "shard_history": {"SS": ["1561758912:1", "1562858912:2"]},
}


def test_the_seeds_sample_item_parses() -> None:
    meta = from_item(SEED_ITEM, "file_path")
    assert meta == ShardMetadata(
        "/shared/firetvGen2.txt", 2, 1562858912, (HistoryEntry(1561758912, 1), HistoryEntry(1562858912, 2))
    )
    assert to_item(meta, "file_path") == SEED_ITEM


def test_a_new_key_starts_with_one_entry_of_its_count() -> None:
    meta = new_metadata("/f", 1, 1000)
    assert meta.number_of_shards == 1 and meta.last_updated == 1000
    assert [str(e) for e in meta.history] == ["1000:1"]


def test_a_change_sets_count_and_time_and_appends_epoch_colon_count() -> None:
    meta = from_item(SEED_ITEM, "file_path").changed_to(3, 1562900000)
    assert (meta.number_of_shards, meta.last_updated) == (3, 1562900000)
    assert [str(e) for e in meta.history] == ["1561758912:1", "1562858912:2", "1562900000:3"]


def test_last_updated_strictly_increases_even_within_one_second() -> None:
    """Two changes in one second must not share a last_updated, or the lock could not tell them apart."""
    first = new_metadata("/f", 1, 1000).changed_to(2, 1000)
    second = first.changed_to(3, 1000)
    assert (first.last_updated, second.last_updated) == (1001, 1002)
    assert len(set(second.history)) == 3


def test_a_clock_that_went_backwards_still_moves_last_updated_forward() -> None:
    assert new_metadata("/f", 1, 5000).changed_to(2, 4000).last_updated == 5001


def test_readers_cover_the_widest_count_in_the_history_after_a_shrink() -> None:
    meta = new_metadata("/f", 1, 0).changed_to(8, 10).changed_to(2, 20)
    assert meta.number_of_shards == 2
    assert meta.read_span == 8


def test_history_keeps_the_newest_entries_and_always_the_widest() -> None:
    meta = new_metadata("/f", 1, 0)
    for t, count in enumerate([2, 9, 3, 2, 1, 2, 3], start=1):
        meta = meta.changed_to(count, t, history_limit=3)
    assert [str(e) for e in meta.history] == ["2:9", "6:2", "7:3"]
    assert meta.read_span == 9


def test_pruning_leaves_short_histories_alone_and_refuses_tiny_limits() -> None:
    entries = (HistoryEntry(1, 1), HistoryEntry(2, 2))
    assert pruned(entries, 5) == entries
    with pytest.raises(ValueError):
        pruned(entries, 1)


@pytest.mark.parametrize(
    "broken",
    [
        {k: v for k, v in SEED_ITEM.items() if k != "number_of_shards"},
        {**SEED_ITEM, "number_of_shards": {"S": "2"}},
        {**SEED_ITEM, "number_of_shards": {"N": "0"}},
        {**SEED_ITEM, "last_updated": {"N": "soon"}},
        {**SEED_ITEM, "shard_history": {"SS": ["1561758912-1"]}},
        {**SEED_ITEM, "shard_history": {"S": "1561758912:1"}},
    ],
)
def test_a_malformed_item_is_an_error_not_a_guess(broken: dict[str, dict[str, object]]) -> None:
    with pytest.raises(ValueError):
        from_item(broken, "file_path")  # type: ignore[arg-type]


def test_a_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        new_metadata("/f", 0, 1)
    with pytest.raises(ValueError):
        new_metadata("/f", 1, 1).changed_to(0, 2)


def test_retiring_drops_the_wider_entries_and_records_itself() -> None:
    meta = new_metadata("/f", 1, 0).changed_to(4, 10).changed_to(2, 20)
    assert meta.read_span == 4
    retired = meta.retired(30)
    assert retired.read_span == 2 and retired.number_of_shards == 2
    assert [str(e) for e in retired.history] == ["0:1", "20:2", "30:2"]
    assert retired.last_updated == 30
    assert meta.retired(20).last_updated == 21  # still strictly increasing
