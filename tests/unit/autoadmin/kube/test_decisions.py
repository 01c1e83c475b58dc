"""The operator's pure decisions beyond the reconcile core (placement over zones,
status and conditions), table-driven."""

from __future__ import annotations

import pytest

from partita.autoadmin.kube import decisions
from partita.autoadmin.kube.decisions import Member, TableObservation
from partita.autoadmin.kube.fleet import Fleet

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


@pytest.mark.parametrize(
    ("members", "reports", "deleting", "expected"),
    [
        (("x", "y"), {"x": "Serving", "y": "Serving"}, False, "Serving"),
        (("x", "y"), {"x": "Serving"}, False, "Pending"),
        (("x", "y"), {"x": "Serving", "y": "CatchingUp"}, False, "Pending"),
        (("x", "y"), {"x": "Serving", "y": "Failed"}, False, "Degraded"),
        # three members: a majority serving is a group that commits, with less redundancy
        (("x", "y", "z"), {"x": "Serving", "y": "Serving"}, False, "Degraded"),
        (("x", "y", "z"), {"x": "Serving", "y": "Serving", "z": "CatchingUp"}, False, "Degraded"),
        (("x", "y", "z"), {"x": "Serving", "y": "CatchingUp"}, False, "Pending"),
        (("x",), {"x": "Serving"}, True, "Deleting"),
    ],
)
def test_partition_state_from_member_reports(
    members: tuple[str, ...], reports: dict[str, decisions.MemberState], deleting: bool, expected: str
) -> None:
    got = decisions.partition_state([Member(n, "a") for n in members], reports, deleting)
    assert got == expected


def test_table_conditions_say_why() -> None:
    obs = TableObservation("ACTIVE", False, 2, ("Serving", "Degraded"), problem=None)
    conds = {c.type: c for c in decisions.table_conditions(obs, "ACTIVE")}
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
