"""Read-your-writes for eventually consistent reads of a replicated partition, end to
end in one process: a real RouterContext (routes from a control store in memory) sends
over the real framed data path to three real storage data planes, each with a real
engine (RocksDB and the WAL in tmp_path) and a real ReplicaHost whose groups talk over
the real node-pair transport on 127.0.0.1.

The router remembers, per partition, the highest log index a write was acknowledged at
and sends it with every eventually consistent read as its floor; a follower that has
applied less answers NOT_LEADER with the leader as hint instead of an older item.

A failed condition is a read too: the leader answers it only once the write it read
is committed, so a strongly consistent read right after it finds that write.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.errors import DynamoError
from partita.common.partition_map import Partition
from partita.control.model import NodeRecord
from partita.control.store import MemoryControlStore
from partita.router import metrics as router_metrics
from partita.router.context import RouterContext, RouterSettings
from partita.router.storage_client import DataChannel, NodeChannel, StorageClient
from partita.router.table_cache import TableCache
from partita.storage.data_server import DataPlane, LocalDataChannel, start_data_server
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.peer_transport import PeerTransport
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.coalesce import Envelope
from partita.storage.replication.config import ReplicationConfig
from tests.unit.records import put_record, table_record
from tests.unit.storage.polling import wait_until

TABLE_ID = 0x5EED_0003
GROUP = group_of(TABLE_ID, "p0")
NODES = ("node-a", "node-b", "node-c")
FAST = ReplicationConfig(heartbeat_interval=0.05, election_timeout=0.4, lease_duration=0.3, quiesce_after=60)


@dataclass
class StorageNode:
    node: str
    engine: Engine
    host: ReplicaHost
    transport: PeerTransport
    server: asyncio.Server
    data_address: str


class RecordingStorage:
    """The router's real StorageClient; notes which node answered each request how."""

    def __init__(self, node_of: dict[str, str], local: dict[str, LocalDataChannel] | None = None) -> None:
        self.client = StorageClient(local)
        self.node_of = node_of
        self.answers: list[tuple[str, int, int]] = []  # (node, op, status)

    def channel(self, address: str) -> RecordingChannel:
        return RecordingChannel(self, self.client.channel(address), self.node_of[address])


class RecordingChannel:
    def __init__(self, owner: RecordingStorage, channel: DataChannel, node: str) -> None:
        self.owner, self.channel, self.node = owner, channel, node

    async def call(self, request: pb.Request) -> pb.Response:
        response = await self.channel.call(request)
        self.owner.answers.append((self.node, request.op, response.status))
        return response


@dataclass
class Cluster:
    nodes: dict[str, StorageNode]
    router: RouterContext
    storage: RecordingStorage
    cut_off: set[str]  # nodes that receive no replication traffic (a network fault)

    async def leader(self) -> StorageNode:
        await wait_until(lambda: sum(n.host.is_leader(GROUP) for n in self.nodes.values()) == 1)
        leader = next(n for n in self.nodes.values() if n.host.is_leader(GROUP))
        await wait_until(lambda: leader.host.ready_to_plan(GROUP))
        return leader


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async for c in _cluster(tmp_path, in_process=False):
        yield c


@pytest.fixture
async def in_process(tmp_path: Path) -> AsyncIterator[Cluster]:
    """The same three nodes, every one reached by the router through its in-process
    channel (`partita storage --router-port`); which is the router's own node is set per
    test (`settings.local_node`)."""
    async for c in _cluster(tmp_path, in_process=True):
        yield c


async def _cluster(tmp_path: Path, in_process: bool) -> AsyncIterator[Cluster]:
    record = table_record(Partition("p0", 0, 2**64, NODES, NODES[0]), name="fresh", table_id=TABLE_ID)
    addresses: dict[str, str] = {}
    nodes: dict[str, StorageNode] = {}
    cut_off: set[str] = set()
    local: dict[str, LocalDataChannel] = {}
    for node in NODES:
        engine = Engine.open(tmp_path / node, sync=False)
        holder: list[ReplicaHost] = []

        def receive(envelope: Envelope, holder: list[ReplicaHost] = holder) -> None:
            if holder[0].node_id not in cut_off:
                holder[0].receive(envelope)

        transport = PeerTransport(addresses.get, receive)
        host = ReplicaHost(node, engine, transport.send, FAST)
        holder.append(host)
        addresses[node] = f"127.0.0.1:{await transport.listen('127.0.0.1', 0)}"
        state = NodeState(node, "zone-" + node[-1], engine, replicas=host)
        state.hosted = desired_hosting([record], node)
        host.add_group(GROUP, list(NODES))
        host.start()
        plane = DataPlane(state)
        server = await start_data_server(plane, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        nodes[node] = StorageNode(node, engine, host, transport, server, f"127.0.0.1:{port}")
        local[f"127.0.0.1:{port}"] = LocalDataChannel(plane)
    store = MemoryControlStore()
    for n in nodes.values():
        await store.register_node(NodeRecord(n.node, "zone", "unused:0", n.data_address), ttl=10)
    await put_record(store, record)
    tables = TableCache(store)
    await tables.refresh()
    storage = RecordingStorage(
        {n.data_address: n.node for n in nodes.values()}, local if in_process else None
    )
    router = RouterContext(tables, store, storage, RouterSettings(replication=True))
    yield Cluster(nodes, router, storage, cut_off)
    await storage.client.close()
    for n in nodes.values():
        n.server.close()
        await n.host.stop()
        await n.transport.close()
        await n.engine.close()


def key_of(n: int) -> tuple[int, bytes]:
    h = (n * 0x9E37_79B9_7F4A_7C15) % 2**64
    return h, keys.item_key(TABLE_ID, h, b"key-%d" % n, None)


def put(n: int, value: bytes) -> pb.Request:
    h, k = key_of(n)
    return pb.Request(op=pb.PUT, key_hash=h, key=k, value=value)


def put_if_absent(n: int, value: bytes) -> pb.Request:
    request = put(n, value)
    request.body = orjson.dumps({"condition": "attribute_not_exists(pk)"})
    return request


def get(n: int, floor: int = 0) -> pb.Request:
    h, k = key_of(n)
    return pb.Request(op=pb.GET, key_hash=h, key=k, read_floor=floor)


def strong_get(n: int) -> pb.Request:
    request = get(n)
    request.consistent = True
    return request


async def test_an_eventually_consistent_read_right_after_a_write_sees_it(cluster: Cluster) -> None:
    await cluster.leader()
    table = cluster.router.tables.require_active("fresh")
    for n in range(60):
        written = await cluster.router.send(table, put(n, b"v%d" % n))
        assert written.status == pb.OK and written.log_index > 0
        read = await cluster.router.send(table, get(n))
        assert read.value == b"v%d" % n, f"write {n} acknowledged but the read right after missed it"
        overwritten = await cluster.router.send(table, put(n, b"w%d" % n))
        assert overwritten.log_index > written.log_index  # the floor only rises
        assert (await cluster.router.send(table, get(n))).value == b"w%d" % n


async def test_reads_right_after_writes_see_them_while_a_follower_is_cut_off(cluster: Cluster) -> None:
    """The cut-off follower has applied none of these writes; the reads the router
    spreads to it come back NOT_LEADER and go to the leader, never answered stale."""
    leader = await cluster.leader()
    behind = next(n for n in cluster.nodes.values() if n is not leader)
    cluster.cut_off.add(behind.node)
    counted_before = router_metrics.READ_FLOOR_DETOUR.value
    table = cluster.router.tables.require_active("fresh")
    for n in range(30):
        assert (await cluster.router.send(table, put(100 + n, b"v%d" % n))).status == pb.OK
        read = await cluster.router.send(table, get(100 + n))
        assert read.value == b"v%d" % n, f"write {n} acknowledged but the read right after missed it"
    assert behind.engine.get(key_of(100)[1]) is None  # it really is behind
    detours = [a for a in cluster.storage.answers if a[0] == behind.node and a[1] == pb.GET]
    assert detours and all(status == pb.NOT_LEADER for _, _, status in detours)
    assert router_metrics.READ_FLOOR_DETOUR.value - counted_before == len(detours)


async def test_a_follower_behind_the_floor_names_the_leader_instead_of_answering(cluster: Cluster) -> None:
    leader = await cluster.leader()
    table = cluster.router.tables.require_active("fresh")
    written = await cluster.router.send(table, put(1, b"v"))
    follower = next(n for n in cluster.nodes.values() if n is not leader)
    await wait_until(lambda: follower.host.leader_of(GROUP) == leader.node)
    channel = cluster.storage.client.channel(follower.data_address)
    ahead = get(1, floor=written.log_index + 1000)  # a write it has not applied yet
    ahead.table_id, ahead.partition_id = TABLE_ID, "p0"
    refused = await channel.call(ahead)
    assert (refused.status, refused.leader_hint, refused.value) == (pb.NOT_LEADER, leader.node, b"")
    await wait_until(lambda: follower.engine.applied_index(GROUP) >= written.log_index)
    caught_up = get(1, floor=written.log_index)
    caught_up.table_id, caught_up.partition_id = TABLE_ID, "p0"
    served = await channel.call(caught_up)
    assert (served.status, served.value) == (pb.OK, b"v")


async def test_eventually_consistent_reads_still_spread_over_every_replica(cluster: Cluster) -> None:
    await cluster.leader()
    table = cluster.router.tables.require_active("fresh")
    last = await cluster.router.send(table, put(2, b"v"))
    await wait_until(
        lambda: all(n.engine.applied_index(GROUP) >= last.log_index for n in cluster.nodes.values())
    )
    cluster.storage.answers.clear()
    for _ in range(30):
        assert (await cluster.router.send(table, get(2))).value == b"v"
    served = {node for node, op, status in cluster.storage.answers if op == pb.GET and status == pb.OK}
    assert served == set(NODES)
    assert all(status == pb.OK for _, _, status in cluster.storage.answers)  # no detour once caught up


async def test_a_read_is_held_only_to_writes_of_keys_hashing_into_its_bucket(cluster: Cluster) -> None:
    """Floors are kept per bucket of key hashes: a follower cut off after key `old` was
    written still serves it, though it misses a later write to another key."""
    leader = await cluster.leader()
    old, new = 300, next(n for n in range(301, 400) if key_of(n)[0] % 64 != key_of(300)[0] % 64)
    table = cluster.router.tables.require_active("fresh")
    first = await cluster.router.send(table, put(old, b"old"))
    await wait_until(
        lambda: all(n.engine.applied_index(GROUP) >= first.log_index for n in cluster.nodes.values())
    )
    behind = next(n for n in cluster.nodes.values() if n is not leader)
    cluster.cut_off.add(behind.node)
    assert (await cluster.router.send(table, put(new, b"new"))).status == pb.OK
    cluster.storage.answers.clear()
    for _ in range(6):  # the rotation reaches every replica twice
        assert (await cluster.router.send(table, get(old))).value == b"old"
    assert (behind.node, pb.GET, pb.OK) in cluster.storage.answers
    assert (await cluster.router.send(table, get(new))).value == b"new"


async def test_a_failed_condition_waits_for_the_write_it_read_to_be_committed(cluster: Cluster) -> None:
    """The second put-if-absent reads the first's item before a quorum has it. Answered
    then, its client could read the key at once (consistently) and find nothing: the
    metadata race a sharded writer lost in CI."""
    leader = await cluster.leader()
    table = cluster.router.tables.require_active("fresh")
    cluster.cut_off.update(n.node for n in cluster.nodes.values() if n is not leader)
    first = asyncio.create_task(cluster.router.send(table, put_if_absent(7, b'{"pk":{"S":"a"}}')))
    await wait_until(lambda: leader.engine.pending(key_of(7)[1]))
    second = asyncio.create_task(cluster.router.send(table, put_if_absent(7, b'{"pk":{"S":"b"}}')))
    await asyncio.sleep(0.05)  # far longer than an answer takes on 127.0.0.1
    assert not second.done(), "the failure was answered while the write it read could not commit"
    cluster.cut_off.clear()
    assert (await first).status == pb.OK
    with pytest.raises(DynamoError) as lost:
        await second
    assert lost.value.code == "ConditionalCheckFailedException"
    assert (await cluster.router.send(table, strong_get(7))).value == b'{"pk":{"S":"a"}}'


async def test_a_router_beside_a_node_serves_eventual_reads_from_that_nodes_replica_in_process(
    in_process: Cluster,
) -> None:
    """`partita storage --router-port`: the router's eventually consistent reads go to its
    own node's replica, called in process (the channel is no socket: nothing is framed),
    and a read right after a write through it still sees the write."""
    leader = await in_process.leader()
    own = next(n for n in in_process.nodes.values() if n is not leader)
    in_process.router.settings.local_node = own.node
    assert not isinstance(in_process.storage.client.channel(own.data_address), NodeChannel)
    table = in_process.router.tables.require_active("fresh")
    last = 0
    for n in range(40):
        written = await in_process.router.send(table, put(500 + n, b"v%d" % n))
        last = written.log_index
        read = await in_process.router.send(table, get(500 + n))
        assert read.value == b"v%d" % n, f"write {n} acknowledged but the read right after missed it"
    writes = {node for node, op, status in in_process.storage.answers if op == pb.PUT and status == pb.OK}
    assert writes == {leader.node}
    # Right after its write, a read detours to the leader until the commit reaches this
    # node; once it has, every read is served here.
    await wait_until(lambda: own.engine.applied_index(GROUP) >= last)
    in_process.storage.answers.clear()
    for n in range(40):
        assert (await in_process.router.send(table, get(500 + n))).value == b"v%d" % n
    assert in_process.storage.answers == [(own.node, pb.GET, pb.OK)] * 40


async def test_a_router_beside_a_lagging_node_sends_its_reads_to_the_leader_never_answering_stale(
    in_process: Cluster,
) -> None:
    leader = await in_process.leader()
    own = next(n for n in in_process.nodes.values() if n is not leader)
    in_process.router.settings.local_node = own.node
    in_process.cut_off.add(own.node)
    table = in_process.router.tables.require_active("fresh")
    for n in range(20):
        assert (await in_process.router.send(table, put(600 + n, b"v%d" % n))).status == pb.OK
        assert (await in_process.router.send(table, get(600 + n))).value == b"v%d" % n
    assert own.engine.get(key_of(600)[1]) is None  # it really is behind
    refused = [status for node, op, status in in_process.storage.answers if node == own.node and op == pb.GET]
    assert refused and all(status == pb.NOT_LEADER for status in refused)
    assert (await in_process.router.send(table, strong_get(600))).value == b"v0"


async def test_the_in_process_channel_answers_a_failed_condition_and_a_follower_names_the_leader(
    in_process: Cluster,
) -> None:
    leader = await in_process.leader()
    table = in_process.router.tables.require_active("fresh")
    in_process.router.settings.local_node = leader.node
    assert (await in_process.router.send(table, put_if_absent(9, b'{"pk":{"S":"a"}}'))).status == pb.OK
    with pytest.raises(DynamoError) as failed:
        await in_process.router.send(table, put_if_absent(9, b'{"pk":{"S":"b"}}'))
    assert failed.value.code == "ConditionalCheckFailedException"
    follower = next(n for n in in_process.nodes.values() if n is not leader)
    await wait_until(lambda: follower.host.leader_of(GROUP) == leader.node)
    strong = strong_get(9)
    strong.table_id, strong.partition_id = TABLE_ID, "p0"
    answer = await in_process.storage.client.channel(follower.data_address).call(strong)
    assert (answer.status, answer.leader_hint) == (pb.NOT_LEADER, leader.node)
