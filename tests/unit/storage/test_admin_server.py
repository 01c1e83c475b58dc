"""The storage admin gRPC service over real gRPC on 127.0.0.1 and a real RocksDB engine:
what HostReplica assigns is served and survives a restart, DropReplica deletes exactly
the replica's data, every call is idempotent, a bad request changes nothing, and the
health service answers the readiness probe."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import orjson
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from partita._proto import admin_pb2 as pb
from partita._proto import admin_pb2_grpc as pb_grpc
from partita.common import keys
from partita.control.model import PointInTimeRecovery, StreamSpec
from partita.storage import admin_server
from partita.storage.admin_server import AdminHosting
from partita.storage.assignments import AssignmentBook
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from partita.storage.node import NodeState, PeerDirectory
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.types import Role
from partita.storage.table_stats import Figures

pytestmark = pytest.mark.timeout(60)

HALF = 1 << 63
TABLE_ID = 42


def host_request(
    partition: str = "orders-0", start: int = 0, last: int = HALF - 1, **table: object
) -> pb.HostReplicaRequest:
    fields: dict[str, object] = {
        "table_id": TABLE_ID,
        "table_name": "Orders",
        "partition_key": pb.KeyAttribute(name="pk", type="S"),
        "billing_mode": "PAY_PER_REQUEST",
        "created_at": 1.5,
        **table,
    }
    info = pb.TableInfo(**fields)  # type: ignore[arg-type]
    members = [pb.Member(node=n, zone=z, role="full") for n, z in (("n1", "a"), ("n2", "b"), ("n3", "c"))]
    return pb.HostReplicaRequest(
        partition=partition, table=info, start=start, last=last, members=members, replication_factor=3
    )


def with_addresses(*addresses: str) -> pb.HostReplicaRequest:
    """The standard request with each member's replication address (n1, n2, n3)."""
    request = host_request()
    for member, address in zip(request.members, addresses, strict=True):
        member.replication_address = address
    return request


@dataclass
class Node:
    state: NodeState
    hosting: AdminHosting
    stub: pb_grpc.StorageAdminStub
    health: health_pb2_grpc.HealthStub


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    async with running_node(tmp_path) as n:
        yield n


class running_node:
    """A node (engine, admin hosting, gRPC server) on `data_dir`, as the process runs it;
    with `replication`, a replica host (not pumping: nothing to send to) and the node's
    peer directory, as `partita storage --replication` wires them."""

    def __init__(self, data_dir: Path, replication: bool = False) -> None:
        self.data_dir = data_dir
        self.replication = replication
        self.peers = PeerDirectory()

    async def __aenter__(self) -> Node:
        engine = Engine.open(self.data_dir, sync=False)
        self.engine = engine
        state = NodeState(node_id="n1", zone="a", engine=engine, ids_with_data=engine.table_ids())
        if self.replication:
            state.replicas = ReplicaHost("n1", engine, lambda envelopes: None)
        hosting = AdminHosting(state, AssignmentBook.open(self.data_dir), self.peers.assign)
        self.server = grpc.aio.server()
        checker = admin_server.add_to_server(self.server, hosting)
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        await hosting.start()
        await admin_server.set_serving(checker, True)
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        return Node(
            state,
            hosting,
            pb_grpc.StorageAdminStub(self.channel),  # type: ignore[no-untyped-call]
            health_pb2_grpc.HealthStub(self.channel),  # type: ignore[no-untyped-call]
        )

    async def __aexit__(self, *_: object) -> None:
        await self.channel.close()
        await self.server.stop(grace=None)
        await self.engine.close()


async def put(engine: Engine, h: int, value: bytes = b"v", partition: str | None = None) -> bytes:
    lo, _ = keys.hash_range_bounds(TABLE_ID, h, h + 1)
    key = lo + b"item"
    if partition is None:
        await engine.commit([Effect(Kind.PUT, key, value)])
    else:
        await engine.commit([Effect(Kind.PUT, key, value)], group_of(TABLE_ID, partition))
    return key


async def test_a_hosted_replica_is_served_reported_and_hosting_it_again_changes_nothing(node: Node) -> None:
    first = await node.stub.HostReplica(host_request(), timeout=5)
    again = await node.stub.HostReplica(host_request(), timeout=5)

    assert first == again
    assert (first.state, first.leader, first.table_id) == ("Hosted", "n1", TABLE_ID)
    hosted = node.state.hosted[TABLE_ID]
    assert [(p.partition_id, p.start, p.end, p.replicas) for p in hosted.partitions] == [
        ("orders-0", 0, HALF, ("n1", "n2", "n3"))
    ]
    assert hosted.record.name == "Orders" and hosted.record.partition_key.name == "pk"
    assert hosted.owner_of(HALF - 1) is not None and hosted.owner_of(HALF) is None
    report = await node.stub.Report(pb.ReportRequest(), timeout=5)
    assert report.node_id == "n1" and [r.partition for r in report.replicas] == ["orders-0"]


async def test_a_leaders_count_reaches_its_report_split_points_and_heat_included(node: Node) -> None:
    """The operator decides splits for size and for consumption from these figures."""
    await node.stub.HostReplica(host_request(), timeout=5)
    node.state.partition_figures[(TABLE_ID, "orders-0")] = Figures(
        12, 3400, split_hash=HALF // 2, hot_seconds=310.5, hot_split_hash=HALF // 3
    )
    (counted,) = (await node.stub.Report(pb.ReportRequest(), timeout=5)).replicas
    assert (counted.item_count, counted.size_bytes, counted.split_hash) == (12, 3400, HALF // 2)
    assert (counted.hot_seconds, counted.hot_split_hash) == (310.5, HALF // 3)
    assert not counted.single_key and not counted.hot_single_key
    node.state.partition_figures[(TABLE_ID, "orders-0")] = Figures(
        5, 900, single_key=True, hot_single_key=True
    )
    (one_key,) = (await node.stub.Report(pb.ReportRequest(), timeout=5)).replicas
    assert not one_key.HasField("split_hash") and not one_key.HasField("hot_split_hash")
    assert one_key.single_key and one_key.hot_single_key and one_key.hot_seconds == 0.0


async def test_the_tables_stream_reaches_the_hosted_record_and_survives_a_restart(tmp_path: Path) -> None:
    """Its leaders add TTL deletes to the stream and trim it: they must know it."""
    stream = StreamSpec(enabled=True, view_type="NEW_IMAGE", created_at=3.25)
    request = host_request(stream=orjson.dumps(stream.to_json()).decode())
    async with running_node(tmp_path) as n:
        await n.stub.HostReplica(request, timeout=5)
        assert n.state.hosted[TABLE_ID].record.stream == stream
    async with running_node(tmp_path) as restarted:
        assert restarted.state.hosted[TABLE_ID].record.stream == stream


async def test_the_tables_point_in_time_recovery_reaches_the_hosted_record_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    """Its leaders add TTL deletes to the recovery history: they must know it is on."""
    recovery = PointInTimeRecovery(True, 4.5, 7)
    request = host_request(point_in_time=orjson.dumps(recovery.to_json()).decode())
    async with running_node(tmp_path) as n:
        await n.stub.HostReplica(request, timeout=5)
        assert n.state.hosted[TABLE_ID].record.point_in_time == recovery
        # What a leader publishes for its members carries it on.
        published = admin_server.request_of(n.hosting.book.assignments["orders-0"], {})
        assert published.table.point_in_time == request.table.point_in_time
    async with running_node(tmp_path) as restarted:
        assert restarted.state.hosted[TABLE_ID].record.point_in_time == recovery


async def test_assignments_survive_a_restart(tmp_path: Path) -> None:
    async with running_node(tmp_path) as n:
        await n.stub.HostReplica(host_request("orders-0"), timeout=5)
        await n.stub.HostReplica(host_request("orders-1", start=HALF, last=(1 << 64) - 1), timeout=5)
    async with running_node(tmp_path) as restarted:
        assert sorted(p.partition_id for p in restarted.state.hosted[TABLE_ID].partitions) == [
            "orders-0",
            "orders-1",
        ]
        report = await restarted.stub.Report(pb.ReportRequest(partitions=["orders-1"]), timeout=5)
        assert [(r.partition, r.state) for r in report.replicas] == [("orders-1", "Hosted")]


async def test_dropping_a_replica_deletes_its_data_and_only_its_data(node: Node) -> None:
    await node.stub.HostReplica(host_request("orders-0"), timeout=5)
    await node.stub.HostReplica(host_request("orders-1", start=HALF, last=(1 << 64) - 1), timeout=5)
    dropped_key = await put(node.state.engine, 5, partition="orders-0")
    kept_key = await put(node.state.engine, HALF + 5, partition="orders-1")

    answer = await node.stub.DropReplica(pb.DropReplicaRequest(partition="orders-0"), timeout=5)
    again = await node.stub.DropReplica(pb.DropReplicaRequest(partition="orders-0"), timeout=5)

    assert answer.dropped and again.dropped
    assert node.state.engine.get(dropped_key) is None
    assert node.state.engine.get(kept_key) == b"v"
    # Its position and log went with the data (a restart does not bring them back).
    assert group_of(TABLE_ID, "orders-0") not in node.state.engine.groups()
    assert node.state.engine.applied_index(group_of(TABLE_ID, "orders-1")) == 1
    assert [p.partition_id for p in node.state.hosted[TABLE_ID].partitions] == ["orders-1"]
    report = await node.stub.Report(pb.ReportRequest(partitions=["orders-0"]), timeout=5)
    assert report.replicas[0].state == "Unknown"
    assert "orders-0" not in AssignmentBook.open(node.hosting.book.path.parent).assignments


async def test_data_of_a_table_no_assignment_names_is_deleted_at_start(tmp_path: Path) -> None:
    async with running_node(tmp_path) as n:
        key = await put(n.state.engine, 7)  # a table whose drop a crash cut short
    async with running_node(tmp_path) as restarted:
        assert restarted.state.engine.get(key) is None
        assert TABLE_ID not in restarted.state.ids_with_data


@pytest.mark.parametrize(
    "request_",
    [
        host_request(partition=""),
        host_request(start=10, last=5),
        host_request(billing_mode="FREE"),
        pb.HostReplicaRequest(partition="p", table=host_request().table, start=0, last=1),  # no members
        with_addresses("n1:7400", "no-port", "n3:7400"),
        with_addresses("n1:7400", "n2:0", "n3:7400"),
        with_addresses("n1:7400", ":7400", "n3:7400"),
        with_addresses("n1:7400", "n2:http", "n3:7400"),
        pb.HostReplicaRequest(
            partition="p",
            table=host_request().table,
            start=0,
            last=1,
            members=[pb.Member(node="n1"), pb.Member(node="n1")],
        ),
    ],
    ids=[
        "no-partition-name",
        "inverted-range",
        "unknown-billing-mode",
        "no-members",
        "address-without-port",
        "address-port-zero",
        "address-without-host",
        "address-port-not-a-number",
        "members-repeat",
    ],
)
async def test_a_bad_request_is_invalid_argument_and_changes_nothing(
    node: Node, request_: pb.HostReplicaRequest
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await node.stub.HostReplica(request_, timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert node.state.hosted == {} and node.hosting.book.assignments == {}


async def test_a_node_refuses_a_replica_it_is_not_a_member_of(node: Node) -> None:
    request = host_request()
    del request.members[0]  # n1 is not among them
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await node.stub.HostReplica(request, timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert node.state.hosted == {}


async def test_the_health_service_answers_serving_for_the_readiness_probe(node: Node) -> None:
    answer = await node.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


async def test_members_replication_addresses_reach_the_peer_directory_and_the_group_and_survive_a_restart(
    tmp_path: Path,
) -> None:
    """The operator gives every member the others' replication addresses (pod DNS names);
    the node's replica host dials them (they take precedence over registrations), runs
    the group with the three members, and knows its key range for snapshots. A restarted
    node has them from its assignments before the operator speaks again."""
    request = with_addresses("n1.s.ns.svc:7400", "n2.s.ns.svc:7400", "n3.s.ns.svc:7400")
    group = group_of(TABLE_ID, "orders-0")
    runner = running_node(tmp_path, replication=True)
    async with runner as n:
        runner.peers.addresses = {"n2": "10.0.0.2:39999"}  # a registration says otherwise
        await n.stub.HostReplica(request, timeout=5)
        assert runner.peers.replication_address("n2") == "n2.s.ns.svc:7400"
        assert runner.peers.replication_address("n3") == "n3.s.ns.svc:7400"
        assert n.state.replicas is not None
        assert n.state.replicas.members(group) == {"n1": Role.FULL, "n2": Role.FULL, "n3": Role.FULL}
        assert group in n.state.groups and n.state.groups[group][1].end == HALF

        moved = with_addresses("n1.s.ns.svc:7400", "n2.s.ns.svc:7401", "n3.s.ns.svc:7400")
        await n.stub.HostReplica(moved, timeout=5)  # a changed address replaces the assignment
        assert runner.peers.replication_address("n2") == "n2.s.ns.svc:7401"

        await n.stub.DropReplica(pb.DropReplicaRequest(partition="orders-0"), timeout=5)
        assert runner.peers.replication_address("n2") == "10.0.0.2:39999"  # back to the registry
        assert not n.state.replicas.hosts(group)
        await n.stub.HostReplica(moved, timeout=5)
    restarted = running_node(tmp_path, replication=True)
    async with restarted as n:
        assert restarted.peers.replication_address("n2") == "n2.s.ns.svc:7401"
        assert n.state.replicas is not None and n.state.replicas.hosts(group)


def published(request: pb.HostReplicaRequest, *roles: tuple[str, str]) -> bytes:
    """A leader's PublishedMembership of `request` with its members set to `roles`."""
    changed = pb.HostReplicaRequest()
    changed.CopyFrom(request)
    del changed.members[:]
    changed.members.extend(pb.Member(node=n, zone="z", role=r) for n, r in roles)
    return pb.PublishedMembership(term=3, leader="n2", assignment=changed).SerializeToString()


async def test_a_published_membership_is_followed_a_newcomer_first_then_a_removal_erases(
    tmp_path: Path,
) -> None:
    """Repair on Kubernetes: a node a leader's published membership names hosts the
    replica at once, as a newcomer (outside its own membership until the leader's log
    says otherwise) in the role given; a role change is taken; a record that no longer
    names the node drops its replica with its data; and the operator's stale assignment
    afterwards is refused, not hosted again."""
    group = group_of(TABLE_ID, "orders-0")
    async with running_node(tmp_path, replication=True) as n:
        assert n.state.replicas is not None
        record = published(host_request(), ("n2", "full"), ("n3", "full"), ("n1", "log"))
        await n.hosting.apply_published({"orders-0": record})
        assert n.state.replicas.hosts(group)
        assert n.state.replicas.members(group).get("n1") is None  # a newcomer learns itself
        p = n.state.groups[group][1]
        assert (p.replicas, p.log_replicas, p.joining) == (("n2", "n3"), ("n1",), ())
        assert TABLE_ID not in n.state.hosted  # a log member serves no reads

        rebuilt = published(host_request(), ("n2", "full"), ("n3", "full"), ("n1", "joining"))
        await n.hosting.apply_published({"orders-0": rebuilt})
        assert n.state.groups[group][1].joining == ("n1",)

        key = await put(n.state.engine, 5, partition="orders-0")
        gone = published(host_request(), ("n2", "full"), ("n3", "full"), ("n4", "full"))
        await n.hosting.apply_published({"orders-0": gone})
        assert not n.state.replicas.hosts(group)
        assert "orders-0" not in n.hosting.book.assignments
        assert n.state.engine.get(key) is None
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await n.stub.HostReplica(host_request(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert not n.state.replicas.hosts(group)


async def test_the_tables_replication_factor_reaches_the_groups_leader_follows_changes_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    """The Table's replicationFactor, sent in every HostReplica, is what the group's
    leader keeps (repair): a later HostReplica that changes it alone changes the
    group's partition; a leader's published membership keeps the operator's; and it is
    on disk for a restarted pod."""
    group = group_of(TABLE_ID, "orders-0")
    async with running_node(tmp_path, replication=True) as n:
        await n.stub.HostReplica(host_request(), timeout=5)
        assert n.state.groups[group][1].replication_factor == 3
        lowered = host_request()
        lowered.replication_factor = 1
        await n.stub.HostReplica(lowered, timeout=5)
        assert n.state.groups[group][1].replication_factor == 1
        await n.hosting.apply_published(
            {"orders-0": published(host_request(), ("n1", "full"), ("n2", "full"))}
        )
        p = n.state.groups[group][1]
        assert (p.replicas, p.replication_factor) == (("n1", "n2"), 1)
    async with running_node(tmp_path, replication=True) as restarted:
        assert restarted.state.groups[group][1].replication_factor == 1


async def test_a_single_replica_whose_replication_factor_is_raised_starts_a_group_from_its_data(
    tmp_path: Path,
) -> None:
    """A Table created with replicationFactor 1 has single replicas outside consensus;
    raised, the replica starts a group from the data it holds: its log's base is its
    last write's position (so members added later are sent a snapshot, never only the
    entries written since, and the group's first entries are not taken for writes
    already applied), and its writes go through the group."""
    group = group_of(TABLE_ID, "orders-0")
    alone = host_request()
    del alone.members[1:]
    alone.replication_factor = 1
    async with running_node(tmp_path, replication=True) as n:
        assert n.state.replicas is not None
        await n.stub.HostReplica(alone, timeout=5)
        (p,) = n.state.hosted[TABLE_ID].partitions
        assert not n.state.replicas.hosts(group) and n.state.replicated_group(TABLE_ID, p) is None
        keys_written = [await put(n.state.engine, h, partition="orders-0") for h in (5, 6, 7)]
        assert n.state.engine.applied_index(group) == 3
        alone.replication_factor = 3
        await n.stub.HostReplica(alone, timeout=5)
        (p,) = n.state.hosted[TABLE_ID].partitions
        assert n.state.replicas.hosts(group) and n.state.replicated_group(TABLE_ID, p) == group
        replica = n.state.replicas.multi.replicas[group]
        assert (replica.log.base.index, replica.log.base.term) == (3, 1)
        assert all(n.state.engine.get(k) == b"v" for k in keys_written)


async def test_a_member_removed_while_the_node_was_down_is_erased_before_it_serves(tmp_path: Path) -> None:
    async with running_node(tmp_path, replication=True) as n:
        await n.stub.HostReplica(host_request(), timeout=5)
        assert TABLE_ID in n.state.hosted
    engine = Engine.open(tmp_path, sync=False)
    try:
        state = NodeState(node_id="n1", zone="a", engine=engine, ids_with_data=engine.table_ids())
        state.replicas = ReplicaHost("n1", engine, lambda envelopes: None)
        hosting = AdminHosting(state, AssignmentBook.open(tmp_path))
        gone = published(host_request(), ("n2", "full"), ("n3", "full"), ("n4", "full"))
        await hosting.start({"orders-0": gone})
        assert TABLE_ID not in state.hosted and not state.replicas.hosts(group_of(TABLE_ID, "orders-0"))
        assert hosting.book.assignments == {}
    finally:
        await engine.close()


async def test_a_split_parent_gives_way_to_its_children_and_its_drop_keeps_their_data(tmp_path: Path) -> None:
    # docs/kubernetes.md, "Splits": the operator creates a replicated split's children
    # (naming the parent and its SPLIT entry's index) before it drops the parent. The
    # children take the parent's place once they cover its range, start their groups
    # from its data, and dropping the parent then erases nothing.
    quarter = HALF // 2
    parent_group = group_of(TABLE_ID, "orders-0")
    runner = running_node(tmp_path, replication=True)
    async with runner as n:
        marked = host_request("orders-0")
        marked.split_at = quarter
        await n.stub.HostReplica(marked, timeout=5)
        assert n.state.hosted[TABLE_ID].partitions[0].split_at == quarter
        low = await put(runner.engine, 1, partition="orders-0")
        high = await put(runner.engine, quarter + 1, partition="orders-0")
        index = runner.engine.applied_index(parent_group)
        children = []
        for name, start, last in (("orders-0-0", 0, quarter - 1), ("orders-0-1", quarter, HALF - 1)):
            child = host_request(name, start, last)
            child.parent, child.parent_index = "orders-0", index
            children.append(child)

        await n.stub.HostReplica(children[0], timeout=5)
        # One child does not cover the parent's range: the parent still serves it all.
        assert [p.partition_id for p in n.state.hosted[TABLE_ID].partitions] == ["orders-0"]
        await n.stub.HostReplica(children[1], timeout=5)
        hosted = n.state.hosted[TABLE_ID].partitions
        assert [(p.partition_id, p.parent, p.parent_index) for p in hosted] == [
            ("orders-0-0", "orders-0", index),
            ("orders-0-1", "orders-0", index),
        ]
        assert n.state.replicas is not None
        assert n.state.replicas.hosts(group_of(TABLE_ID, "orders-0-0"))
        assert n.state.replicas.hosts(group_of(TABLE_ID, "orders-0-1"))

        dropped = await n.stub.DropReplica(pb.DropReplicaRequest(partition="orders-0"), timeout=5)
        assert dropped.dropped
        assert "orders-0" not in n.hosting.book.assignments
        assert not n.state.replicas.hosts(parent_group)
        assert runner.engine.get(low) == b"v" and runner.engine.get(high) == b"v"

    async with running_node(tmp_path, replication=True) as n:  # the children survive a restart
        assert [p.partition_id for p in n.state.hosted[TABLE_ID].partitions] == ["orders-0-0", "orders-0-1"]


async def test_a_split_child_needs_its_parents_index_and_the_cut_must_be_inside_the_range(
    node: Node,
) -> None:
    orphan = host_request("orders-0-0")
    orphan.parent = "orders-0"
    outside = host_request("orders-0")
    outside.split_at = HALF + 5
    for request in (orphan, outside):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await node.stub.HostReplica(request, timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert node.hosting.book.assignments == {}


async def test_a_split_child_waits_until_this_replica_of_its_parent_reaches_the_split(
    tmp_path: Path,
) -> None:
    # A lagging member: its copy of the parent is behind the SPLIT entry's index, so its
    # children wait (the parent's group runs on and catches up), then start from the
    # parent's data at the split.
    quarter = HALF // 2
    parent_group = group_of(TABLE_ID, "orders-0")
    runner = running_node(tmp_path, replication=True)
    async with runner as n:
        await n.stub.HostReplica(host_request("orders-0"), timeout=5)
        await put(runner.engine, 1, partition="orders-0")
        split_index = runner.engine.applied_index(parent_group) + 1
        for name, start, last in (("orders-0-0", 0, quarter - 1), ("orders-0-1", quarter, HALF - 1)):
            child = host_request(name, start, last)
            child.parent, child.parent_index = "orders-0", split_index
            await n.stub.HostReplica(child, timeout=5)
        replicas = n.state.replicas
        assert replicas is not None
        assert replicas.hosts(parent_group) and n.state.retiring == {parent_group}
        assert not replicas.hosts(group_of(TABLE_ID, "orders-0-0"))
        n.hosting.start_waiting_children()  # still behind: nothing changes
        assert not replicas.hosts(group_of(TABLE_ID, "orders-0-1"))

        await put(runner.engine, quarter + 1, partition="orders-0")  # the parent catches up
        assert runner.engine.applied_index(parent_group) == split_index
        n.hosting.start_waiting_children()
        assert replicas.hosts(group_of(TABLE_ID, "orders-0-0"))
        assert replicas.hosts(group_of(TABLE_ID, "orders-0-1"))
        assert not replicas.hosts(parent_group) and not n.state.retiring
