"""The repair policy of a replication group, decided by its leader (seed 000 sections
5 and 6: the leader notices a replica is gone within seconds and acts). Pure: what the
leader knows goes in, at most one membership change comes out; `repair_driver` does
the I/O.

The paper's flow, one member change at a time:
1. a full member has been unreachable for `down_after` seconds: add a log-only member
   (WAL, no data: it only needs the log, so it is up in seconds) on a live node outside
   the group, so one more failure still leaves a write quorum;
2. a live node outside the group (a new node, or any node other than the log member's)
   can host a full replica: add a full member there; it is built by log catch-up (or a
   snapshot) and counts as serving once it is within `catch_up_slack` of the commit;
3. once `full_replicas` full members serve again: remove the dead members, then the
   log-only ones, then full members beyond `full_replicas` (the replication factor was
   lowered: one being built first, then one sharing its zone, never the leader). Only
   in a group awake for longer than it takes to judge a member down: a member that died
   meanwhile is then removed as a dead one first, never left behind in a smaller group
   whose quorum needs it (3 -> 2 members: both must answer).
A member on a node being drained (`partita node drain`) is replaced the same way, without
the log-only member (it still answers, so the write quorum holds): a full member is
built on a node outside the group that is not draining, and once enough others serve
the draining member is removed; a draining leader hands its leadership over first
(the driver), since a leader never removes itself. A replica the autoadmin asked to move
off a busy node (load-based migration) is replaced the same way, its node draining for
this group alone, with the new member on the move's target (`GroupView.move_to`).
`full_replicas` is the partition's own replication factor when it has one (a Table's
`replicationFactor` on Kubernetes, which can change), so raising it adds full members
by step 2 and lowering it removes them by step 3.
A dead full member that comes back before step 2 simply catches up, and step 3 removes
the log member. A member is never added back to a group it left (a replica id is one
incarnation, docs/replication.md), which is why candidates exclude every member.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from partita.common import config
from partita.common.partition_map import Partition
from partita.storage.replication.types import Members, NodeId, Role

# A group sheds a surplus member only once awake this many `down_after`s: long enough
# for a member that stopped answering to be judged down (and removed first).
SHRINK_AWAKE_FACTOR = 1.5


class ChangeKind(enum.Enum):
    ADD = "add"
    REMOVE = "remove"


@dataclass(frozen=True, slots=True)
class MembershipChange:
    kind: ChangeKind
    node: NodeId
    role: Role = Role.FULL

    def applied_to(self, members: Members) -> Members:
        out = dict(members)
        if self.kind == ChangeKind.ADD:
            out[self.node] = self.role
        else:
            out.pop(self.node, None)
        return out


@dataclass(frozen=True, slots=True)
class RepairConfig:
    # Seconds without hearing a member (or its node's registration gone) before the
    # leader repairs around it: a few missed heartbeats' worth, not one slow round.
    down_after: float = config.DEFAULT_REPLICA_DOWN_AFTER_SECONDS
    # Full members a group keeps serving.
    full_replicas: int = 3
    # A full member this many entries or fewer behind the commit index serves.
    catch_up_slack: int = 64
    # A member just added is not judged down before it had this long to answer.
    grace_after_add: float = 5.0
    # For this long after the node starts, a member whose registration it has not read
    # is not judged down for that (the registration TTL: a dead node's has lapsed by then).
    registration_grace: float = 10.0


@dataclass(frozen=True, slots=True)
class GroupView:
    """What the leader of one group knows, at one instant."""

    leader: NodeId
    members: Members
    commit: int
    match: Mapping[NodeId, int]  # the leader's progress: each follower's matching index
    down: frozenset[NodeId]  # members judged unreachable (see `down_members`)
    candidates: Sequence[tuple[NodeId, str]]  # live nodes (id, zone) that could host a member
    zones: Mapping[NodeId, str]  # zone of every known node
    # Seconds the group has been awake (exchanging heartbeats, so silence means
    # something) as of this view; 0 while quiesced.
    awake_for: float = float("inf")
    # Nodes being drained: their members are replaced, and none is a candidate.
    draining: frozenset[NodeId] = frozenset()
    # Nodes with a member of another partition of the group's table: its shuffle shard
    # (docs/control-plane.md), which a new member stays in where it can.
    shard: frozenset[NodeId] = frozenset()
    # Where a member moving off a busy node goes (a `ReplicaMove`'s target), if any.
    move_to: NodeId | None = None
    # For candidates outside the shard: how many other tables' partitions the shard
    # would hold past the shard bound with that node in it (`shard_bound.added_exposure`).
    # Filled by the driver only when the new member must leave the shard.
    exposure: Mapping[NodeId, int] = field(default_factory=dict)


def down_members(
    members: Members,
    leader: NodeId,
    registered: frozenset[NodeId],
    last_heard: Mapping[NodeId, float],
    quiesced: bool,
    now: float,
    config: RepairConfig,
) -> frozenset[NodeId]:
    """Members other than the leader that are unreachable: while the group is active,
    those the leader has not heard for `down_after` seconds; while it is quiesced (no
    heartbeats to judge by), those whose node's registration is gone (its lease
    expired). An active group's member that answers is up whatever the registrations
    say: a node's registration can show late (a leader placed by the operator, on
    Kubernetes, can lead before it has read its peers') or lapse while it runs."""
    out = set()
    for node in members:
        if node == leader:
            continue
        if quiesced:
            down = node not in registered
        else:
            down = now - last_heard.get(node, float("-inf")) > config.down_after
        if down:
            out.add(node)
    return frozenset(out)


def serving(view: GroupView, config: RepairConfig) -> list[NodeId]:
    """Full members that are up and caught up (within the slack of the commit index)."""
    return sorted(
        n
        for n, role in view.members.items()
        if role == Role.FULL and n not in view.down and _caught_up(view, n, config)
    )


def _caught_up(view: GroupView, node: NodeId, config: RepairConfig) -> bool:
    if node == view.leader:
        return True
    return view.commit - view.match.get(node, 0) <= config.catch_up_slack


def next_change(view: GroupView, config: RepairConfig) -> MembershipChange | None:
    """The one membership change the leader should make now, or None."""
    members = view.members
    full = [n for n, role in members.items() if role == Role.FULL]
    logs = sorted(n for n, role in members.items() if role == Role.LOG)
    ok = serving(view, config)
    # Serving members that stay: a draining node's are on their way out.
    kept = [n for n in ok if n not in view.draining]
    if len(kept) >= config.full_replicas:
        # Healthy again: shed the dead first (the quorum shrinks toward live members),
        # then the log-only members, then the draining ones.
        for node in sorted(view.down):
            if node in members and node != view.leader:
                return MembershipChange(ChangeKind.REMOVE, node)
        if logs:
            return MembershipChange(ChangeKind.REMOVE, logs[0], Role.LOG)
        for node in sorted(view.draining):
            if node in members and node != view.leader:
                return MembershipChange(ChangeKind.REMOVE, node)
        if view.leader in view.draining:
            return None  # the leader hands over first (the driver); its successor removes it
        if not surplus_members(view, config) or view.awake_for < config.down_after * SHRINK_AWAKE_FACTOR:
            return None
        return MembershipChange(ChangeKind.REMOVE, _surplus_member(view, ok))
    # A dead log member holds no data: drop it, another can be added.
    dead_logs = [n for n in logs if n in view.down]
    if dead_logs:
        return MembershipChange(ChangeKind.REMOVE, dead_logs[0], Role.LOG)
    building = [n for n in full if n not in view.down and n not in view.draining and n not in ok]
    if building:
        return None  # one rebuild at a time: wait for it to catch up
    candidate = _best_candidate(view, kept)
    if candidate is None:
        return None
    if not logs and any(n in view.down for n in full):
        return MembershipChange(ChangeKind.ADD, candidate, Role.LOG)
    leaving = [n for n in full if n in view.down or n in view.draining]
    if logs or len(full) - len(leaving) < config.full_replicas:
        return MembershipChange(ChangeKind.ADD, candidate, Role.FULL)
    return None


def surplus_members(view: GroupView, config: RepairConfig) -> bool:
    """Whether the group has more full members than it keeps (its replication factor
    was lowered)."""
    return sum(1 for role in view.members.values() if role == Role.FULL) > config.full_replicas


def _surplus_member(view: GroupView, ok: list[NodeId]) -> NodeId:
    """The full member to remove when there are too many: one still being built first
    (it serves nobody yet), then one whose zone another serving member shares (zones
    fail together), then by id; never the leader (a group with too many full members
    has one besides it)."""
    zones = [view.zones.get(n) for n in ok]
    removable = [
        (n in ok, zones.count(view.zones.get(n)) < 2, n)
        for n, role in view.members.items()
        if role == Role.FULL and n != view.leader
    ]
    return min(removable)[2]


def replication_config(config: RepairConfig, partition: Partition) -> RepairConfig:
    """The repair settings of one group: its partition's replication factor, when it
    has one, is the number of full members to keep."""
    if partition.replication_factor and partition.replication_factor != config.full_replicas:
        return replace(config, full_replicas=partition.replication_factor)
    return config


def _best_candidate(view: GroupView, ok: list[NodeId]) -> NodeId | None:
    """A live node outside the group: a move's target when there is one; else one in a
    zone none of the serving members is in when there is one (zones fail together), then
    one in the table's shard (a node its table is on already: the table reaches no new
    node, so no other table's partition gets a second replica within this table's
    reach), then the one that takes the fewest other partitions past the shard bound,
    then by id (stable)."""
    used = {view.zones.get(n) for n in ok}
    eligible = [
        (node != view.move_to, zone in used, node not in view.shard, view.exposure.get(node, 0), node)
        for node, zone in view.candidates
        if node not in view.members and node not in view.draining
    ]
    return min(eligible)[4] if eligible else None


def partition_record(
    partition: Partition, members: Members, serving_now: Sequence[NodeId], leader: NodeId
) -> Partition:
    """The partition object that says what the group is: full members that serve (kept
    in their recorded order, routers read from them), full members being built, and
    log-only members. The recorded leader (the router's first guess) stays unless it
    is no longer serving (down, removed): then the group's leader."""
    keep = [n for n in partition.replicas if members.get(n) == Role.FULL]
    # A member recorded as serving keeps serving while it lags (a follower behind under
    # load is still a replica); only new members wait until they have caught up.
    new = sorted(n for n in serving_now if n not in keep and members.get(n) == Role.FULL)
    replicas = tuple(keep + new)
    joining = tuple(sorted(n for n, role in members.items() if role == Role.FULL and n not in replicas))
    logs = tuple(sorted(n for n, role in members.items() if role == Role.LOG))
    if partition.leader in replicas and partition.leader in serving_now:
        recorded: NodeId | None = partition.leader
    else:
        recorded = leader if leader in replicas else None
    return replace(partition, replicas=replicas, leader=recorded, log_replicas=logs, joining=joining)
