"""A snapshot install writes RocksDB from a worker thread (`Engine.install_snapshot_off_loop`):
the host's pump goes on serving the node's other groups meanwhile, while the group being
installed stays frozen (nothing persisted, sent, applied or served for it) until the
install ends.

A real engine (RocksDB and the WAL in tmp_path) and the real consensus core; the install's
thread is held at its start by an event, so "meanwhile" is certain, not a race."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.coalesce import Envelope, coalesce, expand
from partita.storage.replication.config import ReplicationConfig
from partita.storage.replication.types import Message, MsgKind, Role, snapshot_meta
from partita.storage.snapshot import chunks, encode_chunk
from tests.unit.storage.polling import wait_until

INSTALLED = "7/p0"  # a follower here, sent a snapshot by node-a
OTHER = "7/p1"  # this node alone: it commits on its own
RANGE = (b"t", b"u")
ANSWERS = frozenset({MsgKind.APPEND_RESP, MsgKind.HEARTBEAT_RESP})  # what a follower tells its leader
CONFIG = ReplicationConfig(
    heartbeat_interval=0.05, election_timeout=0.4, lease_duration=0.3, quiesce_after=60
)


def snapshot_messages(index: int, term: int) -> list[Message]:
    pairs = ((b"t%05d" % i, b"v" * 100) for i in range(3000))  # about 300 KB: two chunks
    meta = snapshot_meta(index, term, {"node-a": Role.FULL, "node-d": Role.FULL})
    return [
        Message(
            MsgKind.SNAPSHOT,
            INSTALLED,
            "node-a",
            "node-d",
            term,
            snapshot=meta,
            snapshot_data=encode_chunk(c),
        )
        for c in chunks(pairs)
    ]


async def test_other_groups_commit_while_a_snapshot_is_installed_and_the_installed_group_waits(
    tmp_path: Path,
) -> None:
    engine = Engine.open(tmp_path / "d", sync=False)
    sent: list[Message] = []

    def send(envelopes: list[Envelope]) -> None:
        sent.extend(m for envelope in envelopes for m in expand(envelope))

    host = ReplicaHost(
        "node-d", engine, send, CONFIG, ranges=lambda group: RANGE, snapshot_dir=tmp_path / "snapshots"
    )
    gate = threading.Event()
    started = threading.Event()
    frozen_at: list[int] = []  # how much had been sent when the install's thread began
    write_install = engine._write_install

    def held_write(*args: object) -> int:
        if not started.is_set():
            frozen_at.append(len(sent))
        started.set()
        if not gate.wait(10):
            raise AssertionError("the test never released the install")
        return write_install(*args)  # type: ignore[arg-type]

    engine._write_install = held_write  # type: ignore[method-assign]
    host.add_group(INSTALLED, ["node-a", "node-d"])
    host.add_group(OTHER, ["node-d"])
    host.start()
    try:
        await wait_until(lambda: host.is_leader(OTHER))
        before = len(sent)
        for m in snapshot_messages(40, 3):
            for envelope in coalesce([m]):
                host.receive(envelope)
        await wait_until(started.is_set)
        # The install is under way in its thread: the range is not served, its position
        # is gone, and the group has not answered the snapshot yet. Its election timer may
        # have sent a pre-vote before the snapshot arrived (the two groups' timers run out
        # together), but from the install's start it sends nothing at all.
        assert engine.installing(INSTALLED) and engine.applied_index(INSTALLED) == 0
        assert not any(m.group == INSTALLED and m.kind in ANSWERS for m in sent[before:])
        assert not any(m.group == INSTALLED for m in sent[frozen_at[0] :])
        # The pump is not blocked: the other group commits and applies writes.
        for i in range(5):
            await asyncio.wait_for(host.propose(OTHER, [Effect(Kind.PUT, b"w%d" % i, b"x")]), 5)
        assert engine.get(b"w4") == b"x"
        # Heartbeats from the installed group's leader are not answered either meanwhile.
        beat = Message(MsgKind.HEARTBEAT, INSTALLED, "node-a", "node-d", 3, commit=40, round=1)
        for envelope in coalesce([beat]):
            host.receive(envelope)
        await asyncio.sleep(0.1)
        assert not any(m.group == INSTALLED for m in sent[frozen_at[0] :])
        gate.set()
        await wait_until(lambda: engine.applied_index(INSTALLED) == 40 and not engine.installing(INSTALLED))
        await wait_until(
            lambda: any(m.group == INSTALLED and m.kind == MsgKind.APPEND_RESP for m in sent[before:])
        )
        answered = [m for m in sent[before:] if m.group == INSTALLED]
        assert [m.index for m in answered if m.kind == MsgKind.APPEND_RESP] == [40]
        assert any(m.kind == MsgKind.HEARTBEAT_RESP for m in answered)  # held, then sent
        assert engine.get(b"t02999") == b"v" * 100 and host.snapshots_installed == 1
    finally:
        gate.set()
        await host.stop()
        await engine.close()


def _pairs() -> Iterator[tuple[bytes, bytes]]:
    for i in range(100):
        yield b"t%03d" % i, b"v"


async def test_an_erasure_waits_for_an_install_in_its_thread(tmp_path: Path) -> None:
    """Erasing the group while its install's thread writes would leave the thread's later
    batches behind in the erased range."""
    engine = Engine.open(tmp_path / "d", sync=False)
    gate = threading.Event()
    write_install = engine._write_install

    def held_write(*args: object) -> int:
        gate.wait(10)
        return write_install(*args)  # type: ignore[arg-type]

    engine._write_install = held_write  # type: ignore[method-assign]
    try:
        install = asyncio.create_task(engine.install_snapshot_off_loop(INSTALLED, *RANGE, _pairs(), 9, 2))
        await asyncio.sleep(0.05)
        assert engine.installing(INSTALLED)
        erase = asyncio.create_task(engine.erase_group(INSTALLED, (RANGE,)))
        await asyncio.sleep(0.1)
        assert not erase.done()  # waiting for the thread
        gate.set()
        await asyncio.wait_for(asyncio.gather(install, erase), 10)
        assert engine.get(b"t050") is None and engine.applied_index(INSTALLED) == 0
        assert not engine.installing(INSTALLED)
    finally:
        gate.set()
        await engine.close()
