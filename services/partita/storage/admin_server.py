"""The storage admin gRPC service (`partita storage --hosting admin`): the Kubernetes
operator tells the node which replicas to host (HostReplica), to drop them with their
data (DropReplica), and reads their state back (Report). The standard grpc.health.v1
service on the same port answers the StatefulSet's readiness probe.

Every call is idempotent: hosting what is hosted, or dropping what is gone, changes
nothing and answers the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, cast

import grpc
import orjson
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from partita._proto import admin_pb2 as pb
from partita._proto import admin_pb2_grpc as pb_grpc
from partita.common import config, keys
from partita.common.partition_map import HASH_SPACE
from partita.control.model import BillingMode, KeyElement, PointInTimeRecovery, StreamSpec
from partita.storage import metrics
from partita.storage.assignments import (
    FULL,
    ROLES,
    Assignment,
    AssignmentBook,
    TableInfo,
    current,
    hosted_tables,
    peer_addresses,
    superseded,
    table_records,
)
from partita.storage.effects import Effect, Kind
from partita.storage.group_log import group_of
from partita.storage.table_stats import Figures

if TYPE_CHECKING:
    from partita.storage.node import NodeState

log = logging.getLogger(__name__)

HOSTED = "Hosted"
UNKNOWN = "Unknown"
KEY_TYPES = ("S", "N", "B")
BILLING_MODES = ("PAY_PER_REQUEST", "PROVISIONED")


class InvalidAssignment(ValueError):
    """A HostReplica request that cannot describe a replica (INVALID_ARGUMENT)."""


def assignment_of(request: pb.HostReplicaRequest) -> Assignment:
    """Check and convert a HostReplica request (the operator is trusted, but a bad
    request must be refused whole, never half-applied)."""
    t = request.table
    if not request.partition or not t.table_name:
        raise InvalidAssignment("partition and table name are required")
    if not request.members:
        raise InvalidAssignment("a replica needs at least one member")
    if request.start > request.last:
        raise InvalidAssignment(f"bad hash range [{request.start:#x}, {request.last:#x}]")
    if t.billing_mode not in BILLING_MODES:
        raise InvalidAssignment(f"unknown billing mode {t.billing_mode!r}")
    table = TableInfo(
        table_id=t.table_id,
        name=t.table_name,
        partition_key=_key(t.partition_key),
        sort_key=_key(t.sort_key) if t.HasField("sort_key") else None,
        billing_mode=cast(BillingMode, t.billing_mode),
        read_capacity=t.read_capacity,
        write_capacity=t.write_capacity,
        created_at=t.created_at,
        ttl_attribute=t.ttl_attribute or None,
        stream=StreamSpec.from_json(orjson.loads(t.stream)) if t.stream else StreamSpec(),
        point_in_time=(
            PointInTimeRecovery.from_json(orjson.loads(t.point_in_time))
            if t.point_in_time
            else PointInTimeRecovery()
        ),
    )
    members = tuple(m.node for m in request.members)
    if len(set(members)) != len(members):
        raise InvalidAssignment(f"members repeat: {list(members)}")
    for m in request.members:
        if m.role and m.role not in ROLES:
            raise InvalidAssignment(f"member {m.node}: unknown role {m.role!r}")
    if all(m.role not in ("", FULL) for m in request.members):
        raise InvalidAssignment("a replica needs at least one full member")
    addresses = tuple(
        (m.node, _address(m.replication_address)) for m in request.members if m.replication_address
    )
    roles = tuple((m.node, m.role) for m in request.members if m.role not in ("", FULL))
    if request.split_at and not request.start < request.split_at <= request.last:
        raise InvalidAssignment(f"split point {request.split_at:#x} outside the range")
    if request.parent and not request.parent_index:
        raise InvalidAssignment("a split child needs its parent's split index")
    return Assignment(
        request.partition,
        table,
        request.start,
        request.last + 1,
        members,
        addresses,
        roles,
        split_at=request.split_at,
        parent=request.parent,
        parent_index=request.parent_index,
        replication_factor=request.replication_factor,
    )


def request_of(assignment: Assignment, zones: Mapping[str, str]) -> pb.HostReplicaRequest:
    """The HostReplica request that gives `assignment` (what a leader publishes)."""
    t = assignment.table
    table = pb.TableInfo(
        table_id=t.table_id,
        table_name=t.name,
        partition_key=pb.KeyAttribute(name=t.partition_key.name, type=t.partition_key.type),
        billing_mode=t.billing_mode,
        read_capacity=t.read_capacity,
        write_capacity=t.write_capacity,
        created_at=t.created_at,
        ttl_attribute=t.ttl_attribute or "",
        stream=orjson.dumps(t.stream.to_json()).decode() if t.stream.exists else "",
        point_in_time=orjson.dumps(t.point_in_time.to_json()).decode()
        if t.point_in_time.ever_enabled
        else "",
    )
    if t.sort_key is not None:
        table.sort_key.CopyFrom(pb.KeyAttribute(name=t.sort_key.name, type=t.sort_key.type))
    addresses = dict(assignment.addresses)
    return pb.HostReplicaRequest(
        partition=assignment.partition,
        table=table,
        start=assignment.start,
        last=assignment.end - 1,
        members=[
            pb.Member(
                node=m,
                zone=zones.get(m, ""),
                role=assignment.role_of(m),
                replication_address=addresses.get(m, ""),
            )
            for m in assignment.members
        ],
        replication_factor=assignment.replication_factor,
        split_at=assignment.split_at,
        parent=assignment.parent,
        parent_index=assignment.parent_index,
    )


def _address(address: str) -> str:
    """A member's replication address must be host:port (the replica host dials it)."""
    if not config.is_host_port(address):
        raise InvalidAssignment(f"bad replication address {address!r}: want host:port")
    return address


def _key(key: pb.KeyAttribute) -> KeyElement:
    if not key.name or key.type not in KEY_TYPES:
        raise InvalidAssignment(f"bad key attribute {key.name!r} of type {key.type!r}")
    return KeyElement(key.name, cast(Literal["S", "N", "B"], key.type))


class AdminHosting:
    """Applies assignments to the node's serving state and its assignment book.

    `on_peers` receives the members' replication addresses the assignments carry
    whenever they change hands (the node's peer directory dials them)."""

    def __init__(
        self,
        state: NodeState,
        book: AssignmentBook,
        on_peers: Callable[[Mapping[str, str]], None] = lambda addresses: None,
    ) -> None:
        self.state = state
        self.book = book
        self.on_peers = on_peers
        # The memberships the groups' leaders published (`apply_published`), by partition:
        # a running group's leader, not the operator's placement, says who its members are.
        self.published: dict[str, Assignment] = {}

    async def start(self, published: Mapping[str, bytes] | None = None) -> None:
        """Serve what the book holds, as the published memberships have changed it
        while this node was down, and delete the data of tables the node was told to
        drop (or never given) before a crash let it finish."""
        if published:
            await self.apply_published(published, rehost=False)
        self._rehost()
        assigned = {a.table.table_id for a in self.book.assignments.values()}
        for table_id in sorted(self.state.ids_with_data - assigned):
            lo, hi = keys.table_bounds(table_id)
            await self.state.engine.commit([Effect(Kind.DELETE_RANGE, lo, hi)])
            self.state.ids_with_data.discard(table_id)
            log.info("deleted the data of table %d, which no assignment names", table_id)

    def host(self, assignment: Assignment) -> None:
        """The operator's assignment. Of a partition whose leader published its
        membership, the members are the published ones (the operator adopts them)."""
        published = self.published.get(assignment.partition)
        if published is not None:
            assignment = assignment.with_members_of(published)
        if self.state.node_id not in assignment.members:
            raise InvalidAssignment(f"{self.state.node_id} is not a member of {assignment.partition}")
        self._put(assignment)

    def adopt(self, assignment: Assignment) -> None:
        """A membership this node published as the group's leader: its own replica's
        assignment follows at once (the other members' follow from the store)."""
        self.published[assignment.partition] = assignment
        self._put(assignment)

    def _put(self, assignment: Assignment) -> None:
        if self.book.put(assignment):
            self._rehost()
            log.info(
                "hosting %s of table %d (%s)",
                assignment.partition,
                assignment.table.table_id,
                ", ".join(f"{m} {assignment.role_of(m)}" for m in assignment.members),
            )

    async def apply_published(self, records: Mapping[str, bytes], rehost: bool = True) -> None:
        """Follow the memberships the groups' leaders published (docs/kubernetes.md,
        "Repair"): host a replica a record names this node a member of (a member added
        by repair starts at once, as a newcomer), take new members and roles into one
        hosted, and drop (erase) a replica a record no longer names, as the local
        cluster's nodes do when a partition object stops naming them."""
        changed = False
        for partition, data in records.items():
            try:
                request = pb.PublishedMembership.FromString(data).assignment
                published = assignment_of(request)
            except Exception as exc:  # a damaged record must not stop the others
                log.warning("published membership of %s unreadable: %s", partition, exc)
                continue
            self.published[partition] = published
            held = self.book.assignments.get(partition)
            if self.state.node_id in published.members:
                if held is not None:
                    # The operator's table settings (throughput, TTL) stay the held ones.
                    published = held.with_members_of(published)
                if self.book.put(published):
                    changed = True
                    log.info(
                        "member of %s as %s (published by its leader)",
                        partition,
                        published.role_of(self.state.node_id),
                    )
            elif held is not None:
                log.info("removed from %s by its leader: dropping the replica", partition)
                await self.drop(partition)
        for partition in [p for p in self.published if p not in records]:
            del self.published[partition]
        if changed and rehost:
            self._rehost()

    async def drop(self, partition: str) -> None:
        assignment = self.book.assignments.get(partition)
        if assignment is None:
            return
        if partition in superseded(self.book.assignments.values()):
            # A split parent whose children this node hosts: they start from its data at
            # the split, so nothing is erased; its group runs on while a child waits for
            # it (`node.sync_groups`).
            self.book.remove(partition)
            self.published.pop(partition, None)
            self._rehost()
            log.info("retired split parent %s; its children hold its data", partition)
            return
        table_id = assignment.table.table_id
        # Stop serving first, delete the data, then forget the assignment: a crash in
        # between re-hosts an emptied replica, and the operator's retry drops it again.
        self._rehost(without=partition)
        end = min(assignment.end, HASH_SPACE)
        lo, hi = keys.hash_range_bounds(table_id, assignment.start, end)
        # The replica's data, position and log go together and durably (a restart
        # neither replays its WAL entries over the emptied range nor finds its position).
        await self.state.engine.erase_group(group_of(table_id, partition), ((lo, hi),))
        self.state.partition_figures.pop((table_id, partition), None)
        self.book.remove(partition)
        if table_id not in self.state.hosted:
            self.state.ids_with_data.discard(table_id)
            metrics.forget_table(table_id, assignment.table.name)
        log.info("dropped %s of table %d and its data", partition, table_id)

    def report(self, partition: str) -> pb.ReplicaReport:
        assignment = self.book.assignments.get(partition)
        if assignment is None:
            return pb.ReplicaReport(partition=partition, state=UNKNOWN)
        table_id = assignment.table.table_id
        out = pb.ReplicaReport(partition=partition, table_id=table_id, state=HOSTED)
        figures = self.state.partition_figures.get((table_id, partition))
        if figures is not None:
            _report_figures(out, figures)
        p = assignment.as_partition()
        group = self.state.replicated_group(table_id, p)
        leadership = self.state.replicas.leadership(group) if group and self.state.replicas else None
        if leadership is None:
            out.leader = p.leader or ""  # one replica, or groups not running: placement's
            return out
        out.leader = leadership.leader or ""
        out.term = leadership.term
        out.commit_index = leadership.commit
        out.applied_index = leadership.applied
        out.lag = max(0, leadership.commit - leadership.applied)
        return out

    def start_waiting_children(self) -> None:
        """Start the split children that waited for this replica of their parent to
        apply the SPLIT entry (or for the patience to run out): nothing else re-runs the
        hosting while the assignments stand still."""
        if self.state.retiring:
            self._rehost()

    def _rehost(self, without: str | None = None) -> None:
        """Serve the book's assignments (but `without`, one being dropped)."""
        given = [a for name, a in self.book.assignments.items() if name != without]
        self.state.hosted = hosted_tables(given, self.state.node_id)
        self.state.ids_with_data |= set(self.state.hosted)
        # Addresses first: a group added below sends its first votes at once.
        self.on_peers(peer_addresses(given))
        if self.state.replicas is None:
            return
        # Every group this node is a member of, in any role, as the local cluster's nodes
        # run them: a member added to a running group starts empty, as a newcomer; a split
        # child starts once this replica has applied its parent up to the split (the
        # parent's group runs on until then). Imported here: node.py builds this class.
        from partita.storage.node import sync_groups

        sync_groups(self.state, table_records(current(given)))


class StorageAdminService(pb_grpc.StorageAdminServicer):
    def __init__(self, hosting: AdminHosting) -> None:
        self.hosting = hosting

    async def HostReplica(
        self, request: pb.HostReplicaRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReplicaReport:
        try:
            assignment = assignment_of(request)
            self.hosting.host(assignment)
        except InvalidAssignment as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        return self.hosting.report(request.partition)

    async def DropReplica(
        self, request: pb.DropReplicaRequest, context: grpc.aio.ServicerContext
    ) -> pb.DropReplicaResponse:
        await self.hosting.drop(request.partition)
        return pb.DropReplicaResponse(dropped=request.partition not in self.hosting.book.assignments)

    async def Report(self, request: pb.ReportRequest, context: grpc.aio.ServicerContext) -> pb.ReportResponse:
        names = list(request.partitions) or sorted(self.hosting.book.assignments)
        return pb.ReportResponse(
            node_id=self.hosting.state.node_id, replicas=[self.hosting.report(n) for n in names]
        )


def add_to_server(server: grpc.aio.Server, hosting: AdminHosting | None) -> health.aio.HealthServicer:
    """Register the admin service (when hosting by assignment) and the health service;
    the caller marks health SERVING once the node serves."""
    if hosting is not None:
        pb_grpc.add_StorageAdminServicer_to_server(StorageAdminService(hosting), server)  # type: ignore[no-untyped-call]
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    return checker


async def set_serving(checker: health.aio.HealthServicer, serving: bool) -> None:
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    await checker.set("", status)


def _report_figures(out: pb.ReplicaReport, figures: Figures) -> None:
    """A count's figures into a report (the operator's split decisions read them)."""
    out.item_count, out.size_bytes = figures.item_count, figures.size_bytes
    if figures.split_hash is not None:
        out.split_hash = figures.split_hash
    out.single_key = figures.single_key
    out.hot_seconds = figures.hot_seconds
    if figures.hot_split_hash is not None:
        out.hot_split_hash = figures.hot_split_hash
    out.hot_single_key = figures.hot_single_key
