"""The reconcile core: one decision per observed state, table-driven, with the
invariant that the partitions always cover the hash space exactly once."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.autoadmin.partition_count import partition_count_after_update
from partita.autoadmin.reconcile import (
    MAX_ID_LENGTH,
    Action,
    CannotSplit,
    ChangePartitions,
    MarkSplit,
    Observed,
    PutState,
    RemoveTable,
    Settings,
    child_ids,
    decide,
    is_settled,
    split_for_throughput,
)
from partita.common.partition_map import Partition, PartitionMap, split_evenly
from partita.control.model import (
    KeyElement,
    NodeRecord,
    PartitionStats,
    Revision,
    SplitParent,
    TableSpec,
    TableState,
)

NODES = [NodeRecord(f"storage-{z}", z, f"127.0.0.1:{i}") for i, z in enumerate("abc")]
SETTINGS = Settings(on_demand_partitions=4)


def spec(**changes: object) -> TableSpec:
    base = TableSpec(
        name="Orders",
        table_id=77,
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PROVISIONED",
        read_capacity=0,
        write_capacity=3200,
        created_at=1.0,
        revision=Revision("5"),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def state(phase: str = "ACTIVE", generation: int = 1, table_id: int = 77) -> TableState:
    return TableState("Orders", table_id, phase, generation, Revision("9"))  # type: ignore[arg-type]


def placed(s: TableSpec) -> ChangePartitions:
    [action, _] = decide(Observed(s, None, (), frozenset()), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    return action


def all_ready(action: ChangePartitions) -> frozenset[tuple[str, str]]:
    return frozenset((p.partition_id, n) for p in action.put for n in p.replicas)


def test_a_new_spec_is_placed_then_recorded_as_creating() -> None:
    actions = decide(Observed(spec(), None, (), frozenset()), NODES, SETTINGS)
    assert isinstance(actions[0], ChangePartitions)
    # The seed's worked example: 3200 WCU -> 4 partitions of 800 WCU.
    assert len(actions[0].put) == 4
    PartitionMap(actions[0].put)  # complete and contiguous, or this raises
    assert all(len(p.replicas) == 1 and p.leader == p.replicas[0] for p in actions[0].put)
    assert actions[1] == PutState(TableState("Orders", 77, "CREATING", 1))


def test_placement_is_the_same_when_decided_again() -> None:
    assert placed(spec()) == placed(spec())


@pytest.mark.parametrize(
    ("billing", "rcu", "wcu", "count"),
    [("PAY_PER_REQUEST", 0, 0, 4), ("PROVISIONED", 1, 1, 1), ("PROVISIONED", 3000, 1000, 2)],
)
def test_the_partition_count_follows_throughput(billing: str, rcu: int, wcu: int, count: int) -> None:
    assert len(placed(spec(billing_mode=billing, read_capacity=rcu, write_capacity=wcu)).put) == count


@pytest.mark.parametrize(
    ("billing", "rcu", "wcu", "warm", "count"),
    [
        ("PROVISIONED", 5, 5, (1000, 1200), 2),  # LocalStack's recorded table: ceil(1000/3000 + 1.2)
        ("PAY_PER_REQUEST", 0, 0, (30000, 10000), 20),  # ceil(10 + 10), past the on-demand default 4
        ("PAY_PER_REQUEST", 0, 0, (1, 1), 4),  # under the default: the default
        ("PROVISIONED", 3000, 1000, (1, 1), 2),  # under the provisioned rate: the provisioned count
        ("PROVISIONED", 2000, 1, (0, 900), 2),  # each kind at its higher rate: 2000 RCU and 900 WCU
    ],
)
def test_a_new_tables_partitions_are_enough_for_its_warm_throughput(
    billing: str, rcu: int, wcu: int, warm: tuple[int, int], count: int
) -> None:
    asked = spec(billing_mode=billing, read_capacity=rcu, write_capacity=wcu, warm_throughput=warm)
    assert len(placed(asked).put) == count


def test_raising_an_on_demand_tables_warm_throughput_splits_it_and_completes_the_update() -> None:
    on_demand = spec(billing_mode="PAY_PER_REQUEST", write_capacity=0)
    parts = placed(on_demand).put
    warmed = dataclasses.replace(on_demand, warm_throughput=(0, 6000), generation=2)
    [action] = decide(Observed(warmed, state("ACTIVE", 1), parts, frozenset()), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions) and len(action.put) == 8  # 4 -> 8 for 6,000 WCU
    layout = split_for_throughput(parts, warmed)
    [done] = decide(
        Observed(warmed, state("ACTIVE", 1), layout, all_ready(ChangePartitions(77, layout))), NODES, SETTINGS
    )
    assert done == PutState(TableState("Orders", 77, "ACTIVE", 2, Revision("9")))


def test_nothing_is_placed_while_no_storage_node_is_registered() -> None:
    assert decide(Observed(spec(), None, (), frozenset()), [], SETTINGS) == []


def test_partitions_placed_by_a_pass_that_stopped_get_their_state_next() -> None:
    parts = placed(spec()).put
    actions = decide(Observed(spec(), None, parts, frozenset()), NODES, SETTINGS)
    assert actions == [PutState(TableState("Orders", 77, "CREATING", 1))]


def test_a_state_left_by_an_older_incarnation_is_replaced_against_its_revision() -> None:
    old = state(table_id=5)
    actions = decide(Observed(spec(), old, (), frozenset()), NODES, SETTINGS)
    assert actions[-1] == PutState(TableState("Orders", 77, "CREATING", 1, Revision("9")))


def test_creating_becomes_active_only_when_every_replica_is_ready() -> None:
    parts = placed(spec())
    ready = all_ready(parts)
    some = frozenset(list(ready)[:-1])
    assert decide(Observed(spec(), state("CREATING"), parts.put, some), NODES, SETTINGS) == []
    [action] = decide(Observed(spec(), state("CREATING"), parts.put, ready), NODES, SETTINGS)
    assert action == PutState(TableState("Orders", 77, "ACTIVE", 1, Revision("9")))


def test_a_settled_table_gets_no_action() -> None:
    parts = placed(spec())
    observed = Observed(spec(), state("ACTIVE", 1), parts.put, all_ready(parts))
    assert decide(observed, NODES, SETTINGS) == []
    assert is_settled(spec(), state("ACTIVE", 1))
    assert not is_settled(spec(generation=2), state("ACTIVE", 1))
    assert not is_settled(spec(deleting=True), state("ACTIVE", 1))
    assert not is_settled(spec(), state("CREATING", 1))


def test_more_throughput_splits_every_partition_and_keeps_replicas() -> None:
    # The seed's example: 4 partitions at 800 WCU; 6000 WCU needs 6, so each splits (8 of 750).
    parts = placed(spec()).put
    raised = spec(write_capacity=6000, generation=2)
    [action] = decide(Observed(raised, state("ACTIVE", 1), parts, frozenset()), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    assert sorted(action.remove) == sorted(p.partition_id for p in parts)
    assert len(action.put) == 8
    PartitionMap(action.put)
    by_parent = {p.partition_id: p for p in parts}
    for child in action.put:
        parent = by_parent[child.partition_id.rsplit("-", 1)[0]]
        assert parent.start <= child.start < child.end <= parent.end
        assert (child.replicas, child.leader) == (parent.replicas, parent.leader)


def test_after_the_split_the_table_is_active_at_the_new_generation_once_served() -> None:
    raised = spec(write_capacity=6000, generation=2)
    layout = split_for_throughput(placed(spec()).put, raised)
    children = ChangePartitions(77, layout)
    assert decide(Observed(raised, state("ACTIVE", 1), layout, frozenset()), NODES, SETTINGS) == []
    [action] = decide(Observed(raised, state("ACTIVE", 1), layout, all_ready(children)), NODES, SETTINGS)
    assert action == PutState(TableState("Orders", 77, "ACTIVE", 2, Revision("9")))


@pytest.mark.parametrize(
    "changes",
    [
        {"write_capacity": 10, "read_capacity": 10},  # a decrease never merges
        {"billing_mode": "PAY_PER_REQUEST", "read_capacity": 0, "write_capacity": 0},
    ],
)
def test_an_update_that_needs_no_split_completes_once_served(changes: dict[str, object]) -> None:
    parts = placed(spec())
    updated = spec(generation=2, **changes)
    [action] = decide(Observed(updated, state("ACTIVE", 1), parts.put, all_ready(parts)), NODES, SETTINGS)
    assert action == PutState(TableState("Orders", 77, "ACTIVE", 2, Revision("9")))


def test_an_interrupted_split_round_is_finished_before_anything_else() -> None:
    parts = placed(spec()).put
    raised = spec(write_capacity=6000, generation=2)
    full = split_for_throughput(parts, raised)
    # Two of four parents were split when the driver died.
    half = tuple(sorted([*full[:4], *parts[2:]], key=lambda p: p.start))
    PartitionMap(half)
    assert split_for_throughput(half, raised) == full


def test_split_rounds_repeat_until_enough() -> None:
    one = placed(spec(read_capacity=1, write_capacity=1)).put
    layout = split_for_throughput(one, spec(read_capacity=1, write_capacity=3500))
    assert len(layout) == 4
    PartitionMap(layout)


@pytest.mark.parametrize(
    ("ready", "expected"),
    [
        (frozenset({("p", "storage-a")}), []),
        (frozenset(), "remove"),
    ],
)
def test_a_deleting_table_is_removed_once_no_replica_serves_it(
    ready: frozenset[tuple[str, str]], expected: list[Action] | str
) -> None:
    doomed = spec(deleting=True)
    actions = decide(Observed(doomed, state(), placed(spec()).put, ready), NODES, SETTINGS)
    assert actions == ([RemoveTable(doomed)] if expected == "remove" else expected)


@given(st.integers(1, 40), st.integers(0, 40000), st.integers(0, 40000))
def test_a_split_of_an_even_layout_is_complete_and_as_large_as_doubling_says(
    n: int, rcu: int, wcu: int
) -> None:
    even = tuple(Partition(f"p{i}", s, e, ("a",), "a") for i, (s, e) in enumerate(split_evenly(n)))
    layout = split_for_throughput(even, spec(read_capacity=rcu, write_capacity=wcu))
    PartitionMap(layout)
    assert len(layout) == partition_count_after_update(n, rcu, wcu)
    assert len({p.partition_id for p in layout}) == len(layout)


def test_split_children_start_with_their_share_of_the_parents_last_count() -> None:
    parts = placed(spec()).put
    counted = {p.partition_id: PartitionStats(1001, 100_001, 5.0) for p in parts[:3]}  # the 4th never counted
    raised = spec(write_capacity=6000, generation=2)
    observed = Observed(raised, state("ACTIVE", 1), parts, frozenset(), counted)
    [action] = decide(observed, NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    estimates = dict(action.stats)
    assert len(estimates) == 6  # two children for each counted parent
    for parent in parts[:3]:
        halves = [estimates[f"{parent.partition_id}-{i}"] for i in (0, 1)]
        assert sum(h.item_count for h in halves) in (1000, 1001)  # floors of the two shares
        assert sum(h.size_bytes for h in halves) in (100_000, 100_001)
        assert all(h.measured_at == 5.0 for h in halves)
        assert all(h.parent == SplitParent(parent.partition_id, 1001, 100_001) for h in halves)
    assert not any(pid.startswith(parts[3].partition_id) for pid in estimates)


def replicated(s: TableSpec) -> tuple[Partition, ...]:
    """`s`'s placement with three replicas per partition (RF=3, the local default)."""
    members = tuple(n.node_id for n in NODES)
    return tuple(dataclasses.replace(p, replicas=members, leader=members[0]) for p in placed(s).put)


def test_a_throughput_raise_keeps_replicated_partitions_whole_and_completes_the_update() -> None:
    # Splitting a replicated partition in place would start its children's groups from
    # whatever each replica had applied: a lagging one could lose acknowledged writes.
    parts = replicated(spec())
    raised = spec(write_capacity=6000, generation=2)
    ready = frozenset((p.partition_id, n) for p in parts for n in p.replicas)
    actions = decide(Observed(raised, state("ACTIVE", 1), parts, ready), NODES, SETTINGS)
    assert actions[0] == PutState(TableState("Orders", 77, "ACTIVE", 2, Revision("9")))
    assert actions[1:] == [CannotSplit(77, p.partition_id, "replicated") for p in parts]
    assert split_for_throughput(parts, raised) == parts


def test_a_throughput_raise_splits_single_replica_partitions_beside_replicated_ones() -> None:
    parts = placed(spec()).put
    mixed = (replicated(spec())[0], *parts[1:])
    raised = spec(write_capacity=6000, generation=2)
    [action] = decide(Observed(raised, state("ACTIVE", 1), mixed, frozenset()), NODES, SETTINGS)
    assert isinstance(action, ChangePartitions)
    assert mixed[0].partition_id not in action.remove and len(action.remove) == 3
    layout = split_for_throughput(mixed, raised)
    PartitionMap(layout)
    assert mixed[0] in layout and len(layout) == 7
    # The next pass finds nothing more to split: the update completes once served.
    served = frozenset((p.partition_id, n) for p in layout for n in p.replicas)
    actions = decide(Observed(raised, state("ACTIVE", 1), layout, served), NODES, SETTINGS)
    assert actions == [
        PutState(TableState("Orders", 77, "ACTIVE", 2, Revision("9"))),
        CannotSplit(77, mixed[0].partition_id, "replicated"),
    ]


GROUPS = dataclasses.replace(SETTINGS, split_replicated=True)


def test_with_group_splits_a_throughput_raise_marks_replicated_partitions_at_their_middle() -> None:
    parts = replicated(spec())
    raised = spec(write_capacity=6000, generation=2)
    [action] = decide(Observed(raised, state("ACTIVE", 1), parts, frozenset()), NODES, GROUPS)
    assert isinstance(action, MarkSplit) and action.reason == "throughput_raised"
    assert [p.partition_id for p in action.partitions] == [p.partition_id for p in parts]
    assert all(
        p.split_at == p.start + (p.end - p.start) // 2 and p.split_index == 0 for p in action.partitions
    )


def test_a_single_replica_being_raised_to_a_group_is_split_at_its_log_index_not_in_place() -> None:
    """One member, but a replication factor above 1 (Kubernetes: a Table raised from 1,
    its leader still adding members): it runs a group, whose log a cut in place would
    leave spanning both halves."""
    raising = tuple(dataclasses.replace(p, replication_factor=3) for p in placed(spec()).put)
    assert all(len(p.replicas) == 1 for p in raising)
    raised = spec(write_capacity=6000, generation=2)
    [action] = decide(Observed(raised, state("ACTIVE", 1), raising, frozenset()), NODES, GROUPS)
    assert isinstance(action, MarkSplit) and len(action.partitions) == len(raising)


@pytest.mark.parametrize(
    "lowered",
    [
        {"grouped": True},  # a group lowered back to one member (Kubernetes)
        {"parent": "orders-0", "parent_index": 42},  # a child of a split at a log index
    ],
    ids=["lowered", "split-child"],
)
def test_a_group_of_one_member_is_split_at_its_log_index_not_in_place(lowered: dict[str, object]) -> None:
    ones = tuple(
        dataclasses.replace(p, replication_factor=1, **lowered)  # type: ignore[arg-type]
        for p in placed(spec()).put
    )
    assert all(len(p.replicas) == 1 for p in ones)
    raised = spec(write_capacity=6000, generation=2)
    [action] = decide(Observed(raised, state("ACTIVE", 1), ones, frozenset()), NODES, GROUPS)
    assert isinstance(action, MarkSplit) and len(action.partitions) == len(ones)
    single = tuple(dataclasses.replace(p, replication_factor=1) for p in placed(spec()).put)
    [cut] = decide(Observed(raised, state("ACTIVE", 1), single, frozenset()), NODES, GROUPS)
    assert isinstance(cut, ChangePartitions)  # a single replica is still cut in place


def test_a_marked_split_waits_for_its_leader_then_children_name_the_parent_and_index() -> None:
    parts = list(replicated(spec()))
    raised = spec(write_capacity=6000, generation=2)
    marked = dataclasses.replace(parts[0], split_at=parts[0].start + 10)
    waiting = Observed(raised, state("ACTIVE", 1), (marked, *parts[1:]), frozenset())
    assert decide(waiting, NODES, GROUPS) == []  # the SPLIT entry is not committed yet
    committed = dataclasses.replace(marked, split_index=42)
    [action] = decide(
        Observed(raised, state("ACTIVE", 1), (committed, *parts[1:]), frozenset()), NODES, GROUPS
    )
    assert isinstance(action, ChangePartitions) and action.reason == "split_committed"
    assert action.remove == (marked.partition_id,)
    left, right = action.put
    assert (left.start, left.end, right.start, right.end) == (
        marked.start,
        marked.start + 10,
        marked.start + 10,
        marked.end,
    )
    assert {(c.parent, c.parent_index, c.replicas) for c in action.put} == {
        (marked.partition_id, 42, marked.replicas)
    }
    PartitionMap([*action.put, *parts[1:]])


def test_children_of_a_split_estimate_start_from_the_count_it_was_estimated_from() -> None:
    # A throughput raise marks a child before its leader has counted it: its children's
    # estimates name the last real count (the grandparent's), so a describe subtracts
    # their counted relatives from that count.
    parts = list(replicated(spec()))
    root = SplitParent("root", 40, 4000)
    committed = dataclasses.replace(parts[0], split_at=_middle_of(parts[0]), split_index=9)
    stats = {parts[0].partition_id: PartitionStats(20, 2000, 1.0, estimated=True, parent=root)}
    observed = Observed(
        spec(write_capacity=6000, generation=2),
        state("ACTIVE", 1),
        (committed, *parts[1:]),
        frozenset(),
        stats,
    )
    [action] = decide(observed, NODES, GROUPS)
    assert isinstance(action, ChangePartitions)
    assert [(pid, s.item_count, s.parent) for pid, s in action.stats] == [
        (f"{parts[0].partition_id}-0", 10, root),
        (f"{parts[0].partition_id}-1", 10, root),
    ]


def _middle_of(p: Partition) -> int:
    return p.start + (p.end - p.start) // 2


def test_with_group_splits_a_too_large_replicated_partition_is_marked_at_its_median() -> None:
    parts = replicated(spec())
    counted = {parts[0].partition_id: PartitionStats(10, 2000, 1.0, split_hash=parts[0].start + 99)}
    ready = frozenset((p.partition_id, n) for p in parts for n in p.replicas)
    settings = dataclasses.replace(GROUPS, split_size_bytes=1000)
    actions = decide(Observed(spec(), state("ACTIVE", 1), parts, ready, counted), NODES, settings)
    assert actions == [
        MarkSplit(77, (dataclasses.replace(parts[0], split_at=parts[0].start + 99),), "size_exceeded")
    ]


def test_split_fields_survive_the_control_store_encoding() -> None:
    from partita.control.model import partition_from_json, partition_to_json

    child = Partition(
        "c", 5, 2**64, ("a", "b"), "a", split_at=2**63 + 1, split_index=7, parent="p", parent_index=9
    )
    assert partition_from_json(partition_to_json(child)) == child


def test_split_children_ids_stay_within_a_resource_names_length_however_often_split() -> None:
    assert child_ids("music-0000000000000000") == ("music-0000000000000000-0", "music-0000000000000000-1")
    seen = set()
    pid = "t" * 236 + "-0000000000000000"  # the longest Table resource name, as partition_name makes
    for depth in range(40):
        left, right = child_ids(pid)
        assert len(left) <= MAX_ID_LENGTH and len(right) <= MAX_ID_LENGTH, depth
        assert left != right and not {left, right} & seen
        assert child_ids(pid) == (left, right)  # the same parent, the same names
        seen |= {left, right}
        pid = left if depth % 2 else right
