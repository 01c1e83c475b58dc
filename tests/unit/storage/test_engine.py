"""The storage engine: RocksDB made durable by the node's WAL.

Real RocksDB files and a real WAL in tmp_path. Crashes are real: a child process
commits and then SIGKILLs itself, so nothing is flushed or closed behind our back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from partita.storage import engine as engine_module
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.group_log import LOCAL_GROUP
from partita.storage.replication.types import HardState
from partita.storage.wal import WriteAheadLog

ROOT = Path(__file__).resolve().parents[3]


def put(key: bytes, value: bytes) -> Effect:
    return Effect(Kind.PUT, key, value)


def tkey(table_id: int, rest: bytes = b"") -> bytes:
    return table_id.to_bytes(8, "big") + rest


def wal_segments(directory: Path) -> list[Path]:
    return sorted((directory / "wal").glob("wal-*.log"))


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """WAL segments of 512 bytes, so a few commits span several segments."""
    original = WriteAheadLog.open.__func__  # type: ignore[attr-defined]

    def open_small(cls: type[WriteAheadLog], directory: Path, **kwargs: object) -> WriteAheadLog:
        kwargs.setdefault("segment_bytes", 512)
        return original(cls, directory, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(WriteAheadLog, "open", classmethod(open_small))


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


class HeldSync:
    """Replaces os.fdatasync: every WAL sync waits until `release()` (or fails)."""

    def __init__(self, fail: bool = False) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()
        self.fail = fail
        self._real = os.fdatasync

    def __call__(self, fd: int) -> None:
        self.entered.set()
        self.go.wait(10)
        if self.fail:
            raise OSError(5, "injected fdatasync failure")
        self._real(fd)

    def release(self) -> None:
        self.go.set()


async def wait_for(predicate: Callable[[], bool]) -> None:
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


# --- reads and writes -------------------------------------------------------------


async def test_committed_put_is_visible_to_get_and_latest(engine: Engine) -> None:
    lsn = await engine.commit([put(b"k", b"v")])
    assert lsn == 1
    assert engine.get(b"k") == b"v"
    assert engine.latest(b"k") == b"v"
    assert engine.applied_lsn == 1


async def test_commits_get_consecutive_lsns_and_later_put_wins(engine: Engine) -> None:
    first = await engine.commit([put(b"k", b"one")])
    second = await engine.commit([put(b"k", b"two")])
    assert second == first + 1
    assert engine.get(b"k") == b"two"


async def test_commit_many_returns_one_lsn_per_write_in_order(engine: Engine) -> None:
    lsns = await engine.commit_many([[put(b"a", b"1")], [put(b"b", b"2")], [put(b"c", b"3")]])
    assert lsns == [1, 2, 3]
    assert [engine.get(k) for k in (b"a", b"b", b"c")] == [b"1", b"2", b"3"]
    assert engine.applied_lsn == 3


async def test_delete_removes_the_key(engine: Engine) -> None:
    await engine.commit([put(b"k", b"v"), put(b"other", b"x")])
    await engine.commit([Effect(Kind.DELETE, b"k")])
    assert engine.get(b"k") is None
    assert engine.latest(b"k") is None
    assert engine.get(b"other") == b"x"


async def test_delete_range_removes_exactly_the_half_open_range(engine: Engine) -> None:
    keys = [b"a", b"b", b"b\x00", b"bz", b"c", b"d"]
    await engine.commit([put(k, b"v") for k in keys])
    await engine.commit([Effect(Kind.DELETE_RANGE, b"b", b"c")])
    remaining = [k for k in keys if engine.get(k) is not None]
    assert remaining == [b"a", b"c", b"d"]


async def test_scan_yields_keys_in_range_forward_and_reverse(engine: Engine) -> None:
    await engine.commit([put(bytes([i]), bytes([i])) for i in range(1, 10)])
    forward = [k for k, _ in engine.scan(b"\x03", b"\x07")]
    assert forward == [b"\x03", b"\x04", b"\x05", b"\x06"]
    reverse = [k for k, _ in engine.scan(b"\x03", b"\x07", reverse=True)]
    assert reverse == [b"\x06", b"\x05", b"\x04", b"\x03"]
    assert dict(engine.scan(b"\x08", b"\xff")) == {b"\x08": b"\x08", b"\x09": b"\x09"}


async def test_reverse_scan_with_upper_bound_between_keys(engine: Engine) -> None:
    await engine.commit([put(b"a", b"1"), put(b"c", b"3")])
    assert [k for k, _ in engine.scan(b"a", b"b", reverse=True)] == [b"a"]
    assert [k for k, _ in engine.scan(b"a", b"\xff", reverse=True)] == [b"c", b"a"]


# --- the pending overlay ------------------------------------------------------------


async def test_latest_sees_an_in_flight_put_that_get_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = Engine.open(tmp_path / "node", sync=True)
    await e.commit([put(b"k", b"old")])
    held = HeldSync()
    monkeypatch.setattr(os, "fdatasync", held)
    task = asyncio.create_task(e.commit([put(b"k", b"new")]))
    try:
        await asyncio.to_thread(held.entered.wait, 10)
        assert held.entered.is_set()
        assert e.latest(b"k") == b"new"
        assert e.get(b"k") == b"old"
        assert e.latest(b"never-written") is None
    finally:
        held.release()
        await task
    assert e.get(b"k") == b"new"
    assert e.latest(b"k") == b"new"
    await e.close()


async def test_latest_sees_an_in_flight_delete_as_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = Engine.open(tmp_path / "node", sync=True)
    await e.commit([put(b"k", b"old")])
    held = HeldSync()
    monkeypatch.setattr(os, "fdatasync", held)
    task = asyncio.create_task(e.commit([Effect(Kind.DELETE, b"k")]))
    try:
        await asyncio.to_thread(held.entered.wait, 10)
        assert e.latest(b"k") is None
        assert e.get(b"k") == b"old"
    finally:
        held.release()
        await task
    assert e.get(b"k") is None
    await e.close()


async def test_a_failed_commit_leaves_no_pending_value_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = Engine.open(tmp_path / "node", sync=True)
    await e.commit([put(b"k", b"old")])
    held = HeldSync(fail=True)
    monkeypatch.setattr(os, "fdatasync", held)
    task = asyncio.create_task(e.commit([put(b"k", b"lost")]))
    await asyncio.to_thread(held.entered.wait, 10)
    held.release()
    with pytest.raises(OSError):
        await task
    assert e.latest(b"k") == b"old"
    assert e.get(b"k") == b"old"
    monkeypatch.undo()
    await e.close()


# --- recovery -------------------------------------------------------------------------

_CRASHING_WRITER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from partita.storage.effects import Effect, Kind
    from partita.storage.engine import Engine
    from partita.storage.wal import WriteAheadLog

    directory, checkpoint_after = Path(sys.argv[1]), int(sys.argv[2])
    original = WriteAheadLog.open.__func__
    WriteAheadLog.open = classmethod(lambda cls, d, **kw: original(cls, d, segment_bytes=512, **kw))

    async def main():
        engine = Engine.open(directory)
        last = 0
        for i in range(60):
            if i == checkpoint_after:
                await engine.checkpoint()
            last = await engine.commit([Effect(Kind.PUT, b"k%03d" % i, b"value-%d" % i)])
        last = await engine.commit([Effect(Kind.DELETE, b"k007")])
        last = await engine.commit([Effect(Kind.DELETE_RANGE, b"k050", b"k055")])
        print(last, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


def crash_writer(directory: Path, checkpoint_after: int) -> int:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'services'}{os.pathsep}{ROOT / 'operator'}")
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(directory), str(checkpoint_after)],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    return int(proc.stdout)


def expected_after_crash_writer() -> dict[bytes, bytes]:
    out = {b"k%03d" % i: b"value-%d" % i for i in range(60)}
    del out[b"k007"]
    for i in range(50, 55):
        del out[b"k%03d" % i]
    return out


@pytest.mark.parametrize("checkpoint_after", [-1, 30], ids=["no-checkpoint", "checkpoint-midway"])
async def test_everything_committed_before_a_crash_is_there_after_reopening(
    tmp_path: Path, checkpoint_after: int
) -> None:
    directory = tmp_path / "node"
    last = crash_writer(directory, checkpoint_after)
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_lsn == last
        assert dict(e.scan(b"k", b"l")) == expected_after_crash_writer()
        # The log continues after the recovered records, not over them.
        assert await e.commit([put(b"after", b"crash")]) == last + 1
    finally:
        await e.close()


async def test_applied_lsn_and_data_survive_a_clean_reopen(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await e.commit([put(b"a", b"1")])
    last = await e.commit([put(b"b", b"2")])
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_lsn == last
        assert e.get(b"a") == b"1" and e.get(b"b") == b"2"
        assert await e.commit([put(b"c", b"3")]) == last + 1
    finally:
        await e.close()


async def test_reopen_replays_records_the_database_lost(tmp_path: Path) -> None:
    """RocksDB's own WAL is off: if its unflushed state is lost, our WAL restores it."""
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await e.commit([put(b"a", b"1")])
    await e.checkpoint()  # "a" and applied lsn 1 are in an SST now
    await e.commit([put(b"b", b"2")])
    await e.commit([Effect(Kind.DELETE, b"a")])
    await e._wal.close()
    # Undo what RocksDB might have persisted after the checkpoint, as a crash would.
    e._db.put(engine_module.APPLIED_LSN_KEY, engine_module._LSN.pack(1))
    e._db.put(engine_module.APPLIED_INDEX_PREFIX + LOCAL_GROUP.encode(), engine_module._LSN.pack(1))
    e._db.put(b"a", b"1")
    e._db.delete(b"b")
    e._db.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_lsn == 3
        assert e.get(b"a") is None
        assert e.get(b"b") == b"2"
    finally:
        await e.close()


# --- checkpoints ----------------------------------------------------------------------


async def test_checkpoint_drops_wal_segments_below_the_applied_lsn(
    tmp_path: Path, small_segments: None
) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    for i in range(40):
        await e.commit([put(b"k%03d" % i, b"x" * 40)])
    assert len(wal_segments(directory)) > 3
    await e.checkpoint()
    assert len(wal_segments(directory)) == 1
    assert e._wal.first_lsn > 1
    await e.commit([put(b"late", b"y")])
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_lsn == 41
        assert all(e.get(b"k%03d" % i) == b"x" * 40 for i in range(40))
        assert e.get(b"late") == b"y"
    finally:
        await e.close()


async def test_commits_past_the_threshold_start_a_checkpoint(
    tmp_path: Path, small_segments: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # About a dozen records (each ~80 bytes with its group tag): under three segments.
    monkeypatch.setattr(engine_module, "CHECKPOINT_WAL_BYTES", 1000)
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    try:
        for i in range(40):
            await e.commit([put(b"k%03d" % i, b"x" * 40)])
        await wait_for(lambda: len(wal_segments(directory)) <= 3 and not e._checkpointing)
        assert e._wal.first_lsn > 1
    finally:
        await e.close()


# --- table ids ------------------------------------------------------------------------


async def test_table_ids_lists_each_table_with_keys_and_skips_node_metadata(engine: Engine) -> None:
    assert engine.table_ids() == set()
    ids = {1, 3, 255, 257, 2**63 + 1, 2**64 - 1}
    await engine.commit([put(tkey(t, b"item%d" % n), b"v") for t in ids for n in range(3)])
    assert engine.applied_lsn > 0  # the applied-LSN key exists and is not a table
    assert engine.table_ids() == ids


async def test_table_ids_forgets_a_table_whose_range_was_dropped(engine: Engine) -> None:
    await engine.commit([put(tkey(5, b"a"), b"v"), put(tkey(7, b"a"), b"v"), put(tkey(7, b"b"), b"v")])
    await engine.commit([Effect(Kind.DELETE_RANGE, tkey(7), tkey(8))])
    assert engine.table_ids() == {5}


async def test_staged_write_is_visible_to_latest_and_unstaged_when_its_commit_fails(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    effects = [Effect(Kind.PUT, b"\x00" * 7 + b"\x01staged", b"v1")]
    engine.stage(effects)
    assert engine.latest(effects[0].key) == b"v1"  # a later read-modify-write builds on it
    assert engine.get(effects[0].key) is None  # but no reader sees it before it is durable

    async def failing_append(payloads: list[bytes]) -> list[int]:
        raise OSError(5, "disk on fire")

    monkeypatch.setattr(engine._wal, "append_many", failing_append)
    with pytest.raises(OSError):
        await engine.commit_staged([effects])
    assert engine.latest(effects[0].key) is None  # the failed write is forgotten
    assert engine._pending == {}


async def test_a_clean_close_is_found_by_the_next_open_only(tmp_path: Path) -> None:
    engine = Engine.open(tmp_path / "e")
    assert not engine.stopped_cleanly  # a new directory
    await engine.close(clean=True)
    engine = Engine.open(tmp_path / "e")
    assert engine.stopped_cleanly
    await engine.close()  # not clean: a crash, or a round's write cut short
    engine = Engine.open(tmp_path / "e")
    assert not engine.stopped_cleanly
    await engine.close(clean=True)
    engine = Engine.open(tmp_path / "e")
    assert engine.stopped_cleanly
    # The mark is taken at open: a crash of this process is never read as a clean stop.
    assert not (tmp_path / "e" / engine_module.CLEAN_STOP_MARK).exists()
    await engine.close()


async def test_forgetting_a_nodes_leadership_drops_it_from_its_groups_hard_states_durably(
    tmp_path: Path,
) -> None:
    engine = Engine.open(tmp_path / "e")
    await engine.append_entries("g1", [], HardState(3, "node-a", 7, "node-a"))
    await engine.append_entries("g2", [], HardState(2, "node-b", 4, "node-b"))
    assert await engine.forget_leadership("node-a") == 1
    assert await engine.forget_leadership("node-a") == 0
    await engine.close()
    engine = Engine.open(tmp_path / "e")
    # Term, vote and commit stay: only the leader to resume is gone.
    assert engine.hard_state("g1") == HardState(3, "node-a", 7, None)
    assert engine.hard_state("g2") == HardState(2, "node-b", 4, "node-b")
    await engine.close()
