"""The operator's pure decisions, table-driven."""

from __future__ import annotations

import pytest

from partita.autoadmin.kube import decisions
from partita.autoadmin.kube.decisions import Member, PartitionPlan, TableObservation, TableSpec
from partita.autoadmin.kube.fleet import Fleet

GB = 1000**3


def _provisioned(rcu: int, wcu: int) -> TableSpec:
    return TableSpec("t", "PROVISIONED", rcu, wcu)


@pytest.mark.parametrize(
    ("spec", "current", "size", "expected"),
    [
        (TableSpec("t"), 0, 0, 4),  # on demand: the configured start
        (_provisioned(1, 1), 0, 0, 1),
        (_provisioned(3000, 1000), 0, 0, 2),
        (_provisioned(1, 3200), 0, 0, 4),  # the seed's example: 3200 WCU -> 4 partitions
        (_provisioned(1, 6000), 4, 0, 8),  # ... then 6000 WCU -> every partition splits: 8
        (_provisioned(1, 100), 8, 0, 8),  # a decrease never merges
        (TableSpec("t"), 4, 0, 4),  # on demand: throughput never splits
        (TableSpec("t"), 4, 45 * GB, 8),  # 45 GB needs 5 partitions of 10 GB: doubling gives 8
        (_provisioned(1, 1), 0, 10 * GB, 1),  # exactly full still fits
        (_provisioned(1, 1), 1, 10 * GB + 1, 2),
    ],
)
def test_partition_count_follows_throughput_then_size(
    spec: TableSpec, current: int, size: int, expected: int
) -> None:
    assert decisions.desired_partition_count(spec, current, size, on_demand_default=4) == expected


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 8, 100])
def test_initial_ranges_tile_the_hash_space(count: int) -> None:
    ranges = decisions.initial_ranges(count)
    assert len(ranges) == count
    assert ranges[0][0] == 0 and ranges[-1][1] == 2**64 - 1
    assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(count - 1))
    widths = {last - start for start, last in ranges}
    assert max(widths) - min(widths) <= 1


def test_split_halves_a_range_and_keeps_its_members() -> None:
    members = (Member("n1", "a"),)
    low, high = decisions.split(PartitionPlan(0, 2**64 - 1, members))
    assert (low.start, low.last, high.start, high.last) == (0, 2**63 - 1, 2**63, 2**64 - 1)
    assert low.members == high.members == members
    with pytest.raises(ValueError, match="cannot split"):
        decisions.split(PartitionPlan(5, 5, members))


def test_grow_finishes_a_half_done_split_instead_of_splitting_again() -> None:
    m = (Member("n1", "a"),)
    quarters = [PartitionPlan(s, e, m) for s, e in decisions.initial_ranges(4)]
    half_done = [*decisions.split(quarters[0]), *decisions.split(quarters[1]), quarters[2], quarters[3]]
    grown = decisions.grow(half_done, 8)
    assert [(p.start, p.last) for p in grown] == decisions.initial_ranges(8)


FLEET = Fleet(release="r", namespace="ns", image="i", zones=("a", "b", "c"), replicas_per_zone=3)


@pytest.mark.parametrize(("rf", "zones"), [(1, 1), (2, 2), (3, 3), (5, 3)])
def test_placement_puts_each_replica_of_a_partition_in_a_different_zone(rf: int, zones: int) -> None:
    placed = decisions.place(16, FLEET.nodes(), rf, seed=7)
    assert len(placed) == 16
    for members in placed:
        assert len(members) == zones
        assert len({m.zone for m in members}) == zones
        assert len({m.node for m in members}) == zones
        assert all(m.node.startswith(f"r-storage-{m.zone}-") for m in members)


def test_placement_spreads_partitions_over_the_nodes_of_each_zone() -> None:
    placed = decisions.place(9, FLEET.nodes(), 3, seed=1)
    for zone in FLEET.zones:
        used = [m.node for members in placed for m in members if m.zone == zone]
        assert sorted(set(used)) == [f"r-storage-{zone}-{i}" for i in range(3)]
        assert all(used.count(n) == 3 for n in set(used))


def test_placement_rotates_the_first_zone_with_the_table_seed() -> None:
    firsts = {decisions.place(1, FLEET.nodes(), 1, seed=s)[0][0].zone for s in range(3)}
    assert firsts == {"a", "b", "c"}


def test_plan_partitions_places_new_tables_and_splits_existing_ones() -> None:
    new = decisions.plan_partitions([], 2, FLEET.nodes(), 3, seed=0)
    assert [(p.start, p.last) for p in new] == decisions.initial_ranges(2)
    grown = decisions.plan_partitions(new, 4, FLEET.nodes(), 3, seed=0)
    assert [p.members for p in grown] == [new[0].members, new[0].members, new[1].members, new[1].members]


@pytest.mark.parametrize(
    ("members", "reports", "deleting", "expected"),
    [
        (("x", "y"), {"x": "Serving", "y": "Serving"}, False, "Serving"),
        (("x", "y"), {"x": "Serving"}, False, "Pending"),
        (("x", "y"), {"x": "Serving", "y": "CatchingUp"}, False, "Pending"),
        (("x", "y"), {"x": "Serving", "y": "Failed"}, False, "Degraded"),
        (("x",), {"x": "Serving"}, True, "Deleting"),
    ],
)
def test_partition_state_from_member_reports(
    members: tuple[str, ...], reports: dict[str, decisions.MemberState], deleting: bool, expected: str
) -> None:
    got = decisions.partition_state([Member(n, "a") for n in members], reports, deleting)
    assert got == expected


@pytest.mark.parametrize(
    ("previous", "deleting", "wanted", "states", "expected"),
    [
        (None, False, 2, (), "CREATING"),
        (None, False, 2, ("Serving", "Pending"), "CREATING"),
        ("CREATING", False, 2, ("Serving", "Serving"), "ACTIVE"),
        ("ACTIVE", False, 4, ("Serving", "Serving", "Pending", "Pending"), "UPDATING"),
        ("UPDATING", False, 4, ("Serving",) * 4, "ACTIVE"),
        ("ACTIVE", False, 2, ("Serving", "Degraded"), "ACTIVE"),  # a degraded partition still serves
        ("ACTIVE", True, 0, ("Deleting",), "DELETING"),
    ],
)
def test_table_status_follows_dynamodb_phases(
    previous: str | None,
    deleting: bool,
    wanted: int,
    states: tuple[decisions.PartitionState, ...],
    expected: str,
) -> None:
    obs = TableObservation(previous, deleting, wanted, states)
    assert decisions.table_status(obs) == expected


def test_table_conditions_say_why() -> None:
    obs = TableObservation("ACTIVE", False, 2, ("Serving", "Degraded"), problem=None)
    conds = {c.type: c for c in decisions.table_conditions(obs, decisions.table_status(obs))}
    assert (conds["Available"].status, conds["Available"].reason) == (True, "AllPartitionsServing")
    assert (conds["Progressing"].status, conds["Progressing"].reason) == (False, "Reconciled")
    assert (conds["Degraded"].status, conds["Degraded"].reason) == (True, "PartitionsDegraded")
    problem = TableObservation(None, False, 1, ("Pending",), problem=("NotEnoughZones", "rf 3, 1 zone"))
    conds = {c.type: c for c in decisions.table_conditions(problem, "CREATING")}
    assert (conds["Degraded"].status, conds["Degraded"].reason) == (True, "NotEnoughZones")
    assert (conds["Progressing"].status, conds["Progressing"].reason) == (True, "CreatingPartitions")


def test_condition_transition_time_moves_only_when_the_status_changes() -> None:
    cond = decisions.Condition("Available", False, "NotReady", "0 of 1")
    first = decisions.render_conditions([cond], [], 1, "2026-01-01T00:00:00Z")
    same = decisions.render_conditions([cond], first, 2, "2026-01-02T00:00:00Z")
    assert same[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z" and same[0]["observedGeneration"] == 2
    flipped = decisions.render_conditions(
        [decisions.Condition("Available", True, "AllPartitionsServing", "1 of 1")],
        same,
        2,
        "2026-01-03T00:00:00Z",
    )
    assert flipped[0]["lastTransitionTime"] == "2026-01-03T00:00:00Z" and flipped[0]["status"] == "True"


def test_table_spec_reads_the_crd_fields_with_their_defaults() -> None:
    spec = TableSpec.from_spec(
        {
            "tableName": "Music",
            "billingMode": "PROVISIONED",
            "provisionedThroughput": {"readCapacityUnits": 5, "writeCapacityUnits": 7},
            "deletionProtectionEnabled": True,
        }
    )
    assert spec == TableSpec("Music", "PROVISIONED", 5, 7, 3, True)
    assert TableSpec.from_spec({"tableName": "X"}) == TableSpec("X")
