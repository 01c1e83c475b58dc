"""Splits for size: the reconcile core cuts a settled table's partition that grew past
the split size, at the median key hash its leader reported (the middle of its range if
none), keeps the children on the parent's replicas, and refuses cuts that cannot help.
Table-driven; every resulting layout must still cover the hash space exactly once."""

from __future__ import annotations

import dataclasses

import pytest

from partita.autoadmin.reconcile import (
    CannotSplit,
    ChangePartitions,
    Observed,
    PutState,
    Settings,
    decide,
)
from partita.autoadmin.splits import due, size_cuts
from partita.common.partition_map import HASH_SPACE, Partition, PartitionMap
from partita.control.model import PartitionStats, TableState
from tests.unit.autoadmin.test_reconcile import NODES, spec, state

LIMIT = 1000
SETTINGS = Settings(on_demand_partitions=4, split_size_bytes=LIMIT)
HALF = HASH_SPACE // 2
# A settled two-partition table, both on storage-a.
P0 = Partition("t-0000", 0, HALF, ("storage-a",), "storage-a")
P1 = Partition("t-0001", HALF, HASH_SPACE, ("storage-a",), "storage-a")
READY = frozenset({("t-0000", "storage-a"), ("t-0001", "storage-a")})


def counted(size: int, split_hash: int | None = None, **flags: bool) -> PartitionStats:
    return PartitionStats(size // 100, size, 50.0, split_hash, **flags)


def settled(stats: dict[str, PartitionStats], ready: frozenset[tuple[str, str]] = READY) -> Observed:
    return Observed(spec(), state("ACTIVE", 1), (P0, P1), ready, stats)


@pytest.mark.parametrize(
    ("case", "stats", "cut"),
    [
        ("at the reported median", {"t-0001": counted(LIMIT + 1, HALF + 12345)}, HALF + 12345),
        ("the middle when no median was reported", {"t-0001": counted(5000)}, HALF + HALF // 2),
        # A split hash outside the range (never expected) is ignored, not trusted.
        ("the middle for a split hash outside the range", {"t-0001": counted(5000, 7)}, HALF + HALF // 2),
    ],
)
def test_a_partition_past_the_split_size_is_cut_in_two_on_its_replicas(
    case: str, stats: dict[str, PartitionStats], cut: int
) -> None:
    [action] = decide(settled(stats), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions), case
    assert action.reason == "size_exceeded"
    assert action.remove == ("t-0001",)
    left, right = action.put
    assert (left.start, left.end, right.start, right.end) == (HALF, cut, cut, HASH_SPACE)
    assert {left.partition_id, right.partition_id} == {"t-0001-0", "t-0001-1"}
    assert all((c.replicas, c.leader) == (P1.replicas, P1.leader) for c in action.put)
    PartitionMap([P0, *action.put])  # complete and contiguous, or this raises


@pytest.mark.parametrize(
    ("case", "stats"),
    [
        ("nothing counted yet", {}),
        ("at the limit exactly", {"t-0000": counted(LIMIT, 5)}),
        ("an estimate past the limit", {"t-0000": counted(5 * LIMIT, 5, estimated=True)}),
        ("a count of a partition that is gone", {"t-0000-1": counted(5 * LIMIT, 5)}),
    ],
)
def test_no_split_below_the_limit_or_on_an_estimate(case: str, stats: dict[str, PartitionStats]) -> None:
    assert decide(settled(stats), NODES, SETTINGS) == [], case


def test_a_partition_of_one_key_is_kept_whole_and_said_so() -> None:
    stats = {"t-0000": counted(5 * LIMIT, single_key=True), "t-0001": counted(5 * LIMIT, HALF + 9)}
    actions = decide(settled(stats), NODES, SETTINGS)
    assert isinstance(actions[0], ChangePartitions) and actions[0].remove == ("t-0001",)
    assert actions[1:] == [CannotSplit(77, "t-0000", "single_key")]


def test_a_range_one_hash_wide_cannot_be_cut() -> None:
    narrow = Partition("n", 41, 42, ("a",), "a")
    cuts, blocked = size_cuts([narrow], {"n": counted(5 * LIMIT)}, LIMIT)
    assert cuts == [] and [b.obstacle for b in blocked] == ["too_narrow"]


def test_both_partitions_past_the_limit_split_in_one_change() -> None:
    stats = {"t-0000": counted(2 * LIMIT, 99), "t-0001": counted(2 * LIMIT, HALF + 99)}
    [action] = decide(settled(stats), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    assert sorted(action.remove) == ["t-0000", "t-0001"]
    assert len(PartitionMap(action.put)) == 4


def test_no_size_split_while_a_replica_is_not_serving_or_the_table_is_not_settled() -> None:
    big = {"t-0001": counted(5 * LIMIT, HALF + 1)}
    assert decide(settled(big, READY - {("t-0000", "storage-a")}), NODES, SETTINGS) == []
    creating = dataclasses.replace(settled(big), state=state("CREATING", 1))
    assert decide(creating, NODES, SETTINGS) == [
        PutState(TableState("Orders", 77, "ACTIVE", 1, state().revision))
    ]


def test_children_are_estimated_at_half_the_parent_at_a_median_cut_and_not_split_again() -> None:
    parent = counted(3001, HALF + 5)
    [action] = decide(settled({"t-0001": parent}), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    estimates = dict(action.stats)
    left, right = estimates["t-0001-0"], estimates["t-0001-1"]
    assert left.estimated and right.estimated
    assert left.size_bytes + right.size_bytes == 3001 and abs(left.size_bytes - right.size_bytes) <= 1
    assert left.item_count + right.item_count == parent.item_count
    assert left.split_hash is None and right.split_hash is None
    # The next pass sees the children, their estimates past the limit: no split until
    # their leaders count them.
    after = Observed(
        spec(),
        state("ACTIVE", 1),
        (P0, *action.put),
        frozenset({("t-0000", "storage-a"), ("t-0001-0", "storage-a"), ("t-0001-1", "storage-a")}),
        estimates,
    )
    assert decide(after, NODES, SETTINGS) == []


def test_a_midpoint_cut_estimates_children_by_their_share_of_the_range() -> None:
    [action] = decide(settled({"t-0001": counted(4000)}), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    assert [s.size_bytes for _, s in action.stats] == [2000, 2000]


def test_repeated_splits_keep_a_complete_layout_and_unique_ids() -> None:
    # A partition that keeps growing is split again and again, always on its replicas.
    layout = (P0, P1)
    for round_ in range(6):
        stats = {p.partition_id: counted(2 * LIMIT, p.start + (p.end - p.start) // 3) for p in layout}
        ready = frozenset((p.partition_id, "storage-a") for p in layout)
        [action] = decide(Observed(spec(), state("ACTIVE", 1), layout, ready, stats), NODES, SETTINGS)
        assert isinstance(action, ChangePartitions)
        layout = tuple(p for p in layout if p.partition_id not in action.remove) + action.put
        assert len(PartitionMap(layout)) == 2 ** (round_ + 2)
    assert len({p.partition_id for p in layout}) == len(layout)


def test_the_driver_looks_closer_only_at_a_measured_partition_past_the_limit_or_hot_long_enough() -> None:
    assert due({"a": counted(LIMIT + 1)}, LIMIT, HOT)
    assert not due({"a": counted(LIMIT)}, LIMIT, HOT)
    assert not due({"a": counted(LIMIT + 1, estimated=True)}, LIMIT, HOT)
    assert not due({}, LIMIT, HOT)
    assert due({"a": hot(HOT, 5)}, LIMIT, HOT)
    assert not due({"a": hot(HOT - 1, 5)}, LIMIT, HOT)


# --- split for consumption ---------------------------------------------------------------

HOT = 300.0  # seconds a partition must run hot


def hot(seconds: float, at: int | None, single_key: bool = False, size: int = 100) -> PartitionStats:
    return PartitionStats(1, size, 50.0, hot_seconds=seconds, hot_split_hash=at, hot_single_key=single_key)


@pytest.mark.parametrize(
    ("case", "stats", "expected"),
    [
        ("hot long enough: cut at the load's median", {"t-0001": hot(HOT, HALF + 77)}, ("cut", HALF + 77)),
        ("hot for longer", {"t-0001": hot(10 * HOT, HALF + 5)}, ("cut", HALF + 5)),
        ("hot, but not for long enough", {"t-0001": hot(HOT - 10, HALF + 77)}, None),
        ("never hot", {"t-0001": hot(0.0, None)}, None),
        # One key carries the load: its child would be as hot as the parent.
        ("one hot key", {"t-0001": hot(HOT, None, single_key=True)}, ("whole", "single_hot_key")),
        # No point to cut at: never the middle, which says nothing about the load.
        ("no distribution point", {"t-0001": hot(HOT, None)}, ("whole", "no_hot_point")),
        ("a point outside the range", {"t-0001": hot(HOT, 12)}, ("whole", "no_hot_point")),
    ],
)
def test_a_partition_hot_for_the_sustained_window_is_split_at_its_key_distribution_point(
    case: str, stats: dict[str, PartitionStats], expected: tuple[str, object] | None
) -> None:
    settings = dataclasses.replace(SETTINGS, split_hot_seconds=HOT)
    actions = decide(settled(stats), NODES, settings)
    if expected is None:
        assert actions == [], case
    elif expected[0] == "whole":
        assert actions == [CannotSplit(77, "t-0001", expected[1])], case  # type: ignore[arg-type]
    else:
        [action] = actions
        assert isinstance(action, ChangePartitions) and action.reason == "consumption_hot", case
        left, right = action.put
        assert (left.end, right.start) == (expected[1], expected[1])
        assert action.remove == ("t-0001",)
        assert all(c.replicas == P1.replicas for c in action.put)
        PartitionMap([P0, *action.put])


def test_a_partition_both_too_large_and_hot_is_cut_once_for_size() -> None:
    both = dataclasses.replace(counted(5 * LIMIT, HALF + 100), hot_seconds=HOT, hot_split_hash=HALF + 999)
    settings = dataclasses.replace(SETTINGS, split_hot_seconds=HOT)
    # t-0001 is too large and hot; t-0000 only hot: one change per reason.
    size_cut, load_cut = decide(settled({"t-0001": both, "t-0000": hot(HOT, 1234)}), NODES, settings)
    assert isinstance(size_cut, ChangePartitions) and isinstance(load_cut, ChangePartitions)
    assert (size_cut.reason, load_cut.reason) == ("size_exceeded", "consumption_hot")
    assert size_cut.remove == ("t-0001",) and size_cut.put[0].end == HALF + 100  # the data's median
    assert load_cut.remove == ("t-0000",) and load_cut.put[0].end == 1234
    PartitionMap([*size_cut.put, *load_cut.put])


def test_the_children_of_a_consumption_split_start_cool_and_are_not_split_again_at_once() -> None:
    settings = dataclasses.replace(SETTINGS, split_hot_seconds=HOT)
    [action] = decide(settled({"t-0001": hot(HOT, HALF + HALF // 4, size=800)}), NODES, settings)
    assert isinstance(action, ChangePartitions)
    estimates = dict(action.stats)
    assert all(s.estimated and s.hot_seconds == 0.0 and s.hot_split_hash is None for s in estimates.values())
    # By the range's share: a quarter of the parent's range on the left.
    assert [estimates[p.partition_id].size_bytes for p in action.put] == [200, 600]


@pytest.mark.parametrize(
    ("case", "stats"),
    [
        ("too large", {"r": counted(5 * LIMIT, HALF + 3)}),
        ("hot", {"r": hot(HOT, HALF + 3)}),
    ],
)
def test_a_replicated_partition_is_kept_whole_until_replication_can_split_a_group(
    case: str, stats: dict[str, PartitionStats]
) -> None:
    # Its children would start fresh replication groups: a replica behind on the
    # parent's committed writes would miss them for good.
    replicated = Partition("r", HALF, HASH_SPACE, ("storage-a", "storage-b", "storage-c"), "storage-a")
    ready = frozenset({("t-0000", "storage-a")} | {("r", n) for n in replicated.replicas})
    observed = Observed(spec(), state("ACTIVE", 1), (P0, replicated), ready, stats)
    settings = dataclasses.replace(SETTINGS, split_hot_seconds=HOT)
    assert decide(observed, NODES, settings) == [CannotSplit(77, "r", "replicated")], case
