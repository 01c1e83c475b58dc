"""Load-based migration (seed 000 section 4; DESIGN.md section 6): a storage node above a
share of its capacity has replicas moved to nodes of the same zone that have room for
them. Pure: the storage nodes' load reports, the members of the partitions
concerned and the moves under way go in; moves to start and moves to forget come out.
The local driver writes them to the control store, and each group's leader carries a
move out as it repairs (storage/repair.py): a full member built on the target, then the
source's member removed, its leadership handed over first when it leads.

The rules:
- a node is hot when its freshest report (no older than `max_age`) puts the busier of
  its reads and writes above `above` of its capacity;
- a hot node gives up the replica whose leaving relieves it most (its utilisation falls
  furthest: a replica of reads does nothing for a node hot with writes) that fits
  somewhere, and then the next in the same check while what it keeps would still be
  above `above`, each to a node of its own: a node of its zone, registered, not
  draining, not already a member of that partition, whose own load plus the replica's
  stays at or below `room_below` of its capacity in both kinds (so the move neither
  moves the hot spot nor makes the target hot: a replica that alone fills a node stays
  where it is, which only a split can help); a node of the table's shuffle shard first
  (another partition of the table is there already: no other table gains a node in
  common with it), else the one that takes the fewest other tables' partitions past the
  shuffle-shard bound with it (`shard_bound`), then the least busy;
- a node is the target of one move at a time, and the source of the moves of one check
  only: while any of them is under way it is not a source again; at most
  `max_in_flight` moves in all; a node whose move ended takes part in no other until a
  report measured wholly after that (the reports before it still count the moved
  replica where it was), so the fleet's load settles and is measured again between
  moves;
- a move is over once the source is no longer a member (done), or moot: its partition
  gone (split or dropped), neither end a member any more, the target gone or draining,
  or no progress after `timeout` seconds. A moot move is only forgotten: the group's
  repair sheds whatever surplus member it left (storage/repair.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from partita.common import config
from partita.common.shard_bound import added_exposure
from partita.control.model import NodeLoad, NodeRecord, ReplicaLoad, ReplicaMove

PartitionKey = tuple[int, str]  # (table id, partition id)

# Why a move is forgotten.
EndReason = Literal["done", "partition_gone", "moot", "target_gone", "timed_out"]


@dataclass(frozen=True)
class MigrationPolicy:
    enabled: bool = True
    above: float = config.DEFAULT_MIGRATE_ABOVE
    room_below: float = config.DEFAULT_MIGRATE_ROOM_BELOW
    # A load report older than this (or than three of its own intervals, if longer) is
    # not acted on: its node stopped reporting.
    max_age: float = 6 * config.DEFAULT_LOAD_REPORT_SECONDS
    # A move not over after this long is forgotten; a later check may ask again.
    timeout: float = 600.0
    max_in_flight: int = 4
    # The shuffle-shard bound (`shard_bound`): a target outside the table's shard is
    # chosen to take the fewest other tables' partitions past it.
    max_shared: int = config.DEFAULT_SHARD_MAX_SHARED

    def __post_init__(self) -> None:
        if self.room_below >= self.above:
            # A target filled to the hot share would be hot in turn: moves would cycle.
            raise ValueError(f"the room share ({self.room_below}) must be below the hot share ({self.above})")


@dataclass(frozen=True)
class Fleet:
    """What the driver read: registered nodes, their load reports, the moves under way,
    and every member (full, joining, log-only) of each partition a hot node holds or a
    move names."""

    nodes: Sequence[NodeRecord]
    loads: Sequence[NodeLoad]
    members: Mapping[PartitionKey, frozenset[str]]
    moves: Sequence[ReplicaMove] = ()
    draining: frozenset[str] = frozenset()
    now: float = 0.0  # seconds since the epoch, as the reports' `measured_at`
    # When a move of each node (as source or target) last ended, as the driver recalls.
    last_moved: Mapping[str, float] = field(default_factory=dict)
    # Every table's partitions' replica sets, by table id, read when a node is hot: a
    # target outside a table's shard is weighed against the other tables' (`_exposure`).
    placements: Mapping[int, tuple[frozenset[str], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class MigrationPlan:
    start: tuple[ReplicaMove, ...] = ()
    end: tuple[tuple[ReplicaMove, EndReason], ...] = ()
    # Hot nodes no move could relieve (no node of their zone has room for any replica).
    stuck: tuple[str, ...] = ()
    # Nodes above the share, the busiest first.
    hot: tuple[str, ...] = ()


def fresh_loads(loads: Sequence[NodeLoad], now: float, max_age: float) -> dict[str, NodeLoad]:
    """The reports still current: measured within `max_age` (or three of their own
    intervals, if longer); an idle node's empty report is written again only every
    `IDLE_LOAD_REPORT_INTERVALS`, so it is current twice that long."""
    return {load.node_id: load for load in loads if now - load.measured_at <= _lifetime(load, max_age)}


def _lifetime(load: NodeLoad, max_age: float) -> float:
    if not load.replicas:
        return max(max_age, 2 * config.IDLE_LOAD_REPORT_INTERVALS * load.interval)
    return max(max_age, config.LOAD_REPORT_LIFETIME_INTERVALS * load.interval)


def hot_nodes(loads: Mapping[str, NodeLoad], above: float) -> list[NodeLoad]:
    """Nodes above the share, the busiest first."""
    return sorted(
        (n for n in loads.values() if n.utilisation() > above), key=lambda n: (-n.utilisation(), n.node_id)
    )


def move_end(move: ReplicaMove, fleet: Fleet, registered: frozenset[str], timeout: float) -> EndReason | None:
    """Why a move under way is over, or None while it is not."""
    members = fleet.members.get((move.table_id, move.partition_id))
    if members is None:
        return "partition_gone"
    if move.source not in members:
        return "done" if move.target in members else "moot"
    if move.target not in registered or move.target in fleet.draining:
        return "target_gone"
    if fleet.now - move.started_at > timeout:
        return "timed_out"
    return None


def table_nodes(members: Mapping[PartitionKey, frozenset[str]], table_id: int) -> frozenset[str]:
    """The nodes holding a member of any of the table's partitions: its shuffle shard."""
    return frozenset(n for (t, _), nodes in members.items() if t == table_id for n in nodes)


def relief(replica: ReplicaLoad, node: NodeLoad) -> float:
    """How far the node's utilisation falls without the replica: a replica of reads
    does nothing for a node hot with writes."""
    rest = max(
        (node.read - replica.read) / node.read_capacity, (node.write - replica.write) / node.write_capacity
    )
    return node.utilisation() - rest


def fits(replica: ReplicaLoad, target: NodeLoad, room_below: float) -> bool:
    """Whether the target stays at or below the share in both kinds with the replica
    (a node with a move under way is no target, so nothing else is on its way to it)."""
    read = target.read + replica.read
    write = target.write + replica.write
    return read <= room_below * target.read_capacity and write <= room_below * target.write_capacity


def plan_moves(fleet: Fleet, policy: MigrationPolicy) -> MigrationPlan:
    registered = frozenset(n.node_id for n in fleet.nodes)
    ended = []
    going: list[ReplicaMove] = []
    for move in fleet.moves:
        reason = move_end(move, fleet, registered, policy.timeout)
        if reason is None:
            going.append(move)
        else:
            ended.append((move, reason))
    loads = fresh_loads(fleet.loads, fleet.now, policy.max_age)
    hot = hot_nodes(loads, policy.above)
    hot_ids = tuple(n.node_id for n in hot)
    if not policy.enabled:
        return MigrationPlan((), tuple(ended), (), hot_ids)
    zones = {n.node_id: n.zone for n in fleet.nodes}
    busy = {n for m in going for n in (m.source, m.target)} | {
        n for m, _ in ended for n in (m.source, m.target)
    }
    busy |= {
        n for n, load in loads.items() if load.measured_at - load.interval < fleet.last_moved.get(n, -1.0)
    }
    moving = {(m.table_id, m.partition_id) for m in going}
    started: list[ReplicaMove] = []
    stuck: list[str] = []
    for node in hot:
        if len(going) + len(started) >= policy.max_in_flight:
            break
        if node.node_id in busy or node.node_id in fleet.draining or node.node_id not in registered:
            continue  # a move of it under way, or a drain moving all of it
        limit = policy.max_in_flight - len(going) - len(started)
        chosen = _moves_off(node, fleet, loads, zones, busy, moving, policy, limit)
        if not chosen:
            stuck.append(node.node_id)
            continue
        started.extend(chosen)
        busy |= {node.node_id, *(m.target for m in chosen)}
        moving |= {(m.table_id, m.partition_id) for m in chosen}
    return MigrationPlan(tuple(started), tuple(ended), tuple(stuck), hot_ids)


def _moves_off(
    node: NodeLoad,
    fleet: Fleet,
    loads: Mapping[str, NodeLoad],
    zones: Mapping[str, str],
    busy: set[str],
    moving: set[PartitionKey],
    policy: MigrationPolicy,
    limit: int,
) -> list[ReplicaMove]:
    """The node's moves of one check: the one that relieves it most, then the next, each
    to a node of its own, while what the node keeps would still be hot (at most `limit`)."""
    zone = zones.get(node.node_id)
    # `zones` holds registered nodes only: a report outliving its node names no target.
    targets = [
        load
        for node_id, load in loads.items()
        if zones.get(node_id) == zone
        and node_id != node.node_id
        and node_id not in busy
        and node_id not in fleet.draining
    ]
    chosen: list[ReplicaMove] = []
    left = node
    while len(chosen) < limit and left.utilisation() > policy.above:
        move = _move_off(left, targets, fleet, moving, policy)
        if move is None:
            break
        chosen.append(move)
        targets = [t for t in targets if t.node_id != move.target]
        key = (move.table_id, move.partition_id)
        left = replace(left, replicas=tuple(r for r in left.replicas if (r.table_id, r.partition_id) != key))
    return chosen


def _exposure(
    fleet: Fleet, table_id: int, shard: frozenset[str], targets: Sequence[NodeLoad], bound: int
) -> Mapping[str, int]:
    """What each target outside the table's shard would add to the partitions it holds
    past the bound; nothing to weigh (so not computed) when a target is in the shard."""
    if any(t.node_id in shard for t in targets):
        return {}
    others = (nodes for t, sets in fleet.placements.items() if t != table_id for nodes in sets)
    return added_exposure(shard, [t.node_id for t in targets], others, bound)


def _move_off(
    node: NodeLoad, targets: list[NodeLoad], fleet: Fleet, moving: set[PartitionKey], policy: MigrationPolicy
) -> ReplicaMove | None:
    """The move of the replica that relieves the node most and fits one of `targets`
    (nodes of its zone free to take one), if any."""
    ranked = sorted((-relief(r, node), r.table_id, r.partition_id, r) for r in node.replicas)
    for minus_relief, _, _, replica in ranked:
        if minus_relief >= 0:
            break  # the rest would not relieve the node
        key = (replica.table_id, replica.partition_id)
        members = fleet.members.get(key)
        if members is None or key in moving or node.node_id not in members:
            continue  # not known as this node's member (the report is older than the map)
        roomy = [t for t in targets if t.node_id not in members and fits(replica, t, policy.room_below)]
        if roomy:
            shard = table_nodes(fleet.members, replica.table_id).union(
                *fleet.placements.get(replica.table_id, ())
            )
            exposure = _exposure(fleet, replica.table_id, shard, roomy, policy.max_shared)
            target = min(
                roomy,
                key=lambda t: (
                    t.node_id not in shard,
                    exposure.get(t.node_id, 0),
                    t.utilisation(),
                    t.node_id,
                ),
            )
            return ReplicaMove(
                replica.table_id, replica.partition_id, node.node_id, target.node_id, fleet.now
            )
    return None
