"""Snapshots of a partition: the chunk format (checksummed, ordered, bounded), staging on
disk, the engine's snapshot read and atomic install, and a whole transfer between
in-process nodes (real engines, the real node-pair transport on 127.0.0.1, the real
consensus core): a member added to a group whose leader's log no longer starts at 0 is
built by a snapshot, then the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from partita.storage import metrics
from partita.storage.effects import Effect, Kind
from partita.storage.engine import TAIL_ENTRIES, Engine
from partita.storage.node import NodeState
from partita.storage.peer_transport import PeerTransport
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.config import ReplicationConfig
from partita.storage.replication.types import Message, MsgKind, Role, snapshot_meta
from partita.storage.snapshot import (
    Chunk,
    SnapshotError,
    Staging,
    chunks,
    decode_chunk,
    encode_chunk,
)
from tests.unit.storage.polling import wait_until

# --- chunks ---------------------------------------------------------------------------


def test_a_chunk_round_trips_with_its_pairs_sequence_and_final_flag() -> None:
    chunk = Chunk(7, True, [(b"k1", b"v1"), (b"", b""), (b"k3", b"\x00" * 1000)])
    assert decode_chunk(encode_chunk(chunk)) == chunk


@pytest.mark.parametrize(
    ("case", "damage"),
    [
        ("a flipped bit", lambda b: b[:10] + bytes([b[10] ^ 1]) + b[11:]),
        ("truncated", lambda b: b[:-5]),
        ("empty", lambda b: b""),
        ("a byte appended", lambda b: b + b"\x00"),
    ],
)
def test_a_damaged_chunk_is_refused(case: str, damage: Callable[[bytes], bytes]) -> None:
    data = encode_chunk(Chunk(0, False, [(b"key", b"value")]))
    with pytest.raises(SnapshotError):
        decode_chunk(damage(data))


def test_pairs_are_cut_into_chunks_of_bounded_size_and_the_last_is_final() -> None:
    pairs = [(b"k%03d" % i, b"v" * 100) for i in range(100)]
    out = list(chunks(pairs, limit=1000))
    assert [c.seq for c in out] == list(range(len(out)))
    assert [c.final for c in out] == [False] * (len(out) - 1) + [True]
    assert all(sum(len(k) + len(v) for k, v in c.pairs) <= 1000 for c in out)
    assert [p for c in out for p in c.pairs] == pairs
    assert list(chunks([], limit=1000)) == [Chunk(0, True, [])]  # an empty range still ends


def test_staging_takes_chunks_in_order_and_reads_the_pairs_back(tmp_path: Path) -> None:
    pairs = [(b"k%03d" % i, b"v%d" % i) for i in range(50)]
    staging = Staging(tmp_path / "s", index=9, term=2)
    encoded = [encode_chunk(c) for c in chunks(pairs, limit=64)]
    with pytest.raises(SnapshotError):
        staging.add(encoded[1])  # not the first
    for data in encoded:
        assert not staging.complete
        staging.add(data)
    assert staging.complete
    assert list(staging.pairs()) == pairs
    staging.close()
    assert not (tmp_path / "s").exists()


# --- the engine -----------------------------------------------------------------------


def _put(key: bytes, value: bytes) -> list[Effect]:
    return [Effect(Kind.PUT, key, value)]


async def test_the_snapshot_read_ignores_writes_applied_after_it(tmp_path: Path) -> None:
    engine = Engine.open(tmp_path / "e", sync=False)
    try:
        engine.apply("g", 1, _put(b"t1", b"a"), term=1)
        index, term, pairs = await engine.snapshot_range("g", b"t", b"u")
        engine.apply("g", 2, _put(b"t2", b"b") + _put(b"t1", b"changed"), term=1)
        assert (index, term) == (1, 1)
        assert list(pairs) == [(b"t1", b"a")]
    finally:
        await engine.close()


async def test_a_write_applied_while_the_memtable_flushes_is_in_the_snapshot_with_its_position(
    tmp_path: Path,
) -> None:
    # The flush before the checkpoint runs in a worker thread and the loop goes on: an
    # apply then lands before the position is read, and the checkpoint holds it too.
    engine = Engine.open(tmp_path / "e", sync=False)
    try:
        engine.apply("g", 1, _put(b"t1", b"a"), term=1)
        taking = asyncio.create_task(engine.snapshot_range("g", b"t", b"u"))
        await asyncio.sleep(0)  # the snapshot is waiting for its flush
        engine.apply("g", 2, _put(b"t2", b"b") + _put(b"t1", b"changed"), term=1)
        index, term, pairs = await taking
        engine.apply("g", 3, _put(b"t3", b"c"), term=1)
        assert (index, term) == (2, 1)
        assert list(pairs) == [(b"t1", b"changed"), (b"t2", b"b")]
    finally:
        await engine.close()


async def test_install_replaces_the_range_only_and_sets_the_applied_position(tmp_path: Path) -> None:
    engine = Engine.open(tmp_path / "e", sync=False)
    try:
        engine.apply("g", 1, _put(b"tstale", b"x") + _put(b"z-other", b"keep"), term=1)
        size = engine.install_snapshot("g", b"t", b"u", iter([(b"t1", b"a"), (b"t2", b"b")]), 40, 3)
        assert size == 6
        assert engine.get(b"tstale") is None and engine.get(b"t1") == b"a" and engine.get(b"t2") == b"b"
        assert engine.get(b"z-other") == b"keep"
        assert engine.applied_position("g") == (40, 3)
    finally:
        await engine.close()
    reopened = Engine.open(tmp_path / "e", sync=False)
    try:
        assert reopened.applied_position("g") == (40, 3)  # the position is in the same batch
        assert reopened.get(b"t2") == b"b"
    finally:
        await reopened.close()


# --- a transfer between nodes ---------------------------------------------------------

GROUP = "7/p0"
NODES = ("node-a", "node-b", "node-c")
FAST = ReplicationConfig(heartbeat_interval=0.05, election_timeout=0.4, lease_duration=0.3, quiesce_after=60)
RANGE = (b"t", b"u")


class Nodes:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.addresses: dict[str, str] = {}
        self.hosts: dict[str, tuple[Engine, ReplicaHost, PeerTransport]] = {}

    async def start(
        self, node: str, newcomer: bool = False, before: Callable[[Engine], None] | None = None
    ) -> ReplicaHost:
        engine = Engine.open(self.root / node, sync=False)
        if before is not None:
            before(engine)
        holder: list[ReplicaHost] = []
        transport = PeerTransport(self.addresses.get, lambda env: holder[0].receive(env))
        host = ReplicaHost(
            node,
            engine,
            transport.send,
            FAST,
            ranges=lambda g: RANGE,
            snapshot_dir=self.root / f"{node}-snap",
        )
        holder.append(host)
        port = await transport.listen("127.0.0.1", int(self.addresses.get(node, ":0").rpartition(":")[2]))
        self.addresses[node] = f"127.0.0.1:{port}"
        host.add_group(GROUP, list(NODES), newcomer=newcomer)
        host.start()
        self.hosts[node] = (engine, host, transport)
        return host

    async def stop(self, node: str) -> None:
        engine, host, transport = self.hosts.pop(node)
        await host.stop()
        await transport.close()
        await engine.close()

    async def leader(self) -> ReplicaHost:
        for _ in range(200):
            leaders = [h for _, h, _ in self.hosts.values() if h.is_leader(GROUP)]
            if len(leaders) == 1:
                return leaders[0]
            await asyncio.sleep(0.025)
        raise AssertionError("no single leader within 5 s")


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[Nodes]:
    n = Nodes(tmp_path)
    yield n
    for node in list(n.hosts):
        await n.stop(node)


async def test_a_member_added_behind_the_leaders_log_base_is_built_by_a_snapshot_then_the_log(
    nodes: Nodes,
) -> None:
    for node in NODES:
        await nodes.start(node)
    leader = await nodes.leader()
    for i in range(300):
        await asyncio.wait_for(leader.propose(GROUP, _put(b"t%04d" % i, b"v%d" % i)), 5)
    await wait_until(lambda: len({h.engine.applied_index(GROUP) for _, h, _ in nodes.hosts.values()}) == 1)
    # Restart every node: each replica's log now begins at its applied index, so a new
    # member cannot be caught up from the log alone.
    for node in NODES:
        await nodes.stop(node)
    for node in NODES:
        await nodes.start(node)
    leader = await nodes.leader()
    base = leader.multi.replicas[GROUP].log.base.index
    assert base >= 300 - TAIL_ENTRIES  # only the tail the WAL still held is kept

    def stale(engine: Engine) -> None:  # a key the snapshot must replace, one outside it
        engine.apply("other", 1, _put(b"t-stale", b"x") + _put(b"zz", b"keep"), term=1)

    newcomer = await nodes.start("node-d", newcomer=True, before=stale)
    members = {**leader.members(GROUP), "node-d": Role.FULL}  # type: ignore[dict-item]
    await wait_until(lambda: leader.membership_settled(GROUP))
    leader.change_membership(GROUP, members)
    await asyncio.wait_for(leader.propose(GROUP, _put(b"t-after", b"a")), 5)  # needs 3 of 4
    d = newcomer.engine
    # (The install writes RocksDB from a thread: its keys show before it has ended.)
    await wait_until(
        lambda: d.get(b"t-after") == b"a" and not d.installing(GROUP) and d.applied_index(GROUP) > 0
    )
    assert newcomer.snapshots_installed == 1
    # The data came in chunks from the group's leader (whichever it was by then).
    senders = [h for _, h, _ in nodes.hosts.values() if (GROUP, "node-d") in h._streamed]
    assert len(senders) >= 1 and all(h.snapshot_bytes_sent > 300 * 5 for h in senders)
    # Only the newcomer needed one: the restarted followers hold the log up to the base.
    assert all(set(h._streamed) <= {(GROUP, "node-d")} for _, h, _ in nodes.hosts.values())
    assert newcomer.snapshot_bytes_installed > 300 * 5 and leader.snapshot_bytes_sent > 0
    assert all(d.get(b"t%04d" % i) == b"v%d" % i for i in range(300))
    assert d.get(b"t-stale") is None  # the range was replaced
    assert d.get(b"zz") == b"keep"  # and nothing outside it touched
    assert d.applied_index(GROUP) >= base
    assert list((nodes.root / "node-d-snap").iterdir()) == []  # staging removed once installed
    # Counted in the node's metrics: installs and their bytes.
    state = NodeState(node_id="node-d", zone="z", engine=d, replicas=newcomer)
    metrics.watch_replication(state)
    assert (("node-d", "installed"), 1.0) in metrics.SNAPSHOTS.read()
    installed = dict(metrics.SNAPSHOT_BYTES.read())[("node-d", "installed")]
    assert installed == newcomer.snapshot_bytes_installed > 0


async def test_a_log_only_member_gets_the_position_without_the_data(nodes: Nodes) -> None:
    for node in NODES:
        await nodes.start(node)
    leader = await nodes.leader()
    for i in range(20):
        await asyncio.wait_for(leader.propose(GROUP, _put(b"t%04d" % i, b"v")), 5)
    for node in NODES:
        await nodes.stop(node)
    for node in NODES:
        await nodes.start(node)
    leader = await nodes.leader()
    log_member = await nodes.start("node-d", newcomer=True)
    await wait_until(lambda: leader.membership_settled(GROUP))
    # The log member's host knows its role from the partition object (the node passes it).
    log_member.add_group(GROUP, list(NODES), ["node-d"], newcomer=True)
    leader.change_membership(GROUP, {**leader.members(GROUP), "node-d": Role.LOG})  # type: ignore[dict-item]
    await asyncio.wait_for(leader.propose(GROUP, _put(b"t-after", b"a")), 5)
    await wait_until(lambda: log_member.snapshots_installed == 1)
    d = log_member.engine
    assert d.get(b"t0000") is None and d.get(b"t-after") is None  # a log member holds no data
    await wait_until(lambda: d.applied_index(GROUP) >= leader.multi.replicas[GROUP].log.base.index)


async def test_the_same_snapshot_received_twice_keeps_the_staged_data(tmp_path: Path) -> None:
    """Two leaders in turn (a restarted one resuming its term, then the next) may both
    send the snapshot at one (index, term). The second staging must not truncate or
    delete the file of the first: the node's install once failed on a missing file and
    its replication pump stopped (bench.scale, a restart of 1,000 groups)."""
    engine = Engine.open(tmp_path / "a", sync=False)
    host = ReplicaHost(
        "node-a", engine, lambda envelopes: None, FAST, ranges=lambda g: RANGE, snapshot_dir=tmp_path / "snap"
    )
    host.add_group(GROUP, list(NODES))
    meta = snapshot_meta(5, 2, {n: Role.FULL for n in NODES})
    pairs = [(b"t%04d" % i, b"v") for i in range(10)]
    try:
        for sender in ("node-b", "node-c"):
            for chunk in chunks(iter(pairs)):
                host._on_snapshot_chunk(
                    Message(
                        MsgKind.SNAPSHOT,
                        GROUP,
                        sender,
                        "node-a",
                        3,
                        snapshot=meta,
                        snapshot_data=encode_chunk(chunk),
                    ),
                    0.0,
                )
        staged = host._staged[GROUP]
        assert staged.complete and staged.path.exists()
        assert list(staged.pairs()) == pairs
        assert list((tmp_path / "snap").iterdir()) == [staged.path]  # the first one removed
    finally:
        await host.stop()
        await engine.close()


async def test_a_follower_a_few_entries_behind_after_a_restart_is_caught_up_from_the_log(
    nodes: Nodes,
) -> None:
    """Every node restarted, one of them having stopped a few writes before the others
    (as when a cluster stops node by node and leadership is handed around meanwhile): the
    restarted logs reach back before their applied index (the WAL's tail), so the
    laggard gets entries, not a whole snapshot."""
    for node in NODES:
        await nodes.start(node)
    leader = await nodes.leader()
    for i in range(20):
        await asyncio.wait_for(leader.propose(GROUP, _put(b"t%04d" % i, b"v%d" % i)), 5)
    laggard = next(n for n, (_, h, _) in nodes.hosts.items() if h is not leader)
    await wait_until(
        lambda: nodes.hosts[laggard][1].engine.applied_index(GROUP) == leader.engine.applied_index(GROUP)
    )
    await nodes.stop(laggard)
    for i in range(3):
        await asyncio.wait_for(leader.propose(GROUP, _put(b"t-late%d" % i, b"x")), 5)
    for node in list(nodes.hosts):
        await nodes.stop(node)
    for node in NODES:
        await nodes.start(node)
    leader = await nodes.leader()
    behind = nodes.hosts[laggard][1]
    await wait_until(lambda: behind.engine.get(b"t-late2") == b"x")
    assert all(h.snapshots_sent == 0 and not h._streamed for _, h, _ in nodes.hosts.values())
    assert behind.snapshots_installed == 0
