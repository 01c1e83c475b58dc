"""A snapshot is installed in bounded RocksDB batches under an "installing" marker
(`Engine.install_snapshot`): a crash in the middle leaves the range empty and not served
(`Engine.installing`, the data plane's NOT_LEADER) until the install is done again, or
the log has rebuilt the replica as far as the snapshot went.

Real RocksDB and a real WAL in tmp_path; the SIGKILL case is a real child process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.partition_map import Partition
from partita.storage import engine as engine_module
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind, encode_effects
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState, sync_groups
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.types import EntryKind, HardState, Ready, make_entry
from tests.unit import records

ROOT = Path(__file__).resolve().parents[3]
BATCH = 4096
PAIRS = 200  # about 40 KB: ten batches of BATCH bytes
GROUP = "g"


def pairs(count: int = PAIRS) -> Iterator[tuple[bytes, bytes]]:
    for i in range(count):
        yield b"t%05d" % i, b"v" * 200


class CountingDb:
    """The engine's Rdict, with the size of every batch written recorded."""

    def __init__(self, db: Any) -> None:
        self._db = db
        self.batch_bytes: list[int] = []

    def write(self, batch: Any) -> None:
        self.batch_bytes.append(batch.size_in_bytes())
        self._db.write(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


async def old_replica(e: Engine) -> None:
    """What the snapshot replaces: a replica with data in the range and a log."""
    entries = [
        make_entry(2, i, EntryKind.NORMAL, encode_effects([Effect(Kind.PUT, b"told%d" % i, b"x")]))
        for i in (1, 2, 3)
    ]
    await e.append_entries(GROUP, entries, HardState(2, "a", 3))
    for item in entries:
        e.apply(GROUP, item.index, [Effect(Kind.PUT, b"told%d" % item.index, b"x")], term=2)


async def test_a_snapshot_larger_than_a_batch_goes_in_bounded_batches(tmp_path: Path) -> None:
    e = Engine.open(tmp_path / "node", sync=False)
    counting = CountingDb(e._db)
    e._db = counting  # type: ignore[assignment]
    try:
        size = e.install_snapshot(GROUP, b"t", b"u", pairs(), 40, 3, batch_bytes=BATCH)
        assert size == PAIRS * (6 + 200)
        assert len(counting.batch_bytes) >= 10
        # No batch holds more than one batch's worth plus one pair and the bookkeeping.
        assert max(counting.batch_bytes) < BATCH + 400
        assert not e.installing(GROUP) and e.applied_position(GROUP) == (40, 3)
        assert len(list(e.scan(b"t", b"u"))) == PAIRS
    finally:
        e._db = counting._db
        await e.close()


def _crashing(count: int = PAIRS // 2) -> Iterator[tuple[bytes, bytes]]:
    """`count` pairs of the snapshot, then the sender's crash."""
    yield from pairs(count)
    raise RuntimeError("crash")


async def reopened_after_a_cut_short_install(directory: Path) -> Engine:
    """An old replica whose install of a new snapshot crashed halfway, reopened.

    Stopped without finishing: closing RocksDB flushes the half install (the worst
    case: its first half and the marker are on disk)."""
    e = Engine.open(directory, sync=False)
    await old_replica(e)
    with pytest.raises(RuntimeError):
        e.install_snapshot(GROUP, b"t", b"u", _crashing(), 40, 3, batch_bytes=BATCH)
    await e._wal.close()
    e._db.close()
    return Engine.open(directory, sync=False)


def assert_cut_short(e: Engine) -> None:
    assert e.installing(GROUP)
    assert list(e.scan(b"t", b"u")) == []  # neither the old data nor part of the new
    assert e.applied_position(GROUP) == (0, 0)
    assert e.last_index(GROUP) == 0 and e.read_entries(GROUP, 1, 3) == []
    # Term and vote stay (a vote is never forgotten); the commit index counted a log
    # that is gone.
    assert e.hard_state(GROUP) == HardState(2, "a", 0)


async def test_a_reopen_after_an_install_cut_short_finds_the_range_empty_and_unserved(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = await reopened_after_a_cut_short_install(directory)
    try:
        assert_cut_short(e)
        # The install again: it completes.
        e.install_snapshot(GROUP, b"t", b"u", pairs(), 40, 3, batch_bytes=BATCH)
        assert not e.installing(GROUP) and e.applied_position(GROUP) == (40, 3)
    finally:
        await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert not e.installing(GROUP) and e.applied_position(GROUP) == (40, 3)
        assert len(list(e.scan(b"t", b"u"))) == PAIRS
    finally:
        await e.close()


_CRASHING_INSTALLER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from partita.storage.effects import Effect, Kind, encode_effects
    from partita.storage.engine import Engine
    from partita.storage.replication.types import EntryKind, HardState, Ready, make_entry

    directory = Path(sys.argv[1])

    async def main():
        engine = Engine.open(directory)
        entries = [
            make_entry(2, i, EntryKind.NORMAL, encode_effects([Effect(Kind.PUT, b"told%d" % i, b"x")]))
            for i in (1, 2, 3)
        ]
        await engine.append_entries("g", entries, HardState(2, "a", 3))
        for e in entries:
            engine.apply("g", e.index, [Effect(Kind.PUT, b"told%d" % e.index, b"x")], term=2)
        await engine.checkpoint()

        def pairs():
            for i in range(200):
                if i == 100:
                    engine._db.flush(True)  # as RocksDB may when its memtable fills
                if i == 150:
                    os.kill(os.getpid(), signal.SIGKILL)
                yield b"t%05d" % i, b"v" * 200

        engine.install_snapshot("g", b"t", b"u", pairs(), 40, 3, batch_bytes=4096)

    asyncio.run(main())
    """
)


async def test_a_sigkill_in_the_middle_of_an_install_leaves_the_range_unserved_until_it_is_redone(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "node"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'services'}{os.pathsep}{ROOT / 'operator'}")
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHING_INSTALLER, str(directory)], capture_output=True, env=env, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    e = Engine.open(directory, sync=False)
    try:
        assert_cut_short(e)
        e.install_snapshot(GROUP, b"t", b"u", pairs(), 40, 3, batch_bytes=BATCH)
        assert not e.installing(GROUP) and len(list(e.scan(b"t", b"u"))) == PAIRS
    finally:
        await e.close()


async def test_a_replica_restarted_from_an_install_cut_short_abstains_from_elections_until_rebuilt(
    tmp_path: Path,
) -> None:
    """Its log is empty: voting, it could help elect a leader that lacks entries it once
    acknowledged. It votes again once the log has applied as far as the snapshot."""
    e = await reopened_after_a_cut_short_install(tmp_path / "node")
    try:
        host = ReplicaHost("b", e, lambda envelopes: None)
        host.add_group(GROUP, ["a", "b", "c"])
        replica = host.multi.replicas[GROUP]
        assert replica.abstaining and replica.log.last_index == 0
        noops = [make_entry(3, i, EntryKind.NOOP, b"") for i in range(1, 41)]
        host._apply(Ready(GROUP, committed=noops[:39]))
        assert replica.abstaining
        host._apply(Ready(GROUP, committed=noops[39:]))
        assert not replica.abstaining and not e.installing(GROUP)
    finally:
        await e.close()


async def test_an_install_cut_short_is_over_once_the_log_has_applied_as_far(tmp_path: Path) -> None:
    """The leader may rebuild the replica from its log instead of a snapshot: once it has
    applied the snapshot's index, the range is whole again."""
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    e._db.put(
        engine_module.INSTALLING_PREFIX + GROUP.encode(),
        engine_module._INSTALLING.pack(5, 2, 1) + b"t" + b"u",
    )
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.installing(GROUP)
        e.apply(GROUP, 4, [], term=2)
        assert e.installing(GROUP)
        e.apply(GROUP, 5, [], term=2)
        assert not e.installing(GROUP)
    finally:
        await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert not e.installing(GROUP) and e.applied_position(GROUP) == (5, 2)
    finally:
        await e.close()


async def test_the_data_plane_serves_nothing_of_a_range_whose_install_was_cut_short(
    node_d: NodeState,
) -> None:
    end = 2**64
    tables = [records.table_record(Partition("p0", 0, end, ("a", "b", "d"), "a"), name="t1", table_id=1)]
    sync_groups(node_d, tables)
    node_d.hosted = desired_hosting(tables, "d")
    plane = DataPlane(node_d)
    group = group_of(1, "p0")
    lo, hi = keys.hash_range_bounds(1, 0, end)
    read = pb.Request(id=9, op=pb.GET, table_id=1, partition_id="p0", key_hash=1, key=b"k")
    assert plane.plan(read).response.status == pb.NOT_FOUND  # served: no item "k"
    with pytest.raises(RuntimeError):
        node_d.engine.install_snapshot(group, lo, hi, _crashing(0), 10, 2)
    assert node_d.engine.installing(group)
    assert plane.plan(read).response.status == pb.NOT_LEADER
    floor = pb.Request(id=10, op=pb.GET, table_id=1, partition_id="p0", key_hash=1, key=b"k", read_floor=1)
    gated = plane.read_gate(floor)
    assert isinstance(gated, pb.Response) and gated.status == pb.NOT_LEADER
