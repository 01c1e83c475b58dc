"""The load-based migration core: which replica leaves a hot node, for where, and when a
move is over."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from partita.autoadmin.migration import Fleet, MigrationPolicy, fits, plan_moves
from partita.control.model import NodeLoad, NodeRecord, ReplicaLoad, ReplicaMove

NOW = 1_000.0
CAP_R, CAP_W = 1000.0, 500.0
POLICY = MigrationPolicy(above=0.8, room_below=0.6)


def node(node_id: str, zone: str) -> NodeRecord:
    return NodeRecord(node_id, zone, f"{node_id}:1")


def load(node_id: str, *replicas: tuple[int, str, float, float], at: float = NOW) -> NodeLoad:
    return NodeLoad(
        node_id, at, 10.0, CAP_R, CAP_W, tuple(ReplicaLoad(t, p, r, w) for t, p, r, w in replicas)
    )


# Two nodes in zone a, two in b, one in c; partition (1, "p0") on a1, b1, c1; (1, "p1")
# on a1, b2, c1; (2, "p0") on a2, b1, c1.
NODES = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("b2", "b"), node("c1", "c")]
MEMBERS = {
    (1, "p0"): frozenset({"a1", "b1", "c1"}),
    (1, "p1"): frozenset({"a1", "b2", "c1"}),
    (2, "p0"): frozenset({"a2", "b1", "c1"}),
}


def fleet(
    *loads: NodeLoad, moves: tuple[ReplicaMove, ...] = (), draining: frozenset[str] = frozenset()
) -> Fleet:
    return Fleet(NODES, loads, MEMBERS, moves, draining, NOW)


def test_a_hot_nodes_busiest_replica_that_fits_moves_to_a_node_of_its_zone() -> None:
    plan = plan_moves(fleet(load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 350.0, 0.0)), load("a2")), POLICY)
    assert plan.start == (ReplicaMove(1, "p0", "a1", "a2", NOW),)
    assert plan.hot == ("a1",)


def test_a_node_of_the_tables_shard_is_the_target_before_a_less_busy_one() -> None:
    # a3 is idle, a2 busier but holds (1, "p1"): the move of (1, "p0") stays within
    # table 1's shard.
    nodes = [*NODES, node("a3", "a")]
    members = {**MEMBERS, (1, "p1"): frozenset({"a2", "b2", "c1"})}
    hot = load("a1", (1, "p0", 500.0, 0.0), (2, "p9", 350.0, 0.0))
    members[(2, "p9")] = frozenset({"a1", "b1", "c1"})
    f = Fleet(nodes, (hot, load("a2", (1, "p1", 50.0, 0.0)), load("a3")), members, (), frozenset(), NOW)
    assert [(m.partition_id, m.target) for m in plan_moves(f, POLICY).start] == [("p0", "a2")]
    outside = {**members, (1, "p1"): frozenset({"a3", "b2", "c1"})}
    # Now a3 holds p1 and is busier than a2, which holds none of table 1: a3 still.
    loads = (hot, load("a2", (2, "p0", 50.0, 0.0)), load("a3", (1, "p1", 80.0, 0.0)))
    f = dataclasses.replace(f, members=outside, loads=loads)
    assert [(m.partition_id, m.target) for m in plan_moves(f, POLICY).start] == [("p0", "a3")]


def test_a_target_outside_the_shard_takes_no_other_partition_past_the_shard_bound() -> None:
    # Table 1's shard is {a1, b1, c1}; neither a2 nor a3 is in it. a2 holds table 2's p0,
    # of which b1 holds another replica: with a2 the shard would hold two of it (past
    # the bound of one), so the busier a3, whose table-3 partition the shard does not
    # reach, is the target. Without the placements (or with a looser bound) the least
    # busy, a2.
    nodes = [node("a1", "a"), node("a2", "a"), node("a3", "a"), node("b1", "b"), node("c1", "c")]
    placements = {
        1: (frozenset({"a1", "b1", "c1"}),),
        2: (frozenset({"a2", "b1", "c9"}),),
        3: (frozenset({"a3", "b9", "c9"}),),
    }
    members = {(1, "p0"): frozenset({"a1", "b1", "c1"}), (2, "p0"): placements[2][0]}
    loads = (
        load("a1", (1, "p0", 500.0, 0.0), (2, "p0", 350.0, 0.0)),
        load("a2"),
        load("a3", (3, "p0", 50.0, 0.0)),
    )
    f = Fleet(nodes, loads, members, (), frozenset(), NOW, placements=placements)
    assert [(m.partition_id, m.target) for m in plan_moves(f, POLICY).start if m.table_id == 1] == [
        ("p0", "a3")
    ]
    loose = dataclasses.replace(POLICY, max_shared=2)
    assert [(m.target) for m in plan_moves(f, loose).start if m.table_id == 1] == ["a2"]
    unread = dataclasses.replace(f, placements={})
    assert [(m.target) for m in plan_moves(unread, POLICY).start if m.table_id == 1] == ["a2"]


def test_a_replica_too_big_for_any_target_stays_and_a_smaller_one_goes() -> None:
    # p0 alone would take a2 to 0.7 of its reads (a2 carries 0.2): only p1 fits.
    plan = plan_moves(
        fleet(load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 350.0, 0.0)), load("a2", (2, "p0", 200.0, 0.0))),
        POLICY,
    )
    assert [(m.partition_id, m.target) for m in plan.start] == [("p1", "a2")]


def test_a_replica_that_would_not_relieve_the_busier_kind_stays() -> None:
    # a1 is hot with writes (450 of 500 WCU); p0's reads fit a2 but moving them leaves
    # a1 just as hot, and p1's writes do not fit.
    plan = plan_moves(fleet(load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 0.0, 450.0)), load("a2")), POLICY)
    assert plan.start == () and plan.stuck == ("a1",)


def test_a_hot_node_whose_zone_has_no_room_is_reported_stuck() -> None:
    plan = plan_moves(fleet(load("a1", (1, "p0", 900.0, 0.0)), load("a2")), POLICY)
    assert plan.start == () and plan.stuck == ("a1",)


def test_writes_count_against_the_write_capacity() -> None:
    # 450 WCU of 500 is hot although reads are idle; the target must have write room.
    plan = plan_moves(fleet(load("a1", (1, "p0", 0.0, 250.0), (1, "p1", 0.0, 200.0)), load("a2")), POLICY)
    assert [(m.partition_id, m.target) for m in plan.start] == [("p0", "a2")]
    assert not fits(ReplicaLoad(1, "p0", 0.0, 250.0), load("a2", (2, "p0", 0.0, 100.0)), 0.6)


def test_no_target_outside_the_zone_a_member_draining_or_without_a_fresh_report() -> None:
    hot_b1 = load("b1", (1, "p0", 500.0, 0.0), (2, "p0", 350.0, 0.0))
    assert [(m.source, m.target) for m in plan_moves(fleet(hot_b1, load("b2")), POLICY).start] == [
        ("b1", "b2")
    ]
    # b2, the only other node of zone b: stale, draining, or not reporting (c1 and a2 are
    # roomy but in other zones).
    assert plan_moves(fleet(hot_b1, load("b2", at=NOW - 3600)), POLICY).start == ()
    assert plan_moves(fleet(hot_b1, load("b2"), draining=frozenset({"b2"})), POLICY).start == ()
    assert plan_moves(fleet(hot_b1, load("c1"), load("a2")), POLICY).start == ()
    # (1, "p1") has a2 as a member already: a2 is never its target.
    hot_a1 = load("a1", (1, "p1", 500.0, 0.0), (1, "p0", 350.0, 0.0))
    members = {**MEMBERS, (1, "p1"): frozenset({"a1", "a2", "c1"})}
    plan = plan_moves(Fleet(NODES, (hot_a1, load("a2")), members, (), frozenset(), NOW), POLICY)
    assert [(m.partition_id, m.target) for m in plan.start] == [("p0", "a2")]


def test_a_report_is_fresh_for_three_of_its_intervals_at_least() -> None:
    hot = load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 350.0, 0.0), at=NOW - 100)
    assert plan_moves(fleet(hot, load("a2")), POLICY).hot == ()  # 100 s old, 10 s reports
    slow = dataclasses.replace(hot, interval=60.0)  # a node reporting every minute
    assert plan_moves(fleet(slow, load("a2")), POLICY).hot == ("a1",)
    # An idle node writes its empty report again only every so many intervals: five
    # minutes old, it is still a target.
    fresh_hot = dataclasses.replace(hot, measured_at=NOW)
    idle = load("a2", at=NOW - 300)
    assert [m.target for m in plan_moves(fleet(fresh_hot, idle), POLICY).start] == ["a2"]
    assert plan_moves(fleet(fresh_hot, load("a2", at=NOW - 3600)), POLICY).start == ()


def test_one_move_at_a_time_per_node_and_in_all() -> None:
    under_way = ReplicaMove(2, "p0", "b1", "b2", NOW - 5)
    hot = (
        load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 350.0, 0.0)),
        load("a2"),
        load("b1", (1, "p0", 900.0, 0.0)),
    )
    # a1's move would go to a2, free; b1 is the source of a move under way.
    plan = plan_moves(fleet(*hot, moves=(under_way,)), POLICY)
    assert [(m.source, m.target) for m in plan.start] == [("a1", "a2")]
    assert plan_moves(fleet(*hot, moves=(under_way,)), MigrationPolicy(max_in_flight=1)).start == ()
    # a2 the target of a move under way: not a target for another.
    towards_a2 = ReplicaMove(9, "p9", "x", "a2", NOW - 5)
    members = {**MEMBERS, (9, "p9"): frozenset({"x"})}
    plan = plan_moves(Fleet(NODES, hot[:2], members, (towards_a2,), frozenset(), NOW), POLICY)
    assert plan.start == () and plan.stuck == ("a1",)


def test_a_node_too_hot_for_one_move_gives_up_several_each_to_a_node_of_its_own() -> None:
    # a1 at 0.95 in ten replicas of 0.095: one move leaves it at 0.855, still hot, two at
    # 0.76. Three roomy nodes in zone a: two moves, to two of them, no third.
    nodes = [*NODES, node("a3", "a"), node("a4", "a")]
    replicas = [(7, f"p{i}", 95.0, 0.0) for i in range(10)]
    members = {**MEMBERS, **{(7, f"p{i}"): frozenset({"a1", "b1", "c1"}) for i in range(10)}}
    loads = (load("a1", *replicas), load("a2"), load("a3"), load("a4"))
    plan = plan_moves(Fleet(nodes, loads, members, (), frozenset(), NOW), POLICY)
    assert [m.source for m in plan.start] == ["a1", "a1"]
    assert len({m.target for m in plan.start}) == 2 and {m.target for m in plan.start} <= {"a2", "a3", "a4"}
    assert len({m.partition_id for m in plan.start}) == 2
    # One roomy node only: one move this check.
    plan = plan_moves(Fleet(nodes, loads[:2], members, (), frozenset(), NOW), POLICY)
    assert [(m.source, m.target) for m in plan.start] == [("a1", "a2")]
    # The fleet's bound counts them: with one move under way elsewhere and a bound of
    # two, one starts.
    elsewhere = ReplicaMove(2, "p0", "b1", "b2", NOW - 5)
    bounded = dataclasses.replace(POLICY, max_in_flight=2)
    plan = plan_moves(Fleet(nodes, loads, members, (elsewhere,), frozenset(), NOW), bounded)
    assert len(plan.start) == 1
    # While any of them is under way, a1 is no source again.
    f = Fleet(nodes, loads, members, plan.start, frozenset(), NOW)
    assert plan_moves(f, POLICY).start == ()


def test_a_node_whose_move_ended_waits_for_a_report_measured_after_it() -> None:
    hot = (load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 350.0, 0.0)), load("a2"))
    ended_at = {"a1": NOW - 5.0}
    f = Fleet(NODES, hot, MEMBERS, (), frozenset(), NOW, ended_at)
    assert plan_moves(f, POLICY).start == ()
    newer = tuple(dataclasses.replace(n, measured_at=NOW - 5.0 + n.interval) for n in hot)
    f = Fleet(NODES, newer, MEMBERS, (), frozenset(), NOW, ended_at)
    assert [m.source for m in plan_moves(f, POLICY).start] == ["a1"]


def test_a_draining_or_unregistered_hot_node_is_left_to_the_drain() -> None:
    hot = (load("a1", (1, "p0", 500.0, 0.0), (1, "p1", 350.0, 0.0)), load("a2"))
    assert plan_moves(fleet(*hot), POLICY).start  # it would move otherwise
    assert plan_moves(fleet(*hot, draining=frozenset({"a1"})), POLICY).start == ()
    gone = Fleet([n for n in NODES if n.node_id != "a1"], hot, MEMBERS, (), frozenset(), NOW)
    assert plan_moves(gone, POLICY).start == ()


def test_a_move_is_over_once_the_source_left_or_when_it_is_moot() -> None:
    def end_of(move: ReplicaMove, members: frozenset[str] | None, **kw: object) -> object:
        known = dict(MEMBERS)
        if members is None:
            known.pop((move.table_id, move.partition_id), None)
        else:
            known[(move.table_id, move.partition_id)] = members
        nodes = kw.get("nodes", NODES)
        draining = kw.get("draining", frozenset())
        f = Fleet(nodes, (), known, (move,), draining, NOW)  # type: ignore[arg-type]
        plan = plan_moves(f, POLICY)
        return plan.end[0][1] if plan.end else None

    move = ReplicaMove(1, "p0", "a1", "a2", NOW - 10)
    assert end_of(move, frozenset({"a1", "a2", "b1", "c1"})) is None  # under way
    assert end_of(move, frozenset({"a2", "b1", "c1"})) == "done"
    assert end_of(move, None) == "partition_gone"  # split or dropped
    assert end_of(move, frozenset({"b1", "c1", "x"})) == "moot"
    assert end_of(move, frozenset({"a1", "b1", "c1"}), draining=frozenset({"a2"})) == "target_gone"
    without_a2 = [n for n in NODES if n.node_id != "a2"]
    assert end_of(move, frozenset({"a1", "b1", "c1"}), nodes=without_a2) == "target_gone"
    old = ReplicaMove(1, "p0", "a1", "a2", NOW - POLICY.timeout - 1)
    assert end_of(old, frozenset({"a1", "a2", "b1", "c1"})) == "timed_out"


def test_disabled_migration_starts_nothing_but_still_ends_moves() -> None:
    done = ReplicaMove(1, "p0", "b9", "a2", NOW - 10)
    plan = plan_moves(
        fleet(load("a1", (1, "p0", 900.0, 0.0)), load("a2"), moves=(done,)), MigrationPolicy(enabled=False)
    )
    assert plan.start == () and plan.end == ((done, "moot"),) and plan.hot == ("a1",)


ZONES = ("a", "b", "c")


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    ids = [f"{z}{i}" for z in ZONES for i in range(draw(st.integers(1, 3)))]
    nodes = [NodeRecord(n, n[0], "h:1") for n in ids]
    members: dict[tuple[int, str], frozenset[str]] = {}
    loads: dict[str, list[ReplicaLoad]] = {n: [] for n in ids}
    for t in range(draw(st.integers(1, 6))):
        holders = frozenset(draw(st.sampled_from([n for n in ids if n[0] == z])) for z in ZONES)
        members[(t, "p0")] = holders
        for holder in holders:
            r = draw(st.floats(0, 900))
            w = draw(st.floats(0, 450))
            loads[holder].append(ReplicaLoad(t, "p0", r, w))
    reports = [NodeLoad(n, NOW, 10.0, CAP_R, CAP_W, tuple(rs)) for n, rs in loads.items()]
    return Fleet(nodes, reports, members, (), frozenset(), NOW)


@settings(max_examples=200, deadline=None)
@given(fleets())
def test_every_move_leaves_a_hot_node_for_a_roomy_node_of_its_zone(f: Fleet) -> None:
    plan = plan_moves(f, POLICY)
    loads = {n.node_id: n for n in f.loads}
    zones = {n.node_id: n.zone for n in f.nodes}
    assert len(plan.start) <= POLICY.max_in_flight
    targets = [m.target for m in plan.start]
    assert len(targets) == len(set(targets))  # one move per target
    assert not set(targets) & {m.source for m in plan.start}  # no node both
    for move in plan.start:
        source, target = loads[move.source], loads[move.target]
        assert source.utilisation() > POLICY.above
        assert zones[move.source] == zones[move.target]
        assert move.source in f.members[(move.table_id, move.partition_id)]
        assert move.target not in f.members[(move.table_id, move.partition_id)]
        replica = next(
            r for r in source.replicas if (r.table_id, r.partition_id) == (move.table_id, move.partition_id)
        )
        assert fits(replica, target, POLICY.room_below)
    # A node gives up no more than it needs: without all of its moves but the last, it
    # would still be hot.
    for source in {m.source for m in plan.start}:
        gone = [(m.table_id, m.partition_id) for m in plan.start if m.source == source][:-1]
        kept = tuple(r for r in loads[source].replicas if (r.table_id, r.partition_id) not in gone)
        assert dataclasses.replace(loads[source], replicas=kept).utilisation() > POLICY.above
    for stuck in plan.stuck:
        assert loads[stuck].utilisation() > POLICY.above


def _apply(f: Fleet, moves: tuple[ReplicaMove, ...]) -> Fleet:
    """The fleet once the moves are done and every node has reported again."""
    loads = {n.node_id: n for n in f.loads}
    members = dict(f.members)
    for m in moves:
        key = (m.table_id, m.partition_id)
        source, target = loads[m.source], loads[m.target]
        replica = next(r for r in source.replicas if (r.table_id, r.partition_id) == key)
        loads[m.source] = dataclasses.replace(
            source, replicas=tuple(r for r in source.replicas if r is not replica)
        )
        loads[m.target] = dataclasses.replace(target, replicas=(*target.replicas, replica))
        members[key] = (members[key] - {m.source}) | {m.target}
    return dataclasses.replace(f, loads=tuple(loads.values()), members=members)


def _excess(f: Fleet) -> float:
    return sum(max(0.0, n.utilisation() - POLICY.above) for n in f.loads)


@settings(max_examples=150, deadline=None)
@given(fleets())
def test_moves_settle_the_fleet_without_cycles(f: Fleet) -> None:
    # Each round's moves done at once: the load above the hot share only falls, no node
    # that was not hot becomes hot, no replica goes back where it came from, and the
    # rounds end (every hot node left has no room in its zone).
    seen: set[tuple[int, str, str, str]] = set()
    for _ in range(100):
        plan = plan_moves(f, POLICY)
        if not plan.start:
            break
        before_hot = {n.node_id for n in f.loads if n.utilisation() > POLICY.above}
        before = _excess(f)
        f = _apply(f, plan.start)
        assert _excess(f) < before
        assert {n.node_id for n in f.loads if n.utilisation() > POLICY.above} <= before_hot
        for m in plan.start:
            assert (m.table_id, m.partition_id, m.target, m.source) not in seen
            seen.add((m.table_id, m.partition_id, m.source, m.target))
    else:
        raise AssertionError("moves did not settle in 100 rounds")
    assert set(plan_moves(f, POLICY).stuck) == {n.node_id for n in f.loads if n.utilisation() > POLICY.above}
