"""The storage node process: the engine, its data server, an admin gRPC server, and
the hosting loop that follows the control store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from partita._proto import storage_pb2 as pb
from partita._proto import storage_pb2_grpc as pb_grpc
from partita.common import config, keys
from partita.common.metrics import serve_metrics
from partita.common.partition_map import Partition, data_members, is_replicated
from partita.common.shard_bound import added_exposure
from partita.common.throughput import Kind as UnitKind
from partita.control.model import NodeRecord, ReplicaMove, TableRecord
from partita.control.store import NodeStore, Placements
from partita.storage import admin_server, metrics
from partita.storage.admission import DEFAULT_NODE_UNITS, StorageAdmission, partition_rate
from partita.storage.assignments import AssignmentBook
from partita.storage.data_server import DataPlane, LocalDataChannel, start_data_server
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from partita.storage.group_split import PartitionWriter
from partita.storage.heat import PartitionHeat
from partita.storage.hosting import HostedTable, desired_hosting, tables_to_drop
from partita.storage.leader_balance_driver import LeaderBalanceDriver
from partita.storage.load_report import LoadWindow, report_load
from partita.storage.membership_publisher import MembershipPublisher, follow_memberships
from partita.storage.peer_transport import PeerTransport
from partita.storage.repair import RepairConfig
from partita.storage.repair_driver import RepairDriver
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.types import GroupId, Role
from partita.storage.stream_trimmer import StreamTrimmer
from partita.storage.table_stats import Figures, StatsPublisher, leads, measure_partition, next_pass_delay
from partita.storage.ttl_sweep import SweepPacer
from partita.storage.ttl_sweeper import TtlSweeper

log = logging.getLogger(__name__)
# What `serve` starts beside the node in its process, given the node's in-process data
# channel and data address; returns how to stop it.
Attach = Callable[[LocalDataChannel, str], Awaitable[Callable[[], Awaitable[None]]]]

# The node re-reads the control store when a watch says it changed, and at least this
# often regardless (a lost watch event delays a change, never loses it). Not every
# second: with 1,000 tables (4,000 partitions and their ready markers) a full read and
# reconcile costs a node about 0.25 CPU-s (py-spy, docs/benchmarks.md "P3: 1,000
# tables"), a quarter of a core spent re-reading nothing new at idle; the watch is
# re-established (and reported as a change) whenever it breaks.
CONTROL_RESYNC_SECONDS = 15.0
# While a split parent retires here (this replica has not applied its SPLIT entry), the
# hosting is re-read this often, so the children start as soon as it has.
RETIRING_RESYNC_SECONDS = 0.5
# How long a retiring parent may try to catch up. Its other members drop the parent's
# group once they start the children, so a replica that was stopped through the split
# may find no leader left to catch up from: it then drops the parent and joins each child
# as a newcomer, which its leader sends a snapshot (`missed_split`).
RETIRING_PATIENCE_SECONDS = 5.0
# TTL of the node's registration lease in the control store.
NODE_TTL_SECONDS = 10
# Ready markers written at once (a restarted node writes one per hosted replica).
READY_MARK_CONCURRENCY = 64
# How often the node re-reads the other nodes' registrations (replication addresses,
# liveness).
PEER_REFRESH_SECONDS = 1.0


@dataclass
class NodeState:
    node_id: str
    zone: str
    engine: Engine
    hosted: dict[int, HostedTable] = field(default_factory=dict)
    ready: set[tuple[int, str]] = field(default_factory=set)  # (table_id, partition_id) marked
    ids_with_data: set[int] = field(default_factory=set)
    # What the last count of each partition this node leads found (items, bytes, where a
    # split would cut, its heat): for the metrics and the admin Report.
    partition_figures: dict[tuple[int, str], Figures] = field(default_factory=dict)
    # How hot each partition this node serves runs (split for consumption), by
    # (table_id, partition_id); reported by its leader with the counts.
    heat: dict[tuple[int, str], PartitionHeat] = field(default_factory=dict)

    # Drives the replication groups of the partitions placed on several nodes; the
    # partitions with one replica commit locally without it.
    replicas: ReplicaHost | None = None
    # The replicated groups this node is a member of: group -> (table id, partition).
    groups: dict[GroupId, tuple[int, Partition]] = field(default_factory=dict)
    # Split parents gone from the control store that run on here only until this
    # replica has applied their SPLIT entry: neither repaired nor split again.
    retiring: set[GroupId] = field(default_factory=set)
    # When each retiring parent started waiting (time.monotonic()).
    retiring_since: dict[GroupId, float] = field(default_factory=dict)
    repair: RepairDriver | None = None
    # Replicas removed from groups that go on, to be erased (`erase_removed`): group ->
    # the key ranges of its data that no other replica here serves.
    erasing: dict[GroupId, tuple[tuple[bytes, bytes], ...]] = field(default_factory=dict)
    # Every table the control store last listed (not only those hosted here): the other
    # tables' placements, which a new member leaving its table's shard is checked
    # against (`shard_exposure`). Empty when hosting by assignment (Kubernetes).
    tables: list[TableRecord] = field(default_factory=list)
    # When hosting by assignment: every table's replica sets as the operator last
    # published them, in their place.
    published_placements: Placements = field(default_factory=dict)

    def owner(self, request: pb.Request) -> Partition | None:
        """The hosted partition holding the request's key; None if this node has none."""
        hosted = self.hosted.get(request.table_id)
        return hosted.owner_of(request.key_hash) if hosted is not None else None

    def replicated_group(self, table_id: int, partition: Partition) -> GroupId | None:
        """The partition's replication group when this node runs one for it (its
        writes then go through consensus); None for a single replica. A partition with
        a replication factor (Kubernetes) may run a group of one member."""
        if self.replicas is None or (len(partition.replicas) < 2 and not partition.replication_factor):
            return None
        group = group_of(table_id, partition.partition_id)
        return group if self.replicas.hosts(group) else None

    def awaits_group(self, partition: Partition) -> bool:
        """A replicated partition whose group this node does not run (yet): a split
        child waiting for its parent's SPLIT entry to be applied here."""
        return self.replicas is not None and is_replicated(partition)

    def leads(self, table_id: int, partition: Partition) -> bool:
        """Whether this node does the partition's leader-only work (TTL, counting): the
        group's elected leader, or for a single replica the placement's choice."""
        group = self.replicated_group(table_id, partition)
        if group is None or self.replicas is None:
            return leads(partition, self.node_id)
        return self.replicas.is_leader(group)


class StorageService(pb_grpc.StorageServicer):
    """Administration over gRPC; the data path is `data_server`."""

    def __init__(self, state: NodeState) -> None:
        self.state = state

    async def Status(self, request: pb.StatusRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        out = pb.StatusResponse(
            node_id=self.state.node_id, zone=self.state.zone, applied_lsn=self.state.engine.applied_lsn
        )
        for hosted in self.state.hosted.values():
            for p in hosted.partitions:
                table_id = hosted.record.table_id
                if request.leaders_only and not self.state.leads(table_id, p):
                    continue
                entry = pb.HostedPartition(
                    table_id=table_id,
                    table_name=hosted.record.name,
                    partition_id=p.partition_id,
                    start=p.start,
                    end_exclusive_minus_one=p.end - 1,
                    role="leader" if self.state.leads(table_id, p) else "follower",
                    members=list(p.replicas),
                )
                group = self.state.replicated_group(table_id, p)
                report = self.state.replicas.leadership(group) if group and self.state.replicas else None
                if report is not None:
                    entry.leader = report.leader or ""
                    entry.term = report.term
                    entry.commit_index = report.commit
                    entry.applied_index = report.applied
                    entry.has_lease = report.has_lease
                    entry.follower_lag.update(report.lag)
                out.partitions.append(entry)
        return out


async def reconcile_hosting(state: NodeState, store: NodeStore, tables: list[TableRecord]) -> None:
    """Serve what the control store assigns to this node; drop what it no longer does."""
    for table_id in tables_to_drop(tables, state.ids_with_data | set(state.hosted), state.node_id):
        dropped = state.hosted.pop(table_id, None)
        if dropped is not None:
            metrics.forget_table(table_id, dropped.record.name)
        state.partition_figures = {k: v for k, v in state.partition_figures.items() if k[0] != table_id}
        lo, hi = keys.table_bounds(table_id)
        if state.replicas is not None:
            # Stopped first: a replica still running would write a position after its
            # erasure, and an install's thread pairs after the range's deletion.
            for group in [g for g in state.replicas.multi.replicas if g.startswith(f"{table_id}/")]:
                state.replicas.remove_group(group)
                await state.engine.settle_install(group)
        await state.engine.commit([Effect(Kind.DELETE_RANGE, lo, hi)])
        for group in state.engine.groups():
            if group.startswith(f"{table_id}/"):
                await state.engine.erase_group(group)  # the data went with the table's range
        state.ids_with_data.discard(table_id)
        record = next((t for t in tables if t.table_id == table_id), None)
        if record is None or record.status == "DELETING":
            # The record may already be gone with its statistics; a count published
            # while this drop was on its way would otherwise outlive the table. (A table
            # that merely left this node keeps its other leaders' counts.)
            await store.clear_partition_stats(table_id)
        if record is not None:
            for p in record.partitions:
                if state.node_id in p.replicas:
                    await store.clear_ready(table_id, p.partition_id, state.node_id)
        state.ready = {r for r in state.ready if r[0] != table_id}
        log.info("dropped table %d", table_id)
    state.tables = tables
    state.hosted = desired_hosting(tables, state.node_id)
    sync_groups(state, tables)
    await erase_removed(state)
    unmarked: list[tuple[int, str]] = []
    for table_id, hosted in state.hosted.items():
        state.ids_with_data.add(table_id)
        for p in hosted.partitions:
            if state.replicated_group(table_id, p) is None and state.awaits_group(p):
                continue  # a split child not started yet here: not ready to serve
            unmarked.append((table_id, p.partition_id))
    await mark_ready(state, store, [r for r in unmarked if r not in state.ready])


async def mark_ready(state: NodeState, store: NodeStore, partitions: list[tuple[int, str]]) -> None:
    """Mark `partitions` ready, READY_MARK_CONCURRENCY at a time: a restarted node
    hosting 4,000 replicas marks them all, and one put after another took minutes on a
    loaded machine (until one timed out and took the node down). A mark that fails is
    retried by the next pass (it stays out of `state.ready`)."""

    async def mark(table_id: int, partition_id: str) -> None:
        try:
            await store.mark_ready(table_id, partition_id, state.node_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("could not mark %d/%s ready: %s", table_id, partition_id, exc)
            return
        state.ready.add((table_id, partition_id))

    for i in range(0, len(partitions), READY_MARK_CONCURRENCY):
        await asyncio.gather(*(mark(t, p) for t, p in partitions[i : i + READY_MARK_CONCURRENCY]))


class PeerDirectory:
    """Where the other storage nodes' replication streams are, and which are alive,
    from their registrations in the control store (leases: a SIGKILLed node's record
    disappears within NODE_TTL_SECONDS). Liveness wakes the followers of quiesced
    groups whose leader's node died."""

    def __init__(self) -> None:
        self.addresses: dict[str, str] = {}
        self.zones: dict[str, str] = {}  # every registered node's zone (repair places by zone)
        # Nodes being drained (`partita node drain`): repair moves their replicas away.
        self.draining: frozenset[str] = frozenset()
        # Replicas the autoadmin asked to move off a busy node, by group (migration).
        self.moves: dict[GroupId, ReplicaMove] = {}
        # Addresses the operator gave with the assignments (admin hosting: each member's
        # pod DNS name); they take precedence over the registrations.
        self.assigned: dict[str, str] = {}

    def replication_address(self, node_id: str) -> str | None:
        return self.assigned.get(node_id) or self.addresses.get(node_id)

    def assign(self, addresses: Mapping[str, str]) -> None:
        self.assigned = dict(addresses)

    async def refresh(self, store: NodeStore, replicas: ReplicaHost) -> None:
        records = await store.list_nodes()
        self.zones = {n.node_id: n.zone for n in records}
        self.draining = await store.list_draining()
        self.moves = {group_of(m.table_id, m.partition_id): m for m in await store.list_moves()}
        nodes = {n.node_id: n.replication_address for n in records if n.replication_address}
        now = time.monotonic()
        for gone in set(self.addresses) - set(nodes):
            replicas.multi.node_liveness(gone, False, now)
        for back in set(nodes) - set(self.addresses):
            replicas.multi.node_liveness(back, True, now)
        self.addresses = nodes

    async def follow(self, store: NodeStore, replicas: ReplicaHost) -> None:
        while True:
            try:
                await self.refresh(store, replicas)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is down: keep the addresses we know
                log.warning("control store unavailable for peers: %s", exc)
            await asyncio.sleep(PEER_REFRESH_SECONDS)


def kept_from_rebalance(state: NodeState, peers: PeerDirectory, group: GroupId) -> bool:
    """Whether leadership rebalancing leaves a group as it is: its partition marked for a
    split (its leader is about to seal it), or a member moving off a busy node (a leader
    there hands its leadership away as repair moves it: not to be handed it back)."""
    if group in peers.moves:
        return True
    placed = state.groups.get(group)
    return placed is not None and bool(placed[1].split_at)


async def hand_off_leadership(replicas: ReplicaHost) -> None:
    """SIGTERM: move every group this node leads to its most up-to-date follower, and
    wait (bounded by an election timeout) until it leads none."""
    now = time.monotonic()
    led = len(replicas.multi.leading())
    for group in replicas.multi.leading():
        replica = replicas.multi.replicas[group]
        followers = [
            (pr.match, peer)
            for peer, pr in replica.progress.items()
            if peer != replicas.node_id and replica.members.get(peer) == Role.FULL  # log members cannot lead
        ]
        if followers:
            replicas.multi.transfer_leadership(group, max(followers)[1], now)
    deadline = now + replicas.config.election_timeout
    while replicas.multi.leading() and time.monotonic() < deadline:
        replicas.wake()
        await asyncio.sleep(0.02)
    if led:
        log.info(
            "handed off leadership of %d of %d groups in %.2fs",
            led - len(replicas.multi.leading()),
            led,
            time.monotonic() - now,
        )


def runs_as_group(partition: Partition, ran_here: bool) -> bool:
    """Whether a partition runs as a replication group: when it has several members;
    when its replication factor asks for several (a single replica being grown, whose
    data becomes the group's starting point: new members are sent a snapshot of it); or
    when its group ran on this node before (`ran_here`: lowered to one member, it stays
    a group of one, so a later raise catches the new members up from its log and
    snapshots, never missing a write made meanwhile)."""
    return is_replicated(partition) or len(members_of(partition)) > 1 or ran_here


def members_of(partition: Partition) -> tuple[str, ...]:
    """Every member of a partition's group: serving, being built, log-only."""
    return (*partition.replicas, *partition.joining, *partition.log_replicas)


def sync_groups(state: NodeState, tables: list[TableRecord], now: float | None = None) -> None:
    """Host a replica of every partition placed on several nodes that has this node
    among its members (serving, being built, or log-only); stop hosting the groups of
    partitions that left (a split's parent, a dropped table, a member removed)."""
    if state.replicas is None:
        return
    wanted: dict[GroupId, tuple[int, Partition]] = {}
    # Every replicated partition that exists, ours or not.
    placed: dict[GroupId, tuple[int, Partition]] = {}
    for record in tables:
        if record.status == "DELETING":
            continue
        for p in record.partitions:
            group = group_of(record.table_id, p.partition_id)
            if runs_as_group(p, state.engine.hard_state(group) is not None):
                placed[group] = (record.table_id, p)
                if state.node_id in members_of(p):
                    wanted[group] = (record.table_id, p)
    # A member's split child waiting for its parent is not wanted yet, but not removed.
    members_here = set(wanted)
    waiting = _children_waiting(state, wanted, time.monotonic() if now is None else now)
    for group, parent in waiting.items():
        del wanted[group]
        if parent is not None:
            wanted[parent] = state.groups[parent]  # kept running until it reaches the split
    for group in [g for g in state.replicas.multi.replicas if g not in wanted]:
        state.replicas.remove_group(group)
    # Removed from a group that goes on (while running, or while this node was down):
    # erase this replica (its data, position and log), so that if the node is ever added
    # back it starts as a new member (a log-only member's position stands for data it
    # never applied). A split's parent or a dropped table are not this case: their ids
    # leave the map (a dropped table's range is deleted whole).
    for group in [g for g in state.engine.groups() if g in placed and g not in members_here]:
        table_id, p = placed[group]
        state.erasing[group] = unserved_ranges(state, tables, table_id, p, wanted)
    for group, (table_id, p) in wanted.items():
        newcomer = (
            state.node_id in p.joining or state.node_id in p.log_replicas or missed_split(state, table_id, p)
        )
        state.replicas.add_group(
            group,
            [*p.replicas, *p.joining],
            p.log_replicas,
            newcomer=newcomer,
            # A single replica that starts a group (its replication factor raised) starts
            # it from the data it holds, as a split child does from its parent's: even
            # with no write of its own yet (a half cut in place from a single-replica
            # parent holds the parent's items at position 0).
            inherited=bool(p.parent_index) or len(members_of(p)) == 1,
        )
    state.groups = wanted
    state.retiring = {parent for parent in waiting.values() if parent is not None}
    state.retiring_since = {g: t for g, t in state.retiring_since.items() if g in state.retiring}


def unserved_ranges(
    state: NodeState,
    tables: list[TableRecord],
    table_id: int,
    removed: Partition,
    running: dict[GroupId, tuple[int, Partition]],
) -> tuple[tuple[bytes, bytes], ...]:
    """The key ranges of `removed`'s hash range that no other replica on this node holds:
    a partition of the table that lists this node (any role, one replica or several,
    split children not started yet), or a group still running here (a retiring split
    parent). Split children and parents overlap: only what none of them covers goes."""
    kept = [(p.start, p.end) for tid, p in running.values() if tid == table_id]
    for record in tables:
        if record.table_id != table_id:
            continue
        for p in record.partitions:
            if p.partition_id != removed.partition_id and state.node_id in (
                *p.replicas,
                *p.joining,
                *p.log_replicas,
            ):
                kept.append((p.start, p.end))
    hosted = state.hosted.get(table_id)
    if hosted is not None:
        kept.extend((p.start, p.end) for p in hosted.partitions if p.partition_id != removed.partition_id)
    pieces = [(removed.start, removed.end)]
    for lo, hi in kept:
        pieces = [part for start, end in pieces for part in _without(start, end, lo, hi)]
    return tuple(keys.hash_range_bounds(table_id, start, end) for start, end in pieces)


def _without(start: int, end: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """[start, end) less [lo, hi), as at most two ranges."""
    if hi <= start or lo >= end:
        return [(start, end)]
    return [r for r in ((start, lo), (hi, end)) if r[0] < r[1]]


async def erase_removed(state: NodeState) -> None:
    """Erase the replicas `sync_groups` found removed (the group no longer hosted here)."""
    while state.erasing:
        group, ranges = next(iter(state.erasing.items()))
        if state.replicas is None or not state.replicas.hosts(group):
            await state.engine.erase_group(group, ranges)
            log.info("group %s: this node's replica was removed; erased %d key ranges", group, len(ranges))
        state.erasing.pop(group, None)


def table_nodes(state: NodeState, table_id: int) -> frozenset[str]:
    """The nodes a hosted table's partitions are on (full members and those being
    built), from the table record this node last read."""
    hosted = state.hosted.get(table_id)
    if hosted is None:
        return frozenset()
    return frozenset().union(*(data_members(p) for p in hosted.record.partitions))


def shard_exposure(
    state: NodeState, table_id: int, shard: frozenset[str], candidates: Sequence[str], bound: int
) -> Mapping[str, int]:
    """How many other tables' partitions the table's shard would hold past `bound` with
    each candidate node added to it, from the tables this node last read (or, hosting
    by assignment, the placements the operator last published)."""
    return added_exposure(shard, candidates, _other_replica_sets(state, table_id), bound)


def _other_replica_sets(state: NodeState, table_id: int) -> Iterator[frozenset[str]]:
    if state.tables:
        return (data_members(p) for t in state.tables if t.table_id != table_id for p in t.partitions)
    placed = state.published_placements
    return (members for t, sets in placed.items() if t != table_id for members in sets)


def led_groups(state: NodeState) -> dict[GroupId, tuple[int, Partition]]:
    """The groups the repair loop looks after: all but retiring split parents."""
    return {g: placed for g, placed in state.groups.items() if g not in state.retiring}


def _parent_group(table_id: int, child: Partition) -> GroupId:
    return group_of(table_id, child.parent)


def missed_split(state: NodeState, table_id: int, child: Partition) -> bool:
    """A split child this node never reached the parent's SPLIT entry for (it was down
    through the split, and the parent's group is gone): its data for the range may be
    stale, so it joins the child's group as a newcomer and is sent a snapshot."""
    if not child.parent_index or state.replicas is None:
        return False
    group = group_of(table_id, child.partition_id)
    if state.replicas.hosts(group) or state.engine.hard_state(group) is not None:
        return False
    return state.engine.applied_index(_parent_group(table_id, child)) < child.parent_index


def _children_waiting(
    state: NodeState, wanted: dict[GroupId, tuple[int, Partition]], now: float
) -> dict[GroupId, GroupId | None]:
    """Split children not to start yet, each with its parent's group when this node
    still runs it: the parent goes on until it has applied its SPLIT entry here, so a
    lagging replica catches up from the parent's leader and starts the child with the
    same data as every other member. After RETIRING_PATIENCE_SECONDS it gives up (the
    parent's leader may be gone) and the child starts as a newcomer."""
    assert state.replicas is not None
    out: dict[GroupId, GroupId | None] = {}
    for group, (table_id, p) in wanted.items():
        if not p.parent_index or state.replicas.hosts(group):
            continue
        parent = _parent_group(table_id, p)
        behind = state.engine.applied_index(parent) < p.parent_index
        if behind and state.replicas.hosts(parent) and parent in state.groups:
            since = state.retiring_since.setdefault(parent, now)
            if now - since <= RETIRING_PATIENCE_SECONDS:
                out[group] = parent
    return out


async def control_loop(state: NodeState, store: NodeStore) -> None:
    while True:
        try:
            tables = await store.list_tables()
            await reconcile_hosting(state, store, tables)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store is down: keep serving what we host
            log.warning("control store unavailable: %s", exc)
            await asyncio.sleep(1)
        await store.wait_for_change(RETIRING_RESYNC_SECONDS if state.retiring else CONTROL_RESYNC_SECONDS)


async def count_items(state: NodeState, publisher: StatsPublisher) -> float:
    """One pass over the partitions this node leads: count, then publish what changed.
    Returns the seconds spent counting: the node's own cost, which the pause after the
    pass is scaled by (waiting on the control store costs the node nothing, and counting
    it made the figures lag by many seconds whenever the store was slow)."""
    counting = 0.0
    for table_id, hosted in list(state.hosted.items()):
        for partition in hosted.partitions:
            if not state.leads(table_id, partition):
                continue
            started = time.monotonic()
            figures = await measure_partition(state.engine, table_id, partition)
            counting += time.monotonic() - started
            heat = state.heat.get((table_id, partition.partition_id))
            if heat is not None:
                figures = figures._replace(**heat_figures(heat, hosted.record, time.monotonic()))
            hosted_now = state.hosted.get(table_id)
            # Not dropped or split while it was being counted: a split parent's late
            # figures would outlive it in the store.
            if hosted_now is not None and any(
                p.partition_id == partition.partition_id for p in hosted_now.partitions
            ):
                state.partition_figures[(table_id, partition.partition_id)] = figures
                await publisher.publish(table_id, partition.partition_id, figures)
    for table_id in {t for t, _ in publisher.published} - set(state.hosted):
        publisher.forget(table_id)
    served = {(t, p.partition_id) for t, h in state.hosted.items() for p in h.partitions}
    state.heat = {k: v for k, v in state.heat.items() if k in served}
    return counting


def heat_figures(heat: PartitionHeat, record: TableRecord, now: float) -> dict[str, Any]:
    """The heat fields of a count, against the partition's allocation as of `record`
    (refreshed here: throughput and the partition count change it)."""
    heat.read_allocation = partition_rate(record, "read")
    heat.write_allocation = partition_rate(record, "write")
    report = heat.report(now)
    return {
        "hot_seconds": report.hot_seconds,
        "hot_split_hash": report.split_hash,
        "hot_single_key": report.single_key,
    }


async def stats_loop(state: NodeState, store: NodeStore, interval: float) -> None:
    publisher = StatsPublisher(store)
    while True:
        counting = 0.0
        try:
            counting = await count_items(state, publisher)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # figures are advisory: try again next pass
            log.warning("counting items failed: %s", exc)
        await asyncio.sleep(next_pass_delay(interval, counting))


async def serve(
    *,
    node_id: str,
    zone: str,
    host: str,
    port: int,
    data_port: int,
    data_dir: Path,
    store: NodeStore,
    sync: bool = True,
    stats_interval: float = config.DEFAULT_STATS_INTERVAL_SECONDS,
    ttl_sweep_interval: float = config.DEFAULT_TTL_SWEEP_INTERVAL_SECONDS,
    metrics_port: int | None = None,
    replication: bool = False,
    admission: bool = False,
    replica_down_after: float = config.DEFAULT_REPLICA_DOWN_AFTER_SECONDS,
    hosting: str = "control",
    replication_listen: tuple[str, int] | None = None,
    replication_advertise: str | None = None,
    leader_rebalance: bool = True,
    attach: Attach | None = None,
    node_units: dict[UnitKind, float] | None = None,
    load_report_interval: float = config.DEFAULT_LOAD_REPORT_SECONDS,
    shard_max_shared: int = config.DEFAULT_SHARD_MAX_SHARED,
) -> None:
    """`hosting`: "control" follows the control store's placement (the local cluster);
    "admin" hosts exactly what the admin RPC assigned (Kubernetes: the operator).
    `replication_listen`: where peers' replication streams are accepted (default: `host`
    and a free port); `replication_advertise`: the host:port registered for them
    (default: the listener's; Kubernetes: the pod's DNS name and the fixed port).
    `leader_rebalance`: hand led groups back to their preferred leaders (`leader_balance`).
    `attach`: started with this node's in-process data channel and data address once the
    node serves (a router in the same process, `partita storage --router-port`); what it
    returns is awaited first when the node stops. `node_units`: the node's capacity, RCU
    and WCU a second: its buckets' rates and what its load reports are measured against;
    `load_report_interval`: seconds between those reports (0: none). `shard_max_shared`:
    the shuffle-shard bound a member added outside its table's shard keeps to where it
    can (`shard_bound`)."""
    engine = Engine.open(data_dir, sync=sync)
    if not engine.stopped_cleanly:
        forgotten = await engine.forget_leadership(node_id)
        if forgotten:
            log.info("not after a clean stop: %d groups led here will elect their leader", forgotten)
    state = NodeState(node_id=node_id, zone=zone, engine=engine, ids_with_data=engine.table_ids())
    peers = PeerDirectory()

    def peer_liveness(peer: str, alive: bool) -> None:
        # A broken stream to a peer whose listener refuses: its quiesced groups' followers
        # campaign now instead of after its registration's TTL.
        replicas.multi.node_liveness(peer, alive, time.monotonic())
        replicas.wake()

    transport = PeerTransport(
        peers.replication_address,
        lambda envelope: replicas.receive(envelope),
        peer_liveness,
        node_id=node_id,
    )

    def group_range(group: GroupId) -> tuple[bytes, bytes] | None:
        placed = state.groups.get(group)
        return keys.hash_range_bounds(placed[0], placed[1].start, placed[1].end) if placed else None

    replicas = ReplicaHost(
        node_id,
        engine,
        transport.send,
        ranges=group_range,
        snapshot_dir=data_dir / "snapshots",
    )
    # Off: every hosted replica commits alone.
    state.replicas = replicas if replication else None
    listen_host, listen_port = replication_listen or (host, 0)
    replication_port = await transport.listen(listen_host, listen_port)
    # A wildcard listener is reached at the node's own host.
    reachable = host if listen_host in ("", "0.0.0.0", "::") else listen_host
    replication_address = replication_advertise or f"{reachable}:{replication_port}"
    metrics.watch_node(state)
    exporter = await serve_metrics(host, metrics_port) if metrics_port is not None else None
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_StorageServicer_to_server(StorageService(state), server)  # type: ignore[no-untyped-call]
    by_assignment = (
        admin_server.AdminHosting(state, AssignmentBook.open(data_dir), peers.assign)
        if hosting == "admin"
        else None
    )
    checker = admin_server.add_to_server(server, by_assignment)
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    now = time.monotonic()
    capacity = node_units or DEFAULT_NODE_UNITS
    buckets = StorageAdmission(now, node_units=capacity, start_full=True) if admission else None
    if buckets is not None:
        metrics.watch_admission(buckets)
    plane = DataPlane(state, buckets)
    data_server = await start_data_server(plane, host, data_port)
    data_bound = data_server.sockets[0].getsockname()[1]
    address = f"{host}:{bound}"
    record = NodeRecord(
        node_id,
        zone,
        address,
        f"{host}:{data_bound}",
        os.getpid(),
        replication_address=replication_address,
    )
    await store.register_node(record, NODE_TTL_SECONDS)
    await peers.refresh(store, replicas)
    replicas.start()
    # Repair writes what it decides into partition objects in the control store; under
    # the operator (admin hosting) the Partition resources are the operator's, so the
    # leader publishes the membership for the nodes and the operator to follow.
    writer: PartitionWriter = store
    if by_assignment is not None:
        writer = MembershipPublisher(
            store,
            by_assignment,
            lambda: peers.zones,
            peers.replication_address,
            lambda group: replicas.multi.replicas[group].term,
        )
    repair = RepairDriver(
        replicas,
        writer,
        RepairConfig(down_after=replica_down_after),
        draining=lambda: peers.draining,
        table_nodes=lambda table_id: table_nodes(state, table_id),
        moves=lambda: peers.moves,
        exposure=lambda table_id, shard, candidates: shard_exposure(
            state, table_id, shard, candidates, shard_max_shared
        ),
    )
    state.repair = repair
    # Serve only once the hosting reflects the store, so no request is refused as
    # WRONG_PARTITION merely because the node has just started.
    poller: asyncio.Task[None] | None = None  # the operator drives hosting by assignment
    if by_assignment is not None:
        try:  # a member removed while this node was down erases its replica before serving it
            published: dict[str, bytes] | None = await store.list_memberships()
        except Exception as exc:
            log.warning("published memberships unavailable at start: %s", exc)
            published = None
        await by_assignment.start(published)
        poller = asyncio.create_task(follow_memberships(by_assignment, store))
    else:
        await reconcile_hosting(state, store, await store.list_tables())
        poller = asyncio.create_task(control_loop(state, store))
    await admin_server.set_serving(checker, True)
    detach = await attach(LocalDataChannel(plane), record.data_address) if attach is not None else None
    watching_peers = asyncio.create_task(peers.follow(store, replicas))
    repairing = asyncio.create_task(
        repair.run(lambda: led_groups(state), lambda: peers.zones, lambda: frozenset(peers.addresses))
    )
    balancer = LeaderBalanceDriver(
        replicas,
        # A draining node is handed no leadership (its own are handed away by repair).
        lambda: {
            n: a
            for n, a in peers.addresses.items()
            if n not in transport.suspected and n not in peers.draining
        },
        lambda group: kept_from_rebalance(state, peers, group),
    )
    metrics.watch_leader_balance(state, balancer)
    rebalancing = asyncio.create_task(balancer.run()) if leader_rebalance and replication else None
    counter = asyncio.create_task(stats_loop(state, store, stats_interval))
    # Ends at once when reports are off (an interval of 0).
    reporting = asyncio.create_task(
        report_load(LoadWindow(node_id, capacity["read"], capacity["write"]), store, load_report_interval)
    )
    # The sweeper plans its deletes through a plane of its own without buckets: DynamoDB
    # does not charge TTL deletes, and they must not crowd out the clients' throughput.
    ttl_sweeper = TtlSweeper(state, DataPlane(state), SweepPacer(ttl_sweep_interval))
    metrics.watch_ttl_sweeper(state, ttl_sweeper)
    sweeping = asyncio.create_task(ttl_sweeper.run())
    trimming = asyncio.create_task(StreamTrimmer(state, DataPlane(state)).run())
    log.info(
        "storage node %s (zone %s): admin %s, data %s, metrics %s",
        node_id,
        zone,
        address,
        record.data_address,
        f"http://{host}:{metrics_port}/metrics" if metrics_port is not None else "off",
    )
    stop = asyncio.Event()
    # SIGTERM stops this node alone (a rolling restart, a pod deleted): its groups' leadership
    # moves to the others first. SIGINT says the whole cluster is stopping (`partita up`
    # stops its storage nodes together): handing off to nodes that are going down too
    # would only pile every group on the last one to stop, and the cluster would start
    # again with one node leading nearly all of them; kept, each leader resumes its term
    # on restart, so the cluster comes back as balanced as it stopped. (PostgreSQL's
    # "smart" and "fast" shutdowns are the same two signals.)
    handing_off = True

    def stop_with_the_cluster() -> None:
        nonlocal handing_off
        handing_off = False
        stop.set()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop_with_the_cluster)
    await stop.wait()
    started = time.monotonic()
    if detach is not None:
        await detach()
    await admin_server.set_serving(checker, False)
    if rebalancing is not None:
        rebalancing.cancel()  # before the handoff, which it would work against
    if handing_off:
        await hand_off_leadership(replicas)
    else:
        log.info(
            "the cluster is stopping: keeping the leadership of %d groups", len(replicas.multi.leading())
        )
    repairing.cancel()
    watching_peers.cancel()
    if poller is not None:
        poller.cancel()
    counter.cancel()
    reporting.cancel()
    sweeping.cancel()
    trimming.cancel()
    data_server.close()
    if exporter is not None:
        exporter.close()
    await server.stop(grace=2)
    await replicas.stop()
    await transport.close()
    # Marked a clean stop unless a round's write was cut short: the next start's
    # leaders resume their terms only then.
    await engine.close(clean=not replicas.stopped_mid_write)
    await store.close()
    log.info("storage node %s stopped cleanly in %.2fs", node_id, time.monotonic() - started)
