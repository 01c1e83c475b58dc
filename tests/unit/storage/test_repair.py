"""The repair policy's decisions (pure, table-driven): which one membership change a
group's leader makes, from what it knows."""

from __future__ import annotations

import dataclasses

import pytest

from partita.common.partition_map import Partition
from partita.storage.repair import (
    ChangeKind,
    GroupView,
    MembershipChange,
    RepairConfig,
    down_members,
    next_change,
    partition_record,
    replication_config,
    serving,
)
from partita.storage.replication.types import Role

F, L = Role.FULL, Role.LOG
ZONES = {"a": "za", "b": "zb", "c": "zc", "d": "zd", "e": "ze", "a2": "za"}
CONFIG = RepairConfig(down_after=3.0, full_replicas=3, catch_up_slack=10)


def view(
    members: dict[str, Role],
    down: set[str] = frozenset(),
    candidates: list[str] = (),
    match: dict[str, int] | None = None,
    commit: int = 100,
) -> GroupView:  # type: ignore[assignment]
    return GroupView(
        leader="a",
        members=members,
        commit=commit,
        match=match if match is not None else {n: commit for n in members if n != "a"},
        down=frozenset(down),
        candidates=[(n, ZONES[n]) for n in candidates],
        zones=ZONES,
    )


ADD, REMOVE = ChangeKind.ADD, ChangeKind.REMOVE


@pytest.mark.parametrize(
    ("case", "group", "expected"),
    [
        ("healthy group: nothing", view({"a": F, "b": F, "c": F}, candidates=["d"]), None),
        (
            "a dead member and no node outside the group: nothing to do",
            view({"a": F, "b": F, "c": F}, {"c"}),
            None,
        ),
        (
            "a dead member: a log-only member on a live node outside the group",
            view({"a": F, "b": F, "c": F}, {"c"}, ["d"]),
            MembershipChange(ADD, "d", L),
        ),
        (
            "log member in place, a node free: a full member there",
            view({"a": F, "b": F, "c": F, "d": L}, {"c"}, ["e"]),
            MembershipChange(ADD, "e", F),
        ),
        (
            "log member in place, no other node: wait",
            view({"a": F, "b": F, "c": F, "d": L}, {"c"}, []),
            None,
        ),
        (
            "new full member still catching up: wait, never a second rebuild",
            view(
                {"a": F, "b": F, "c": F, "d": L, "e": F}, {"c"}, ["a2"], match={"b": 100, "d": 100, "e": 40}
            ),
            None,
        ),
        (
            "new full member caught up: remove the dead member first",
            view({"a": F, "b": F, "c": F, "d": L, "e": F}, {"c"}, [], match={"b": 100, "d": 100, "e": 95}),
            MembershipChange(REMOVE, "c"),
        ),
        (
            "dead member gone: remove the log member",
            view({"a": F, "b": F, "d": L, "e": F}),
            MembershipChange(REMOVE, "d", L),
        ),
        (
            "the dead member came back and caught up: remove the log member",
            view({"a": F, "b": F, "c": F, "d": L}),
            MembershipChange(REMOVE, "d", L),
        ),
        (
            "the dead member came back but lags: wait for it",
            view({"a": F, "b": F, "c": F, "d": L}, match={"b": 100, "c": 50, "d": 100}),
            None,
        ),
        (
            "the log member died too: drop it so another can be added",
            view({"a": F, "b": F, "c": F, "d": L}, {"c", "d"}, ["e"]),
            MembershipChange(REMOVE, "d", L),
        ),
        (
            "a group short of full members with nobody down: add a full member",
            view({"a": F, "b": F}, candidates=["c"]),
            MembershipChange(ADD, "c", F),
        ),
        (
            "a candidate in a zone no serving member uses is preferred",
            view({"a": F, "b": F, "c": F}, {"c"}, ["a2", "e"]),
            MembershipChange(ADD, "e", L),
        ),
        (
            "a current member is never a candidate (one incarnation per id)",
            view({"a": F, "b": F, "c": F, "d": L}, {"c"}, ["d"]),
            None,
        ),
    ],
)
def test_next_change(case: str, group: GroupView, expected: MembershipChange | None) -> None:
    assert next_change(group, CONFIG) == expected, case


def test_the_whole_repair_flow_ends_with_three_serving_full_members_one_change_at_a_time() -> None:
    members = {"a": F, "b": F, "c": F}
    steps = []
    for _ in range(10):  # bounded: the flow takes four changes
        live = [n for n in ("d", "e") if n not in members]
        change = next_change(view(members, {"c"} & set(members), live), CONFIG)
        if change is None:
            break
        steps.append((change.kind.value, change.node) + ((change.role.name,) if change.kind == ADD else ()))
        members = change.applied_to(members)
    assert steps == [("add", "d", "LOG"), ("add", "e", "FULL"), ("remove", "c"), ("remove", "d")]
    assert members == {"a": F, "b": F, "e": F}


ONE = RepairConfig(down_after=3.0, full_replicas=1, catch_up_slack=10)
TWO = RepairConfig(down_after=3.0, full_replicas=2, catch_up_slack=10)


@pytest.mark.parametrize(
    ("case", "group", "config", "expected"),
    [
        (
            "replication factor 1: a lone member is a whole group, nothing is added",
            view({"a": F}, candidates=["b", "c"]),
            ONE,
            None,
        ),
        (
            "replication factor 2: two serving members and a free node, nothing is added",
            view({"a": F, "b": F}, candidates=["c"]),
            TWO,
            None,
        ),
        (
            "replication factor 1 with a dead follower: the dead member is removed, no log member",
            view({"a": F, "b": F}, {"b"}, ["c"]),
            ONE,
            MembershipChange(REMOVE, "b"),
        ),
        (
            "lowered to 1: a follower is removed, never the leader",
            view({"a": F, "b": F, "c": F}),
            ONE,
            MembershipChange(REMOVE, "b"),
        ),
        (
            "lowered: a member still being built goes first",
            view({"a": F, "b": F, "c": F}, match={"b": 100, "c": 20}),
            TWO,
            MembershipChange(REMOVE, "c"),
        ),
        (
            "lowered: a member sharing its zone with another goes before one alone in its zone",
            view({"a": F, "a2": F, "b": F}),
            TWO,
            MembershipChange(REMOVE, "a2"),
        ),
        (
            "lowered while a member is down: the dead member goes first",
            view({"a": F, "b": F, "c": F}, {"c"}),
            ONE,
            MembershipChange(REMOVE, "c"),
        ),
        (
            "lowered, but the group has not been awake long enough to judge its members: wait",
            dataclasses.replace(view({"a": F, "b": F, "c": F}), awake_for=2.0),
            ONE,
            None,
        ),
        (
            "raised from 1: a full member on a free node, a new zone first",
            view({"a": F}, candidates=["a2", "b"]),
            CONFIG,
            MembershipChange(ADD, "b", F),
        ),
    ],
)
def test_next_change_keeps_the_replication_factor(
    case: str, group: GroupView, config: RepairConfig, expected: MembershipChange | None
) -> None:
    assert next_change(group, config) == expected, case


def drained(group: GroupView, *nodes: str) -> GroupView:
    return dataclasses.replace(group, draining=frozenset(nodes))


@pytest.mark.parametrize(
    ("case", "group", "expected"),
    [
        (
            "a draining follower: a full member on a node outside the group, no log member",
            drained(view({"a": F, "b": F, "c": F}, candidates=["d"]), "c"),
            MembershipChange(ADD, "d", F),
        ),
        (
            "a draining node is never a candidate",
            drained(view({"a": F, "b": F, "c": F}, candidates=["d"]), "c", "d"),
            None,
        ),
        (
            "its replacement still being built: wait",
            drained(view({"a": F, "b": F, "c": F, "d": F}, match={"b": 100, "c": 100, "d": 10}), "c"),
            None,
        ),
        (
            "its replacement serves: the draining member is removed",
            drained(view({"a": F, "b": F, "c": F, "d": F}), "c"),
            MembershipChange(REMOVE, "c"),
        ),
        (
            "a draining leader whose replacement serves: nothing (it hands over first)",
            drained(view({"a": F, "b": F, "c": F, "d": F}), "a"),
            None,
        ),
        (
            "a draining leader: its replacement is built first",
            drained(view({"a": F, "b": F, "c": F}, candidates=["d"]), "a"),
            MembershipChange(ADD, "d", F),
        ),
        (
            "a dead member goes before a draining one",
            drained(view({"a": F, "b": F, "c": F, "d": F, "e": F}, {"b"}), "c"),
            MembershipChange(REMOVE, "b"),
        ),
    ],
)
def test_next_change_moves_a_draining_nodes_members_away(
    case: str, group: GroupView, expected: MembershipChange | None
) -> None:
    assert next_change(group, CONFIG) == expected, case


def test_raising_the_replication_factor_from_one_to_three_adds_a_member_at_a_time() -> None:
    members = {"a": F}
    steps = []
    for _ in range(10):  # bounded: two additions
        live = [n for n in ("b", "c", "d") if n not in members]
        change = next_change(view(members, candidates=live), CONFIG)
        if change is None:
            break
        steps.append((change.kind.value, change.node, change.role.name))
        members = change.applied_to(members)
    assert steps == [("add", "b", "FULL"), ("add", "c", "FULL")]


def test_lowering_the_replication_factor_from_three_to_one_keeps_the_leader_alone() -> None:
    members = {"a": F, "b": F, "c": F}
    for _ in range(10):  # bounded: two removals
        change = next_change(view(members, candidates=["d"]), ONE)
        if change is None:
            break
        assert change.kind == REMOVE and change.node != "a"
        members = change.applied_to(members)
    assert members == {"a": F}


def test_a_partitions_own_replication_factor_sets_the_members_to_keep() -> None:
    assert replication_config(CONFIG, Partition("p", 0, 2**64, ("a",), "a")) is CONFIG  # 0: default
    assert (
        replication_config(CONFIG, Partition("p", 0, 2**64, ("a",), "a", replication_factor=1)).full_replicas
        == 1
    )
    assert replication_config(CONFIG, Partition("p", 0, 2**64, ("a",), "a", replication_factor=3)) is CONFIG


@pytest.mark.parametrize(
    ("case", "registered", "heard", "quiesced", "expected"),
    [
        ("everyone heard recently", {"a", "b", "c"}, {"b": 9.0, "c": 8.0}, False, set()),
        ("silent for longer than down_after", {"a", "b", "c"}, {"b": 9.0, "c": 6.0}, False, {"c"}),
        ("a quiesced group's silence means nothing", {"a", "b", "c"}, {"b": 1.0, "c": 1.0}, True, set()),
        (
            "registration gone (lease expired): down even if quiesced",
            {"a", "b"},
            {"b": 1.0, "c": 1.0},
            True,
            {"c"},
        ),
        ("never heard at all", {"a", "b", "c"}, {"b": 9.0}, False, {"c"}),
        # A registration not read yet (or lapsed) while the member answers: up.
        ("active and heard, not registered", {"a", "b"}, {"b": 9.0, "c": 9.5}, False, set()),
    ],
)
def test_down_members(
    case: str, registered: set[str], heard: dict[str, float], quiesced: bool, expected: set[str]
) -> None:
    members = {"a": F, "b": F, "c": F}
    got = down_members(members, "a", frozenset(registered), heard, quiesced, 10.0, CONFIG)
    assert got == expected, case


def test_serving_counts_the_leader_and_followers_within_the_slack() -> None:
    group = view({"a": F, "b": F, "c": F, "d": L}, {"c"}, match={"b": 91, "c": 100, "d": 0})
    assert serving(group, CONFIG) == ["a", "b"]  # c is down, d is log-only
    assert serving(view({"a": F, "b": F}, match={"b": 89}), CONFIG) == ["a"]


def test_partition_record_lists_serving_joining_and_log_members() -> None:
    p = Partition("p0", 0, 1 << 64, ("c", "a", "b"), "c")
    # c removed, d log-only, e added and not caught up yet.
    got = partition_record(p, {"a": F, "b": F, "d": L, "e": F}, ["a", "b"], "a")
    assert got.replicas == ("a", "b")
    assert got.joining == ("e",)
    assert got.log_replicas == ("d",)
    assert got.leader == "a"  # the recorded leader left: the group's leader instead
    # e caught up: it serves, after the members recorded before it.
    got = partition_record(got, {"a": F, "b": F, "e": F}, ["a", "b", "e"], "a")
    assert (got.replicas, got.joining, got.log_replicas, got.leader) == (("a", "b", "e"), (), (), "a")


def test_partition_record_of_a_healthy_group_is_unchanged() -> None:
    p = Partition("p0", 0, 1 << 64, ("b", "a", "c"), "b")
    assert partition_record(p, {"a": F, "b": F, "c": F}, ["a", "b", "c"], "a") == p


def test_partition_members_and_roles_round_trip_through_the_control_store_json() -> None:
    from partita.control.model import partition_from_json, partition_to_json

    p = Partition("p0", 0, 1 << 64, ("a", "b"), "a", log_replicas=("d",), joining=("e",))
    assert partition_from_json(partition_to_json(p)) == p
    plain = Partition("p1", 0, 1 << 64, ("a", "b", "c"), "a")
    assert "log_replicas" not in partition_to_json(plain)  # unchanged objects for RF=1/healthy groups
    assert partition_from_json(partition_to_json(plain)) == plain


def test_a_new_member_goes_on_a_node_of_the_tables_shard_where_it_can() -> None:
    # Two candidates in zones no serving member is in: by id "d" is first, but "e"
    # already holds another partition of the table (its shuffle shard), so the table
    # reaches no new node.
    dead_c = view({"a": F, "b": F, "c": F}, {"c"}, ["d", "e"])
    assert next_change(dead_c, CONFIG) == MembershipChange(ADD, "d", L)
    in_shard = dataclasses.replace(dead_c, shard=frozenset({"a", "b", "e"}))
    assert next_change(in_shard, CONFIG) == MembershipChange(ADD, "e", L)
    # A zone none of the serving members is in still comes first: "a2" shares zone za
    # with the leader, so "d" (zone zd) is taken though outside the shard.
    zone_first = dataclasses.replace(
        view({"a": F, "b": F, "c": F}, {"c"}, ["a2", "d"]), shard=frozenset({"a2"})
    )
    assert next_change(zone_first, CONFIG) == MembershipChange(ADD, "d", L)


def test_a_new_member_outside_the_shard_goes_where_it_exposes_the_fewest_other_partitions() -> None:
    # Neither d nor e is in the table's shard: by id d, but d would take another table's
    # partition past the shard bound (the driver's exposure), so e.
    outside = dataclasses.replace(
        view({"a": F, "b": F, "c": F}, {"c"}, ["d", "e"]), shard=frozenset({"a", "b"})
    )
    assert next_change(outside, CONFIG) == MembershipChange(ADD, "d", L)
    exposed = dataclasses.replace(outside, exposure={"d": 1, "e": 0})
    assert next_change(exposed, CONFIG) == MembershipChange(ADD, "e", L)
    # The shard and the zone rule still come first.
    in_shard = dataclasses.replace(exposed, shard=frozenset({"a", "b", "d"}))
    assert next_change(in_shard, CONFIG) == MembershipChange(ADD, "d", L)


def test_a_member_moving_off_a_busy_node_goes_to_the_moves_target() -> None:
    # Migration: b is the source (draining for this group alone), a2 the target; d and e
    # would come first by the zone rule and by id, but the move names a2.
    moving = dataclasses.replace(
        view({"a": F, "b": F, "c": F}, candidates=["a2", "d", "e"]), draining=frozenset({"b"}), move_to="a2"
    )
    assert next_change(moving, CONFIG) == MembershipChange(ADD, "a2")
    # Once a2 serves, b leaves; until then nothing else is added.
    built = dataclasses.replace(
        moving,
        members={"a": F, "b": F, "c": F, "a2": F},
        match={"b": 100, "c": 100, "a2": 100},
        candidates=[("d", "zd")],
    )
    assert next_change(built, CONFIG) == MembershipChange(REMOVE, "b")
    building = dataclasses.replace(built, match={"b": 100, "c": 100, "a2": 0})
    assert next_change(building, CONFIG) is None
    # A target gone (not a live candidate): the member is built elsewhere, as for a drain.
    gone = dataclasses.replace(moving, candidates=[("d", "zd")])
    assert next_change(gone, CONFIG) == MembershipChange(ADD, "d")


def test_a_leader_moving_off_a_busy_node_has_the_target_built_then_hands_over() -> None:
    # Migration of the leader's own replica: a is the source, a2 the target; d, in the
    # table's shard, would come first without the move.
    moving = dataclasses.replace(
        view({"a": F, "b": F, "c": F}, candidates=["a2", "d"]),
        draining=frozenset({"a"}),
        shard=frozenset({"d"}),
        move_to="a2",
    )
    assert next_change(dataclasses.replace(moving, move_to=None), CONFIG) == MembershipChange(ADD, "d")
    assert next_change(moving, CONFIG) == MembershipChange(ADD, "a2")
    # a2 serves: the leader does not remove itself; the driver hands leadership over and
    # its successor, seeing a still draining, removes it.
    built = dataclasses.replace(moving, members={"a": F, "b": F, "c": F, "a2": F}, candidates=[("d", "zd")])
    assert next_change(built, CONFIG) is None
    successor = dataclasses.replace(built, leader="b", match={"a": 100, "c": 100, "a2": 100})
    assert next_change(successor, CONFIG) == MembershipChange(REMOVE, "a")
