"""The storage node process: the engine, its data server, an admin gRPC server, and
the hosting loop that follows the control store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from partita._proto import storage_pb2 as pb
from partita._proto import storage_pb2_grpc as pb_grpc
from partita.common import config, keys
from partita.common.metrics import serve_metrics
from partita.common.partition_map import Partition
from partita.control.model import NodeRecord, TableRecord
from partita.control.store import NodeStore
from partita.storage import metrics
from partita.storage.admission import StorageAdmission
from partita.storage.data_server import DataPlane, start_data_server
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from partita.storage.hosting import HostedTable, desired_hosting, tables_to_drop
from partita.storage.peer_transport import PeerTransport
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.types import GroupId
from partita.storage.table_stats import StatsPublisher, leads, measure_partition, next_pass_delay
from partita.storage.ttl_sweep import SweepPacer
from partita.storage.ttl_sweeper import TtlSweeper

log = logging.getLogger(__name__)

# The node re-reads the control store when a watch says it changed, and at least this
# often regardless (constant work: a lost watch event delays a change, never loses it).
CONTROL_RESYNC_SECONDS = 1.0
# TTL of the node's registration lease in the control store.
NODE_TTL_SECONDS = 10
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
    # (item count, bytes) of the partitions this node leads, at their last count.
    partition_figures: dict[tuple[int, str], tuple[int, int]] = field(default_factory=dict)

    # Drives the replication groups of the partitions placed on several nodes; the
    # partitions with one replica commit locally without it.
    replicas: ReplicaHost | None = None

    def owner(self, request: pb.Request) -> Partition | None:
        """The hosted partition holding the request's key; None if this node has none."""
        hosted = self.hosted.get(request.table_id)
        return hosted.owner_of(request.key_hash) if hosted is not None else None

    def replicated_group(self, table_id: int, partition: Partition) -> GroupId | None:
        """The partition's replication group if it has several replicas (and so goes
        through consensus); None for a single-replica partition."""
        if self.replicas is None or len(partition.replicas) < 2:
            return None
        group = group_of(table_id, partition.partition_id)
        return group if self.replicas.hosts(group) else None

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
        await state.engine.commit([Effect(Kind.DELETE_RANGE, lo, hi)])
        for group in state.engine.groups():
            if group.startswith(f"{table_id}/"):
                state.engine.forget_group(group)
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
    state.hosted = desired_hosting(tables, state.node_id)
    sync_groups(state)
    for table_id, hosted in state.hosted.items():
        state.ids_with_data.add(table_id)
        for p in hosted.partitions:
            if (table_id, p.partition_id) not in state.ready:
                await store.mark_ready(table_id, p.partition_id, state.node_id)
                state.ready.add((table_id, p.partition_id))


class PeerDirectory:
    """Where the other storage nodes' replication streams are, and which are alive,
    from their registrations in the control store (leases: a SIGKILLed node's record
    disappears within NODE_TTL_SECONDS). Liveness wakes the followers of quiesced
    groups whose leader's node died."""

    def __init__(self) -> None:
        self.addresses: dict[str, str] = {}

    def replication_address(self, node_id: str) -> str | None:
        return self.addresses.get(node_id)

    async def refresh(self, store: NodeStore, replicas: ReplicaHost) -> None:
        nodes = {n.node_id: n.replication_address for n in await store.list_nodes() if n.replication_address}
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


async def hand_off_leadership(replicas: ReplicaHost) -> None:
    """SIGTERM: move every group this node leads to its most up-to-date follower, and
    wait (bounded by an election timeout) until it leads none."""
    now = time.monotonic()
    led = len(replicas.multi.leading())
    for group in replicas.multi.leading():
        replica = replicas.multi.replicas[group]
        followers = [(pr.match, peer) for peer, pr in replica.progress.items() if peer != replicas.node_id]
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


def sync_groups(state: NodeState) -> None:
    """Host a replica of every hosted partition placed on several nodes; stop hosting
    the groups of partitions that left (a split's parent, a dropped table)."""
    if state.replicas is None:
        return
    wanted: dict[GroupId, list[str]] = {}
    for table_id, hosted in state.hosted.items():
        for p in hosted.partitions:
            if len(p.replicas) > 1:
                wanted[group_of(table_id, p.partition_id)] = list(p.replicas)
    for group in [g for g in state.replicas.multi.replicas if g not in wanted]:
        state.replicas.remove_group(group)
    for group, members in wanted.items():
        state.replicas.add_group(group, members)


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
        await store.wait_for_change(CONTROL_RESYNC_SECONDS)


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
            if table_id in state.hosted:  # not dropped while it was being counted
                state.partition_figures[(table_id, partition.partition_id)] = figures
                await publisher.publish(table_id, partition.partition_id, figures)
    for table_id in {t for t, _ in publisher.published} - set(state.hosted):
        publisher.forget(table_id)
    return counting


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
) -> None:
    engine = Engine.open(data_dir, sync=sync)
    state = NodeState(node_id=node_id, zone=zone, engine=engine, ids_with_data=engine.table_ids())
    peers = PeerDirectory()
    transport = PeerTransport(peers.replication_address, lambda envelope: replicas.receive(envelope))
    replicas = ReplicaHost(node_id, engine, transport.send)
    # Off: every hosted replica commits alone (Kubernetes places three replicas per
    # partition but does not run the groups yet).
    state.replicas = replicas if replication else None
    replication_port = await transport.listen(host, 0)
    metrics.watch_node(state)
    exporter = await serve_metrics(host, metrics_port) if metrics_port is not None else None
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_StorageServicer_to_server(StorageService(state), server)  # type: ignore[no-untyped-call]
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    now = time.monotonic()
    buckets = StorageAdmission(now, start_full=True) if admission else None
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
        replication_address=f"{host}:{replication_port}",
    )
    await store.register_node(record, NODE_TTL_SECONDS)
    await peers.refresh(store, replicas)
    replicas.start()
    # Serve only once the hosting reflects the store, so no request is refused as
    # WRONG_PARTITION merely because the node has just started.
    await reconcile_hosting(state, store, await store.list_tables())
    poller = asyncio.create_task(control_loop(state, store))
    watching_peers = asyncio.create_task(peers.follow(store, replicas))
    counter = asyncio.create_task(stats_loop(state, store, stats_interval))
    # The sweeper plans its deletes through a plane of its own without buckets: DynamoDB
    # does not charge TTL deletes, and they must not crowd out the clients' throughput.
    ttl_sweeper = TtlSweeper(state, DataPlane(state), SweepPacer(ttl_sweep_interval))
    metrics.watch_ttl_sweeper(state, ttl_sweeper)
    sweeping = asyncio.create_task(ttl_sweeper.run())
    log.info(
        "storage node %s (zone %s): admin %s, data %s, metrics %s",
        node_id,
        zone,
        address,
        record.data_address,
        f"http://{host}:{metrics_port}/metrics" if metrics_port is not None else "off",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    started = time.monotonic()
    await hand_off_leadership(replicas)
    watching_peers.cancel()
    poller.cancel()
    counter.cancel()
    sweeping.cancel()
    data_server.close()
    if exporter is not None:
        exporter.close()
    await server.stop(grace=2)
    await replicas.stop()
    await transport.close()
    await engine.close()
    await store.close()
    log.info("storage node %s stopped cleanly in %.2fs", node_id, time.monotonic() - started)
