"""Item counting for DescribeTable: what a leader measures and publishes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita.api.values import item_size
from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import PartitionStats
from partita.control.store import MemoryControlStore
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState, count_items, reconcile_hosting
from partita.storage.table_stats import (
    COST_RATIO,
    Figures,
    SplitPoint,
    StatsPublisher,
    leads,
    measure_partition,
    next_pass_delay,
)
from tests.unit.records import put_record
from tests.unit.storage.test_hosting import table_record

HALF = 2**63


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


def _item(pk: str, payload: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "payload": {"S": payload}, "n": {"N": "12.5"}, "m": {"M": {"x": {"BOOL": True}}}}


async def _put(engine: Engine, table_id: int, item: dict[str, Any]) -> int:
    pk = item["pk"]["S"].encode()
    h = keys.key_hash("S", pk)
    await engine.commit([Effect(Kind.PUT, keys.item_key(table_id, h, pk, None), orjson.dumps(item))])
    return h


async def test_a_partition_counts_only_its_own_hash_range_and_table(engine: Engine) -> None:
    low, high = Partition("p0", 0, HALF, ("n1",), "n1"), Partition("p1", HALF, 2**64, ("n1",), "n1")
    expected = {"p0": [0, 0], "p1": [0, 0]}
    for i in range(40):
        item = _item(f"user-{i}", "y" * i)
        h = await _put(engine, 7, item)
        side = expected["p0" if h < HALF else "p1"]
        side[0] += 1
        side[1] += item_size(item)
    await _put(engine, 8, _item("other-table", "z" * 100))  # a neighbouring table's key
    assert 0 < expected["p0"][0] < 40  # both halves hold items
    assert (await measure_partition(engine, 7, low))[:2] == tuple(expected["p0"])
    assert (await measure_partition(engine, 7, high))[:2] == tuple(expected["p1"])
    assert await measure_partition(engine, 9, low) == Figures(0, 0, None, False)


async def test_unchanged_figures_are_not_written_again() -> None:
    store = MemoryControlStore()
    writes: list[tuple[int, str]] = []
    original = store.put_partition_stats

    async def counting(table_id: int, partition_id: str, stats: PartitionStats) -> None:
        writes.append((table_id, partition_id))
        await original(table_id, partition_id, stats)

    store.put_partition_stats = counting  # type: ignore[method-assign]
    publisher = StatsPublisher(store)
    await publisher.publish(7, "p0", Figures(3, 300))
    await publisher.publish(7, "p0", Figures(3, 300))
    await publisher.publish(7, "p0", Figures(4, 410))
    assert writes == [(7, "p0"), (7, "p0")]
    stored = (await store.list_partition_stats(7))["p0"]
    assert (stored.item_count, stored.size_bytes) == (4, 410)


def test_a_slow_pass_stretches_the_wait_so_counting_stays_a_small_share_of_time() -> None:
    assert next_pass_delay(60.0, 0.01) == 60.0
    assert next_pass_delay(60.0, 10.0) == 10.0 * COST_RATIO
    assert 10.0 / (10.0 + next_pass_delay(1.0, 10.0)) <= 0.05


def test_only_the_leader_counts_a_partition() -> None:
    assert leads(Partition("p0", 0, HALF, ("a", "b", "c"), "b"), "b")
    assert not leads(Partition("p0", 0, HALF, ("a", "b", "c"), "b"), "a")
    assert leads(Partition("p0", 0, HALF, ("a", "b"), None), "a")  # no leader yet: the first replica


async def test_a_pass_publishes_the_partitions_this_node_leads(engine: Engine) -> None:
    record = table_record(7, [("n1",), ("n2",)])  # p0 led by n1, p1 by n2
    store = MemoryControlStore()
    state = NodeState("n1", "a", engine, hosted=desired_hosting([record], "n1"))
    items = [_item(f"user-{i}", "q") for i in range(30)]
    mine = [i for i in items if await _put(engine, 7, i) < HALF]
    await count_items(state, StatsPublisher(store))
    stats = await store.list_partition_stats(7)
    assert set(stats) == {"p0"}
    assert (stats["p0"].item_count, stats["p0"].size_bytes) == (len(mine), sum(item_size(i) for i in mine))


async def test_dropping_a_deleted_table_clears_its_counts_but_a_live_table_keeps_them(engine: Engine) -> None:
    store = MemoryControlStore()
    moved = table_record(8, [("n2",)])
    await store.put_partition_stats(7, "p0", PartitionStats(5, 500, 1.0))  # published late
    await store.put_partition_stats(8, "p0", PartitionStats(6, 600, 1.0))  # n2's count
    # n1 holds data of both: table 7 is gone from the store, table 8 now lives on n2 only.
    state = NodeState("n1", "a", engine, ids_with_data={7, 8})
    await put_record(store, moved)
    await reconcile_hosting(state, store, [moved])
    assert await store.list_partition_stats(7) == {}
    assert await store.list_partition_stats(8) == {"p0": PartitionStats(6, 600, 1.0)}


# --- the split point published with the counts -----------------------------------------


def _true_halfway_error(items: list[tuple[int, int]], cut: int) -> float:
    """How far from half the bytes a cut at `cut` leaves below it (0 = exactly half)."""
    total = sum(size for _, size in items)
    below = sum(size for h, size in items if h < cut)
    return abs(below - total / 2) / total


@pytest.mark.parametrize(
    ("name", "items"),
    [
        ("uniform sizes, uniform hashes", [(h * 1000, 100) for h in range(1, 5001)]),
        # Most bytes sit in a narrow band of hashes: the middle of the range would cut
        # almost nothing off; the median cuts the band itself in half.
        ("a dense band", [(h, 10) for h in range(1, 1001)] + [(2**60 + h, 1000) for h in range(4000)]),
        ("one big item among small ones", [(h, 10) for h in range(1, 101)] + [(10_000, 100_000)]),
        ("many items per key hash", [(h // 10 * 7 + 1, 50) for h in range(30_000)]),
    ],
)
def test_the_split_point_halves_the_bytes_within_the_marks_resolution(
    name: str, items: list[tuple[int, int]]
) -> None:
    split = SplitPoint()
    for h, size in items:
        split.add(h, size)
    cut = split.split_hash()
    assert cut is not None, name
    assert items[0][0] < cut <= items[-1][0]  # both sides keep an item
    assert len(split.marks) <= SplitPoint.MAX_MARKS  # bounded memory however many items
    largest = max(size for _, size in items) / sum(size for _, size in items)
    # Within the marks' spacing (2/MAX_MARKS of the bytes), or one item, of the median.
    assert _true_halfway_error(items, cut) <= 2 / SplitPoint.MAX_MARKS + largest / 2 + 1e-9, name


def test_one_key_hash_has_no_split_point() -> None:
    split = SplitPoint()
    for _ in range(100):
        split.add(42, 1000)
    assert split.split_hash() is None
    empty = SplitPoint()
    assert empty.split_hash() is None


async def test_a_count_reports_the_median_hash_and_a_single_key_partition(engine: Engine) -> None:
    whole = Partition("p0", 0, 2**64, ("n1",), "n1")
    hashes = sorted([await _put(engine, 7, _item(f"user-{i}", "x" * 200)) for i in range(200)])
    figures = await measure_partition(engine, 7, whole)
    assert figures.split_hash is not None and not figures.single_key
    below = sum(1 for h in hashes if h < figures.split_hash)
    assert abs(below - 100) <= 2  # equal-sized items: the median hash halves the count
    # A table whose items all share one partition key: no cut divides them.
    for i in range(20):
        pk = b"hot"
        h = keys.key_hash("S", pk)
        sk = keys.encode_sort_key({"N": str(i)}, "N")
        item = {"pk": {"S": "hot"}, "sk": {"N": str(i)}, "v": {"S": "y" * 100}}
        await engine.commit([Effect(Kind.PUT, keys.item_key(8, h, pk, sk), orjson.dumps(item))])
    collection = await measure_partition(engine, 8, whole)
    assert (collection.item_count, collection.split_hash, collection.single_key) == (20, None, True)


async def test_the_split_point_is_published_with_the_counts() -> None:
    store = MemoryControlStore()
    await StatsPublisher(store).publish(7, "p0", Figures(3, 300, 12345, False))
    await StatsPublisher(store).publish(7, "p1", Figures(9, 900, None, True))
    stats = await store.list_partition_stats(7)
    assert (stats["p0"].split_hash, stats["p0"].single_key) == (12345, False)
    assert (stats["p1"].split_hash, stats["p1"].single_key) == (None, True)
