"""A partition's heat: hot windows against its allocation, how long the run of hot
windows lasted, and the key distribution point of its load (or that one key carries
it), in bounded memory."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.control.store import MemoryControlStore
from partita.storage.data_server import DataPlane
from partita.storage.engine import Engine
from partita.storage.heat import COOL, DEFAULT_WINDOW_SECONDS, Heat, PartitionHeat, distribution_point
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState, count_items
from partita.storage.table_stats import StatsPublisher
from tests.unit import records

W = 10.0  # window seconds


def drive(
    heat: PartitionHeat, start: float, seconds: float, rate: float, hashes: list[int], write: bool = False
) -> None:
    """`rate` units per second for `seconds`, ten requests a second, keys in turn."""
    requests = int(seconds * 10)
    for i in range(requests):
        units = rate / 10
        heat.record(hashes[i % len(hashes)], 0.0 if write else units, units if write else 0.0, start + i / 10)


@pytest.mark.parametrize(
    ("case", "rate", "write", "hot"),
    [
        ("reads at 90% of their allocation", 900.0, False, True),
        ("reads at 79%", 790.0, False, False),
        ("writes at 80% of theirs", 80.0, True, True),
        ("writes at 50%", 50.0, True, False),
    ],
)
def test_a_window_is_hot_at_the_hot_share_of_either_allocation(
    case: str, rate: float, write: bool, hot: bool
) -> None:
    heat = PartitionHeat(0.0, read_allocation=1000.0, write_allocation=100.0, window=W, hot_share=0.8)
    drive(heat, 0.0, W, rate, [1, 2, 3, 4], write)
    assert (heat.report(W).hot_seconds > 0) is hot, case


def test_the_hot_run_lengthens_window_by_window_and_ends_in_a_cool_one() -> None:
    heat = PartitionHeat(0.0, 1000.0, 100.0, window=W)
    keys = [k * 2**40 for k in range(1, 101)]
    assert heat.report(5.0) == COOL  # no window ended yet
    for n in range(3):
        drive(heat, n * W, W, 950.0, keys)
    assert heat.report(3 * W).hot_seconds == 3 * W
    drive(heat, 3 * W, W, 100.0, keys)  # a cool window
    assert heat.report(4 * W) == COOL
    drive(heat, 4 * W, W, 950.0, keys)
    assert heat.report(5 * W).hot_seconds == W  # a new run


def test_windows_that_pass_unrecorded_end_the_run() -> None:
    heat = PartitionHeat(0.0, 1000.0, 100.0, window=W)
    drive(heat, 0.0, W, 950.0, [5, 6, 7])
    assert heat.report(W + 1).hot_seconds == W
    assert heat.report(3 * W + 1) == COOL  # the window [W, 2W) saw nothing


def test_the_distribution_point_is_the_median_of_the_load_not_of_the_keys() -> None:
    heat = PartitionHeat(0.0, 1000.0, 100.0, window=W, rng=random.Random(1))
    # 100 keys; the ten highest take 3/4 of the load: the median falls among them.
    rng = random.Random(7)
    for i in range(20_000):
        key = rng.randrange(90, 100) if rng.random() < 0.75 else rng.randrange(0, 90)
        heat.record(key * 2**50, 1.0, 0.0, i * W / 20_000)
    report = heat.report(W)
    assert report.hot_seconds == W and not report.single_key
    assert report.split_hash is not None and 90 * 2**50 <= report.split_hash < 100 * 2**50
    assert len(heat.samples) <= PartitionHeat.MAX_SAMPLES


def test_one_key_carrying_most_of_the_load_is_reported_not_split() -> None:
    heat = PartitionHeat(0.0, 1000.0, 100.0, window=W)
    drive(heat, 0.0, W, 950.0, [42, 42, 42, 7, 9])  # 60% on key 42
    assert heat.report(W) == Heat(W, None, True)


def test_writes_weigh_three_read_units_in_the_distribution() -> None:
    # Key 1 reads 3 units per request, key 2 writes 1: equal load, so neither carries most.
    split, single = distribution_point([1, 2] * 100)
    assert (split, single) == (2, False)
    # A strictly periodic stream must not alias with the sampling (it did with a fixed
    # step and every-other-sample decimation: 95 samples of key 1 to 54 of key 2).
    shares = []
    for seed in range(20):
        heat = PartitionHeat(0.0, 1000.0, 100.0, window=W, rng=random.Random(seed))
        for i in range(2000):
            heat.record(1, 3.0, 0.0, i * 0.002)
            heat.record(2, 0.0, 1.0, i * 0.002)
        shares.append(heat.samples.count(1) / len(heat.samples))
    assert abs(sum(shares) / len(shares) - 0.5) < 0.03
    assert all(0.35 < share < 0.65 for share in shares)


def test_too_little_load_gives_no_point() -> None:
    assert distribution_point([]) == (None, False)
    assert distribution_point([5]) == (None, False)


# --- the node: the data path heats partitions, the leader's count reports it --------------


async def test_the_data_path_heats_the_partition_and_the_count_publishes_it(tmp_path: Path) -> None:
    engine = Engine.open(tmp_path / "node", sync=False)
    try:
        # 10 RCU provisioned on one partition: hot at 8 RCU/s, i.e. 80 units a window.
        record = records.table_record(
            table_id=7, billing_mode="PROVISIONED", read_capacity=10, write_capacity=10
        )
        state = NodeState(node_id="a", zone="a", engine=engine, hosted=desired_hosting([record], "a"))
        [partition] = state.hosted[7].partitions
        # Times in the recent past, so that the count (on the real monotonic clock) sees
        # three windows ended.
        base = time.monotonic() - 3 * DEFAULT_WINDOW_SECONDS - 2
        now = [base]
        plane = DataPlane(state, clock=lambda: now[0])
        hashes = [2**60, 2**61, 2**62, 2**63]
        for i in range(3 * 200):  # 200 eventually consistent GETs (0.5 RCU) a window: 10 RCU/s
            now[0] = base + i * DEFAULT_WINDOW_SECONDS / 200
            h = hashes[i % 4]
            request = pb.Request(
                op=pb.GET, key=keys.item_key(7, h, b"k", None), key_hash=h, table_id=7, partition_id="p0"
            )
            plane.plan(request)
        store = MemoryControlStore()
        await count_items(state, StatsPublisher(store))
        stats = (await store.list_partition_stats(7))[partition.partition_id]
        assert stats.hot_seconds == 3 * DEFAULT_WINDOW_SECONDS
        # Four keys of equal load: the cut falls between two of them, leaving load on both sides.
        assert stats.hot_split_hash in (2**61, 2**62) and not stats.hot_single_key
    finally:
        await engine.close()
