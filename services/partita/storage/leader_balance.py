"""Leadership rebalancing ("preferred leader election", Kafka's
auto.leader.rebalance.enable): which of the groups this node leads to hand, now, to
their preferred leader. Pure: the led groups and the peers' liveness go in, with the
clock; the transfers to start come out. `leader_balance_driver.py` does the I/O.

Nothing else moves leadership back once it has drifted: a restart leaves most groups
with whichever node resumed or won them, and a node killed and restarted leads nothing
(the survivors elected everything it led), so one or two nodes carry every leader's
work (writes, strong reads) for good and the next failure fails over as many groups as
it can.

A group's preferred leader is the first of its full members, in the group's stable
order (`replication.core.stable_rank`, the order of its start-up and failover
elections: balanced across nodes in expectation), that is alive and has been for a
hold-off; a dead member is passed over (the next stands in for it), a member that came
back less than a hold-off ago is waited for (moving the group to the next one and back
again would cost two elections). A group this node has led for less than a hold-off
stays where it is. Leadership only ever moves to a member earlier in the
order, so the nodes, each deciding for its own groups, never move a group back and forth.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from partita.storage.replication.core import stable_rank
from partita.storage.replication.types import GroupId, NodeId, Role

# A peer that came back (restarted, or reachable again) gets no leadership for this
# long: it is still catching its replicas up and answering the elections of its
# restart, and the groups it led have only just failed over. The same quiet holds after
# a peer is lost: the survivors are electing its groups, each on its first surviving
# member already, and transfers would only compete with that for the CPU. And a group
# this node has led for less than this stays (`LeaderBalancer.plan`).
HOLD_OFF_SECONDS = 10.0
# Seconds between two passes of the driver.
PASS_SECONDS = 1.0
# Transfers one node starts per pass (64 a second): a transfer costs an election (a
# term and a NOOP written and fsynced on every member) and wakes its group, and a node
# restarted among thousands of groups would otherwise start them all at once, when its
# peers are busiest.
TRANSFERS_PER_PASS = 64
# A transfer that did not take (the target did not campaign, or lost) is not tried
# again for this long, so that a few stuck groups do not take every pass's slots.
RETRY_AFTER_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class LedGroup:
    """What the leader knows about one group it leads."""

    group: GroupId
    members: Mapping[NodeId, Role]
    match: Mapping[NodeId, int]  # each follower's last entry known to match the leader's log
    last_index: int  # the leader's last log index
    transferring: bool  # a leadership transfer is in flight
    membership_pending: bool  # a membership change is not committed yet
    sealed: bool  # splitting: sealed by a SPLIT entry, or marked for a split


@dataclass(frozen=True, slots=True)
class Transfer:
    group: GroupId
    target: NodeId


def stable_order(group: GroupId, members: Mapping[NodeId, Role]) -> list[NodeId]:
    """The group's full members (those that may lead) in its stable order."""
    return sorted(
        (n for n, role in members.items() if role == Role.FULL), key=lambda n: stable_rank(group, n)
    )


class PeerLiveness:
    """Which peers are alive and since when, from what the node sees each pass (the
    registered peers, less those the transport suspects dead, with their addresses). A
    peer is new (alive since now) when first seen and whenever its address changes: a
    restarted local node listens on a new port, and a restart faster than the
    suspicion is then still seen."""

    def __init__(self, node: NodeId) -> None:
        self.node = node
        self._seen: dict[NodeId, tuple[str, float]] = {}
        self.last_loss = -math.inf  # when a peer last disappeared

    def observe(self, live: Mapping[NodeId, str], now: float) -> None:
        for peer in sorted(self._seen):
            if peer not in live:
                del self._seen[peer]
                self.last_loss = now
        for peer in sorted(live):
            if peer == self.node:
                continue
            seen = self._seen.get(peer)
            if seen is None or seen[0] != live[peer]:
                self._seen[peer] = (live[peer], now)

    def alive_since(self, peer: NodeId) -> float | None:
        seen = self._seen.get(peer)
        return seen[1] if seen is not None else None


class LeaderBalancer:
    def __init__(
        self,
        node: NodeId,
        hold_off: float = HOLD_OFF_SECONDS,
        per_pass: int = TRANSFERS_PER_PASS,
        retry_after: float = RETRY_AFTER_SECONDS,
    ) -> None:
        self.node = node
        self.hold_off = hold_off
        self.per_pass = per_pass
        self.retry_after = retry_after
        self.liveness = PeerLiveness(node)
        self._attempted: dict[GroupId, float] = {}  # group -> when its last transfer started
        # Each led group's stable order as of its membership, from the last pass: a
        # balanced node's pass then costs about a microsecond per group (computing the
        # orders again took most of the pass, ~1% of a core at 1,300 led groups).
        self._orders: dict[GroupId, tuple[tuple[tuple[NodeId, Role], ...], list[NodeId]]] = {}
        # Since when this node leads each group it leads: (term, first pass it was seen).
        self._led_since: dict[GroupId, tuple[int, float]] = {}

    def may_transfer(self, now: float) -> bool:
        """False while no transfer can be planned whatever the groups: a peer was lost
        less than a hold-off ago."""
        return now - self.liveness.last_loss >= self.hold_off

    def plan(
        self,
        led: Iterable[tuple[GroupId, int, Mapping[NodeId, Role]]],
        view: Callable[[GroupId], LedGroup],
        now: float,
    ) -> list[Transfer]:
        """The transfers to start now, at most `per_pass`, in the order of `led` (each
        group this node leads, with its term and members; every pass shows all of them,
        so that the balancer knows since when it leads each). `view` tells the rest
        about a group; it is asked only for the groups that belong elsewhere."""
        self._attempted = {g: t for g, t in self._attempted.items() if now - t < self.retry_after}
        settled = self.may_transfer(now)
        out: list[Transfer] = []
        orders, self._orders = self._orders, {}
        led_since, self._led_since = self._led_since, {}
        for group, term, members in led:
            began = led_since.get(group)
            if began is None or began[0] != term:
                began = (term, now)
            self._led_since[group] = began
            key = tuple(members.items())
            known = orders.get(group)
            if known is not None and known[0] == key:
                self._orders[group] = known
            # Leadership younger than a hold-off stays: a group just handed here by a
            # node shutting down (SIGTERM) would otherwise go straight back to it while
            # it still runs, and a group just elected in a failover is left to settle.
            if not settled or len(out) >= self.per_pass or now - began[1] < self.hold_off:
                continue
            if group in self._attempted:
                continue
            if known is None or known[0] != key:
                known = self._orders[group] = (key, stable_order(group, members))
            target = self._preferred(known[1], now)
            if target is not None and _ready_for(view(group), target):
                out.append(Transfer(group, target))
                self._attempted[group] = now
        return out

    def _preferred(self, order: list[NodeId], now: float) -> NodeId | None:
        """The member to hand the group to by order and liveness alone (None: this
        node is the preferred leader, or the preferred one is not ready yet)."""
        for member in order:
            if member == self.node:
                return None
            since = self.liveness.alive_since(member)
            if since is None:
                continue  # down: the next member in the order stands in for it
            if now - since < self.hold_off:
                return None  # back a moment ago: wait for it rather than move twice
            return member
        return None


def _ready_for(view: LedGroup, target: NodeId) -> bool:
    """Whether the group may go to `target` now: nothing in flight, not splitting, and
    only to a member holding the whole log (its TIMEOUT_NOW goes at once and its election
    cannot fail for a log behind the others')."""
    if view.transferring or view.membership_pending or view.sealed:
        return False
    return view.match.get(target) == view.last_index


def preferred_counts(groups: Iterable[tuple[GroupId, Mapping[NodeId, Role]]]) -> dict[NodeId, int]:
    """Groups per node when every group is led by its first full member in stable order
    (every member alive): the balance the nodes converge to (benchmarks and tests)."""
    counts: dict[NodeId, int] = {}
    for group, members in groups:
        order = stable_order(group, members)
        if order:
            counts[order[0]] = counts.get(order[0], 0) + 1
    return counts
