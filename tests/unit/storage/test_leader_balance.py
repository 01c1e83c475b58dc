"""Leadership rebalancing's decisions (pure, table-driven): which groups node "a", their
leader, hands to which member, from what it knows. Each rule has a case that would fail
without it."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from partita.storage.leader_balance import (
    LeaderBalancer,
    LedGroup,
    PeerLiveness,
    Transfer,
    preferred_counts,
    stable_order,
)
from partita.storage.replication.types import Role

F, L = Role.FULL, Role.LOG
HOLD_OFF = 10.0
# Time at which every peer has been seen long enough (first seen at 0).
SETTLED = 100.0


def group_ordered(order: list[str], members: Mapping[str, Role] | None = None) -> str:
    """A group id whose full members come in `order` (searched, bounded)."""
    roles = members or {n: F for n in order}
    for i in range(10_000):
        group = f"7/p{i}"
        if stable_order(group, roles) == order:
            return group
    raise AssertionError(f"no group ordered {order}")


def led(
    order: list[str],
    members: Mapping[str, Role] | None = None,
    match: Mapping[str, int] | None = None,
    transferring: bool = False,
    membership_pending: bool = False,
    sealed: bool = False,
) -> LedGroup:
    roles = dict(members or {n: F for n in order})
    full_order = [n for n in order if roles.get(n) == F]
    return LedGroup(
        group=group_ordered(full_order, roles),
        members=roles,
        match=dict(match) if match is not None else {n: 50 for n in roles if n != "a"},
        last_index=50,
        transferring=transferring,
        membership_pending=membership_pending,
        sealed=sealed,
    )


def balancer(alive: Mapping[str, float] = {"b": 0.0, "c": 0.0}, per_pass: int = 64) -> LeaderBalancer:
    """Node a's balancer, having seen each peer in `alive` since the time given."""
    out = LeaderBalancer("a", hold_off=HOLD_OFF, per_pass=per_pass, retry_after=5.0)
    for since in sorted(alive.values()):
        seen = {p: f"127.0.0.1:{p}" for p, t in alive.items() if t <= since}
        out.liveness.observe(seen, since)
    return out


def plan(
    planner: LeaderBalancer, views: list[LedGroup], now: float, term: int = 1, first: bool = True
) -> list[Transfer]:
    """Plan a pass; a `first` pass is shown the groups at time 0 before, so this node
    has led them for long enough (at 0 every peer is in its hold-off: nothing planned)."""
    by_group = {v.group: v for v in views}
    led = [(v.group, term, v.members) for v in views]
    if first:
        assert planner.plan(led, by_group.__getitem__, 0.0) == []
    return planner.plan(led, by_group.__getitem__, now)


CASES = [
    # (name, group, peers alive since, expected target)
    (
        "the first member in order is another, live, caught up: it gets the group",
        led(["b", "a", "c"]),
        None,
        "b",
    ),
    ("this node comes first: the group stays", led(["a", "b", "c"]), None, None),
    ("a dead first member is passed over: the next live one gets it", led(["b", "c", "a"]), {"c": 0.0}, "c"),
    ("a dead first member, this node next: the group stays", led(["b", "a", "c"]), {"c": 0.0}, None),
    (
        "the first member came back within the hold-off: nothing yet",
        led(["b", "a", "c"]),
        {"b": 95.0, "c": 0.0},
        None,
    ),
    (
        "the first member came back within the hold-off: not to the next one either (no double move)",
        led(["b", "c", "a"]),
        {"b": 95.0, "c": 0.0},
        None,
    ),
    (
        "the first member came back a hold-off ago: it gets the group",
        led(["b", "a", "c"]),
        {"b": 90.0, "c": 0.0},
        "b",
    ),
    (
        "the target is behind the leader's log: nothing",
        led(["b", "a", "c"], match={"b": 49, "c": 50}),
        None,
        None,
    ),
    ("the target's match is unknown: nothing", led(["b", "a", "c"], match={"c": 50}), None, None),
    ("a transfer is in flight: nothing", led(["b", "a", "c"], transferring=True), None, None),
    ("a membership change is pending: nothing", led(["b", "a", "c"], membership_pending=True), None, None),
    ("the group is sealed or splitting: nothing", led(["b", "a", "c"], sealed=True), None, None),
    (
        "a log-only member never leads: the next full member is the preferred one",
        led(["c", "a"], members={"b": L, "a": F, "c": F}),
        None,
        "c",
    ),
    (
        "a log-only member first in order, this node next: the group stays",
        led(["a", "c"], members={"b": L, "a": F, "c": F}),
        None,
        None,
    ),
]


@pytest.mark.parametrize(("name", "view", "alive", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_transfer_planned_for_one_group(
    name: str, view: LedGroup, alive: dict[str, float] | None, expected: str | None
) -> None:
    planner = balancer(alive) if alive is not None else balancer()
    planned = plan(planner, [view], SETTLED)
    assert planned == ([Transfer(view.group, expected)] if expected else [])


def test_at_most_per_pass_transfers_a_pass_in_the_order_given_then_the_next() -> None:
    groups = [
        g for g in (f"7/p{i}" for i in range(400)) if stable_order(g, {"a": F, "b": F, "c": F})[0] == "b"
    ][:10]
    views = [
        LedGroup(g, {"a": F, "b": F, "c": F}, {"b": 50, "c": 50}, 50, False, False, False) for g in groups
    ]
    planner = balancer(per_pass=4)
    first = plan(planner, views, SETTLED)
    assert first == [Transfer(g, "b") for g in groups[:4]]
    # The groups whose transfer started are left alone (in flight, then retried later).
    second = plan(planner, views, SETTLED + 1, first=False)
    assert second == [Transfer(g, "b") for g in groups[4:8]]


def test_a_transfer_that_did_not_take_is_tried_again_only_after_the_retry_delay() -> None:
    view = led(["b", "a", "c"])
    planner = balancer()
    assert plan(planner, [view], SETTLED) == [Transfer(view.group, "b")]
    assert plan(planner, [view], SETTLED + 4.9, first=False) == []
    assert plan(planner, [view], SETTLED + 5.0, first=False) == [Transfer(view.group, "b")]


def test_nothing_moves_for_a_hold_off_after_a_peer_is_lost() -> None:
    """The survivors are electing the lost peer's groups: no transfer competes."""
    view = led(["b", "a", "c"])
    planner = balancer()
    planner.liveness.observe({"b": "127.0.0.1:b"}, SETTLED)  # c is gone
    assert not planner.may_transfer(SETTLED + 9.9)
    assert plan(planner, [view], SETTLED + 9.9) == []
    assert plan(planner, [view], SETTLED + 10.0, first=False) == [Transfer(view.group, "b")]


def test_a_peer_with_a_new_address_came_back_just_now() -> None:
    """A restarted local node listens on a new port: even a restart faster than the
    transport's suspicion starts its hold-off."""
    liveness = PeerLiveness("a")
    liveness.observe({"a": "x:1", "b": "x:2"}, 0.0)
    liveness.observe({"a": "x:1", "b": "x:2"}, 50.0)
    assert liveness.alive_since("b") == 0.0
    assert liveness.alive_since("a") is None  # this node is no peer of its own
    liveness.observe({"a": "x:1", "b": "x:3"}, 60.0)
    assert liveness.alive_since("b") == 60.0
    assert liveness.last_loss == -float("inf")  # a move, not a loss


def test_a_peer_first_seen_is_in_its_hold_off() -> None:
    """On a node's start every peer is new: nothing moves until the cluster settled."""
    view = led(["b", "a", "c"])
    planner = LeaderBalancer("a", hold_off=HOLD_OFF)
    planner.liveness.observe({"b": "x:2", "c": "x:3"}, 1000.0)
    assert plan(planner, [view], 1005.0) == []
    assert plan(planner, [view], 1010.0, first=False) == [Transfer(view.group, "b")]


def test_the_same_inputs_give_the_same_plan() -> None:
    groups = [f"7/p{i}" for i in range(200)]
    members = {"a": F, "b": F, "c": F}
    views = [LedGroup(g, members, {"b": 50, "c": 50}, 50, False, False, False) for g in groups]
    plans = [plan(balancer(per_pass=16), views, SETTLED) for _ in range(2)]
    assert plans[0] == plans[1] and len(plans[0]) == 16
    assert all(t.target == stable_order(t.group, members)[0] for t in plans[0])


def test_leadership_only_moves_earlier_in_the_order_so_the_nodes_agree() -> None:
    """Whatever node leads a group, its balancer moves it to the preferred member, and
    the preferred member's balancer keeps it: no back and forth."""
    members = {"a": F, "b": F, "c": F}
    for i in range(60):
        group = f"7/p{i}"
        preferred = stable_order(group, members)[0]
        for node in members:
            planner = LeaderBalancer(node, hold_off=HOLD_OFF)
            planner.liveness.observe({n: n for n in members}, 0.0)
            match = {n: 50 for n in members if n != node}
            planned = plan(planner, [LedGroup(group, members, match, 50, False, False, False)], SETTLED)
            assert planned == ([] if node == preferred else [Transfer(group, preferred)])


@pytest.mark.parametrize("nodes", [("a", "b", "c"), ("storage-a", "storage-b", "storage-c")])
def test_every_order_and_every_first_member_comes_about_equally_often(nodes: tuple[str, ...]) -> None:
    """The stable order is the preferred leaders' (and the elections'): a skew here is a
    skew of leaders. With CRC32C alone only four of the six orders occurred and one node
    came first in half of all groups."""
    members = {n: F for n in nodes}
    groups = [f"{t}/p{p}" for t in range(1, 1001) for p in range(4)]
    orders: dict[tuple[str, ...], int] = {}
    for group in groups:
        order = tuple(stable_order(group, members))
        orders[order] = orders.get(order, 0) + 1
    assert len(orders) == 6 and all(560 <= n <= 780 for n in orders.values()), orders  # 667 each
    counts = preferred_counts((g, members) for g in groups)
    assert sum(counts.values()) == 4000
    assert all(1200 <= counts[n] <= 1470 for n in nodes), counts  # 1333 each


def test_a_membership_change_gives_the_group_its_new_order() -> None:
    """The order is remembered between passes, but only for the same membership."""
    before, after = {"a": F, "b": F, "c": F}, {"a": F, "c": F, "d": F}
    group = next(
        g
        for g in (f"7/p{i}" for i in range(10_000))
        if stable_order(g, before)[0] == "a" and stable_order(g, after)[0] == "d"
    )
    planner = balancer({"b": 0.0, "c": 0.0, "d": 0.0})
    assert (
        plan(planner, [LedGroup(group, before, {"b": 50, "c": 50}, 50, False, False, False)], SETTLED) == []
    )
    moved = LedGroup(group, after, {"c": 50, "d": 50}, 50, False, False, False)
    assert plan(planner, [moved], SETTLED + 1, first=False) == [Transfer(group, "d")]


def test_a_group_led_here_for_less_than_a_hold_off_stays() -> None:
    """A group just handed here by a node shutting down would go straight back to it
    while it still runs; one just elected in a failover is left to settle."""
    view = led(["b", "a", "c"])
    planner = balancer()
    assert plan(planner, [view], SETTLED, term=3, first=False) == []  # led since now
    assert plan(planner, [view], SETTLED + 9.9, term=3, first=False) == []
    # A new term (elected again) is a new leadership: its hold-off starts again.
    assert plan(planner, [view], SETTLED + 9.9, term=4, first=False) == []
    assert plan(planner, [view], SETTLED + 19.8, term=4, first=False) == []
    assert plan(planner, [view], SETTLED + 19.9, term=4, first=False) == [Transfer(view.group, "b")]
