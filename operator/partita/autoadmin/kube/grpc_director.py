"""`ReplicaDirector` over the storage nodes' admin gRPC (proto/partita/admin.proto).

A node name (the StatefulSet pod's name) becomes an address through `resolve`: in a
cluster, the pod's DNS name in its zone's headless Service (`Fleet.nodes()`); tests
inject 127.0.0.1 ports. One channel per address, kept. Every call has a deadline; a
node that cannot be reached is reported Requested (asked, not confirmed), never a
handler that hangs.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence

import grpc
import orjson

from partita._proto import admin_pb2 as pb
from partita._proto import admin_pb2_grpc as pb_grpc
from partita.autoadmin.kube.decisions import ROLES, Member, MemberState
from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.replicas import PartitionRef, PartitionReport, ReplicaReport
from partita.control.model import TableSpec
from partita.control.store import Memberships

log = logging.getLogger(__name__)

CALL_TIMEOUT_SECONDS = 5.0
# A replica more than this many entries behind its commit index is catching up (a
# snapshot or a long log to apply). Under writes a follower is routinely a few entries
# behind for the moment of one pump round, which is serving, not catching up: a
# threshold of 0 flapped partitions between Serving and Degraded under load.
SERVING_LAG = 100


def fleet_resolver(fleet: Fleet) -> Callable[[str], str | None]:
    """Node name -> admin address of the fleet's pods (None: not a node of the fleet)."""
    addresses = {n.node_id: n.address for n in fleet.nodes()}
    return addresses.get


def fleet_replication_resolver(fleet: Fleet) -> Callable[[str], str | None]:
    """Node name -> replication address of the fleet's pods (their pod DNS names)."""
    addresses = {n.node_id: n.replication_address for n in fleet.nodes() if n.replication_address}
    return addresses.get


def host_request(
    partition: PartitionRef,
    spec: TableSpec,
    members: Sequence[Member],
    replication_address: Callable[[str], str | None] = lambda node: None,
) -> pb.HostReplicaRequest:
    """Every member gets the same request: the same members, each with the address its
    peers dial for replication (empty when unknown: the node's registration says)."""
    table = pb.TableInfo(
        table_id=spec.table_id,
        table_name=spec.name,
        partition_key=pb.KeyAttribute(name=spec.partition_key.name, type=spec.partition_key.type),
        billing_mode=spec.billing_mode,
        read_capacity=spec.read_capacity,
        write_capacity=spec.write_capacity,
        created_at=spec.created_at,
        ttl_attribute=(spec.time_to_live.attribute_name or "") if spec.time_to_live.active else "",
        stream=orjson.dumps(spec.stream.to_json()).decode() if spec.stream.exists else "",
        point_in_time=(
            orjson.dumps(spec.point_in_time.to_json()).decode() if spec.point_in_time.ever_enabled else ""
        ),
    )
    if spec.sort_key is not None:
        table.sort_key.CopyFrom(pb.KeyAttribute(name=spec.sort_key.name, type=spec.sort_key.type))
    return pb.HostReplicaRequest(
        partition=partition.name,
        table=table,
        start=partition.start,
        last=partition.last,
        members=[
            pb.Member(
                node=m.node, zone=m.zone, role=m.role, replication_address=replication_address(m.node) or ""
            )
            for m in members
        ],
        replication_factor=partition.replication_factor,
        split_at=partition.split_at,
        parent=partition.parent,
        parent_index=partition.parent_index,
    )


def member_state(report: pb.ReplicaReport) -> MemberState:
    if report.state != "Hosted":
        return "Requested"
    if not report.leader or report.lag > SERVING_LAG:
        return "CatchingUp"  # electing, or applying what it knows committed
    return "Serving"


def summarize(reports: dict[str, pb.ReplicaReport | None], failed: set[str]) -> PartitionReport:
    """The members' answers as one report: the leader is the one a member claims for
    itself, else the one most members name; figures are the leader's (leaders count)."""
    replicas: dict[str, ReplicaReport] = {}
    for node, report in reports.items():
        if node in failed:
            replicas[node] = ReplicaReport("Failed")
        elif report is None:
            replicas[node] = ReplicaReport("Requested")
        else:
            replicas[node] = ReplicaReport(member_state(report), int(report.lag))
    answered = {n: r for n, r in reports.items() if r is not None and r.state == "Hosted"}
    self_claimed = [n for n, r in answered.items() if r.leader == n]
    named = Counter(r.leader for r in answered.values() if r.leader)
    leader = self_claimed[0] if self_claimed else (named.most_common(1)[0][0] if named else None)
    figures = answered.get(leader) if leader is not None else None
    if figures is None:
        return PartitionReport(replicas=replicas, leader=leader)
    return PartitionReport(
        replicas=replicas,
        leader=leader,
        item_count=int(figures.item_count),
        size_bytes=int(figures.size_bytes),
        split_hash=int(figures.split_hash) if figures.HasField("split_hash") else None,
        single_key=figures.single_key,
        term=int(figures.term),
        commit_index=int(figures.commit_index),
        hot_seconds=float(figures.hot_seconds),
        hot_split_hash=int(figures.hot_split_hash) if figures.HasField("hot_split_hash") else None,
        hot_single_key=figures.hot_single_key,
    )


def published_members(record: bytes) -> tuple[Member, ...]:
    """The members of a PublishedMembership record (roles full, joining or log)."""
    published = pb.PublishedMembership.FromString(record)
    return tuple(
        Member(m.node, m.zone, m.role if m.role in ROLES else "full") for m in published.assignment.members
    )


class GrpcReplicaDirector:
    def __init__(
        self,
        resolve: Callable[[str], str | None],
        timeout: float = CALL_TIMEOUT_SECONDS,
        replication_address: Callable[[str], str | None] = lambda node: None,
        memberships: Memberships | None = None,
    ) -> None:
        self.resolve = resolve
        self.replication_address = replication_address
        self.timeout = timeout
        # Where the groups' leaders publish memberships (the control store's etcd; its
        # owner closes it); None: nothing published is read (no repair is adopted).
        self.memberships = memberships
        self._stubs: dict[str, tuple[grpc.aio.Channel, pb_grpc.StorageAdminStub]] = {}

    async def _record(self, partition: PartitionRef) -> bytes | None:
        if self.memberships is None:
            return None
        try:
            # In this task, not in one of wait_for's: a lookup cancelled as it failed
            # (the operator stopping) would leave that task's error unretrieved, and
            # kopf re-raises every failed task of the loop when it stops.
            async with asyncio.timeout(self.timeout):
                return await self.memberships.get_membership(partition.name)
        except Exception as exc:  # the control store unreachable: the spec stands
            log.info("published membership of %s unavailable: %s", partition.name, exc)
            return None

    async def published_members(self, partition: PartitionRef) -> tuple[Member, ...] | None:
        record = await self._record(partition)
        return None if record is None else published_members(record)

    async def published_split(self, partition: PartitionRef) -> tuple[int, int] | None:
        record = await self._record(partition)
        if record is None:
            return None
        published = pb.PublishedMembership.FromString(record)
        return (published.split_at, published.split_index) if published.split_index else None

    async def forget_members(self, partition: PartitionRef) -> None:
        if self.memberships is not None:
            async with asyncio.timeout(self.timeout):
                await self.memberships.delete_membership(partition.name)

    def _stub(self, node: str) -> pb_grpc.StorageAdminStub | None:
        address = self.resolve(node)
        if address is None:
            return None
        if address not in self._stubs:
            channel = grpc.aio.insecure_channel(address)
            self._stubs[address] = (channel, pb_grpc.StorageAdminStub(channel))  # type: ignore[no-untyped-call]
        return self._stubs[address][1]

    async def host(self, partition: PartitionRef, members: Sequence[Member]) -> PartitionReport:
        if partition.table_spec is None:
            return PartitionReport(replicas={m.node: ReplicaReport("Requested") for m in members})
        request = host_request(partition, partition.table_spec, members, self.replication_address)
        failed: set[str] = set()

        async def ask(node: str) -> pb.ReplicaReport | None:
            stub = self._stub(node)
            if stub is None:
                failed.add(node)  # no such pod in the fleet
                return None
            try:
                answer: pb.ReplicaReport = await stub.HostReplica(request, timeout=self.timeout)
                return answer
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    failed.add(node)
                log.info("%s: HostReplica %s: %s", node, partition.name, exc.code().name)
                return None

        answers = await asyncio.gather(*(ask(m.node) for m in members))
        return summarize(dict(zip((m.node for m in members), answers, strict=True)), failed)

    async def drop(self, partition: PartitionRef, members: Sequence[Member]) -> bool:
        request = pb.DropReplicaRequest(partition=partition.name)

        async def drop_one(node: str) -> bool:
            stub = self._stub(node)
            if stub is None:
                return True  # not a node of the fleet (it shrank): its volume went with it
            try:
                answer: pb.DropReplicaResponse = await stub.DropReplica(request, timeout=self.timeout)
                return bool(answer.dropped)
            except grpc.aio.AioRpcError as exc:
                log.info("%s: DropReplica %s: %s", node, partition.name, exc.code().name)
                return False

        return all(await asyncio.gather(*(drop_one(m.node) for m in members)))

    async def close(self) -> None:
        for channel, _ in self._stubs.values():
            await channel.close()
        self._stubs.clear()
