"""A replica removed from this node is erased (`Engine.erase_group`): its data range,
applied position, hard state and WAL records, durably, so a restart does not bring the
old position back; and `sync_groups`/`erase_removed` erase only what no other replica
on the node serves (a split's children share their parent's range).

Real RocksDB and a real WAL in tmp_path. Crashes are real: a child process builds a
replica, starts erasing it and SIGKILLs itself at a chosen point, so nothing is flushed
or closed behind the test's back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import TableRecord
from partita.storage.effects import Effect, Kind, encode_effects
from partita.storage.engine import Engine
from partita.storage.group_log import (
    EraseRecord,
    RecordError,
    decode_record,
    encode_erase,
    group_of,
)
from partita.storage.node import NodeState, erase_removed, sync_groups
from partita.storage.replication.types import Entry, EntryKind, HardState, make_entry
from tests.unit import records

ROOT = Path(__file__).resolve().parents[3]
END = 2**64


def put(key: bytes, value: bytes) -> Effect:
    return Effect(Kind.PUT, key, value)


def entry(term: int, index: int, *effects: Effect) -> Entry:
    return make_entry(term, index, EntryKind.NORMAL, encode_effects(list(effects)))


# --- the record -----------------------------------------------------------------------


def test_an_erasure_record_round_trips_with_its_group_and_ranges() -> None:
    ranges = ((b"a", b"b"), (b"\x00\x01", b"\xff" * 20))
    assert decode_record(encode_erase("7/p0", ranges)) == EraseRecord("7/p0", ranges)
    assert decode_record(encode_erase("7/p0", ())) == EraseRecord("7/p0", ())


@pytest.mark.parametrize("cut", [1, 4, 9])
def test_a_truncated_erasure_record_is_refused(cut: int) -> None:
    payload = encode_erase("g", ((b"lo", b"hi"),))
    with pytest.raises(RecordError):
        decode_record(payload[: len(payload) - cut])


# --- the engine -----------------------------------------------------------------------


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


async def replica(e: Engine, group: str, prefix: bytes, count: int, term: int = 2) -> None:
    """A replicated group's replica with `count` committed and applied entries, the
    last one committed but not applied (replay would apply it)."""
    entries = [entry(term, i, put(prefix + b"%03d" % i, b"v%d" % i)) for i in range(1, count + 1)]
    await e.append_entries(group, entries, HardState(term, "a", count))
    for item in entries[:-1]:
        e.apply(group, item.index, [put(prefix + b"%03d" % item.index, b"v%d" % item.index)], term=term)


async def test_an_erased_replica_has_no_data_position_or_log_and_a_reopen_keeps_it_so(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await replica(e, "r", b"r", 5)
    await replica(e, "s", b"s", 3)
    await e.erase_group("r", ((b"r", b"s"),))
    assert list(e.scan(b"r", b"s")) == []
    assert e.applied_position("r") == (0, 0) and e.hard_state("r") is None
    assert e.last_index("r") == 0 and e.read_entries("r", 1, 5) == []
    assert "r" not in e.groups()
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert list(e.scan(b"r", b"s")) == []
        assert e.applied_position("r") == (0, 0) and e.hard_state("r") is None
        assert e.last_index("r") == 0 and "r" not in e.groups()
        # The other replica is untouched (its committed entry 3 applied on replay).
        assert e.applied_position("s") == (3, 2) and e.hard_state("s") == HardState(2, "a", 3)
        assert len(list(e.scan(b"s", b"t"))) == 3
    finally:
        await e.close()


async def test_a_replica_added_back_after_its_erasure_keeps_its_new_log(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await replica(e, "r", b"r", 5)
    await e.erase_group("r", ((b"r", b"s"),))
    await e.append_entries("r", [entry(7, 1, put(b"r-new", b"1"))], HardState(7, "b", 1))
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_position("r") == (1, 7) and e.hard_state("r") == HardState(7, "b", 1)
        assert list(e.scan(b"r", b"s")) == [(b"r-new", b"1")]
        assert [x.index for x in e.read_entries("r", 1, 10)] == [1]
    finally:
        await e.close()


async def test_a_checkpoint_while_the_erasure_is_written_does_not_bring_the_group_back(
    tmp_path: Path,
) -> None:
    """A checkpoint appends old hard states again (so truncation keeps them): not the
    hard state of a group whose erasure record is on its way, or replay, finding it
    after the record, would bring the group back."""
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await replica(e, "r", b"r", 3)
    e.apply("r", 3, [put(b"r003", b"v3")], term=2)  # all applied: its hard state is old
    gate = asyncio.Event()

    async def held(payloads: list[bytes]) -> list[int]:
        queued = e._wal._submit(payloads)  # in the log's queue (its LSN taken) at once
        await gate.wait()
        return await queued

    e._wal.append_many = held  # type: ignore[method-assign]
    erasing = asyncio.create_task(e.erase_group("r", ((b"r", b"s"),)))
    await asyncio.sleep(0)
    del e._wal.append_many
    await e.checkpoint()
    gate.set()
    await erasing
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert "r" not in e.groups() and e.hard_state("r") is None
    finally:
        await e.close()


_CRASHING_ERASER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from partita.storage.effects import Effect, Kind, encode_effects
    from partita.storage.engine import Engine
    from partita.storage.replication.types import EntryKind, HardState, make_entry

    directory, when = Path(sys.argv[1]), sys.argv[2]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    async def main():
        engine = Engine.open(directory)
        def entry(i):
            return make_entry(2, i, EntryKind.NORMAL, encode_effects([Effect(Kind.PUT, b"r%03d" % i, b"v")]))
        # Half of the replica's data is flushed (an SST), half is only in the WAL.
        await engine.append_entries("r", [entry(i) for i in range(1, 11)], HardState(2, "a", 10))
        for i in range(1, 6):
            engine.apply("r", i, [Effect(Kind.PUT, b"r%03d" % i, b"v")], term=2)
        await engine.commit([Effect(Kind.PUT, b"local", b"1")])
        await engine.checkpoint()
        for i in range(6, 11):
            engine.apply("r", i, [Effect(Kind.PUT, b"r%03d" % i, b"v")], term=2)
        if when == "before-the-record":
            engine._wal.append_many = die
        elif when == "before-the-batch":
            engine._erase = die
        await engine.erase_group("r", ((b"r", b"s"),))
        if when == "after-a-checkpoint":
            await engine.checkpoint()
            await engine.commit([Effect(Kind.PUT, b"local", b"2")])
        die()

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(
    "when", ["before-the-record", "before-the-batch", "after-the-batch", "after-a-checkpoint"]
)
async def test_a_crash_while_erasing_leaves_the_old_replica_or_none(tmp_path: Path, when: str) -> None:
    directory = tmp_path / "node"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'services'}{os.pathsep}{ROOT / 'operator'}")
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHING_ERASER, str(directory), when],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    e = Engine.open(directory, sync=False)
    try:
        if when == "before-the-record":
            # The old replica, whole: every committed entry applied again.
            assert [k for k, _ in e.scan(b"r", b"s")] == [b"r%03d" % i for i in range(1, 11)]
            assert e.applied_position("r") == (10, 2) and e.hard_state("r") == HardState(2, "a", 10)
            assert e.last_index("r") == 10
        else:
            assert list(e.scan(b"r", b"s")) == []
            assert e.applied_position("r") == (0, 0) and e.hard_state("r") is None
            assert e.last_index("r") == 0 and "r" not in e.groups()
        assert e.get(b"local") is not None  # the node-local group is untouched
    finally:
        await e.close()
    # A second reopen finds the same (the redone erasure was itself made to stick).
    e = Engine.open(directory, sync=False)
    try:
        assert ("r" in e.groups()) == (when == "before-the-record")
    finally:
        await e.close()


# --- the node: what is erased ------------------------------------------------------------


def table(*partitions: Partition) -> list[TableRecord]:
    return [records.table_record(*partitions, name="t1", table_id=1)]


def item(h: int, name: bytes) -> bytes:
    return keys.item_key(1, h, name, None)


async def test_a_removed_replicas_range_is_erased_but_not_what_another_replica_here_serves(
    node_d: NodeState,
) -> None:
    """The removed partition p0 covers [0, END/2); a single-replica partition this node
    holds (p1, [END/2, END)) is untouched, and so is a replica of another table."""
    group = group_of(1, "p0")
    p0 = Partition("p0", 0, END // 2, ("a", "b", "d"), "a")
    p1 = Partition("p1", END // 2, END, ("d",), "d")
    sync_groups(node_d, table(p0, p1))
    inside, outside = item(5, b"in"), item(END // 2 + 5, b"out")
    other_table = keys.item_key(3, 5, b"x", None)
    node_d.engine.apply(group, 4, [put(inside, b"1")], term=2)
    await node_d.engine.commit([put(outside, b"1")], group_of(1, "p1"))
    await node_d.engine.commit([put(other_table, b"1")], group_of(3, "p0"))
    sync_groups(node_d, table(Partition("p0", 0, END // 2, ("a", "b", "c"), "a"), p1))
    await erase_removed(node_d)
    assert node_d.erasing == {}
    assert node_d.engine.get(inside) is None and node_d.engine.applied_index(group) == 0
    assert group not in node_d.engine.groups()
    assert node_d.engine.get(outside) == b"1" and node_d.engine.get(other_table) == b"1"
    assert node_d.engine.applied_index(group_of(1, "p1")) == 1


async def test_a_removed_replica_keeps_the_part_of_its_range_a_split_child_here_serves(
    node_d: NodeState,
) -> None:
    """A stale view: this node is a member of the split child p0-0 ([0, END/4)) while
    removed from a partition over the whole [0, END/2): only [END/4, END/2) goes."""
    group = group_of(1, "p0")
    p0 = Partition("p0", 0, END // 2, ("a", "b", "d"), "a")
    sync_groups(node_d, table(p0))
    left, right = item(5, b"left"), item(END // 4 + 5, b"right")
    node_d.engine.apply(group, 4, [put(left, b"1"), put(right, b"1")], term=2)
    child = Partition("p0-0", 0, END // 4, ("d", "e"), "d")
    sync_groups(node_d, table(Partition("p0", 0, END // 2, ("a", "b"), "a"), child))
    assert node_d.erasing[group] == (keys.hash_range_bounds(1, END // 4, END // 2),)
    await erase_removed(node_d)
    assert node_d.engine.get(left) == b"1" and node_d.engine.get(right) is None


async def test_a_split_child_waiting_for_its_parent_here_is_not_erased(node_d: NodeState) -> None:
    """Not started yet (its parent has not reached the SPLIT entry here), the child is
    not hosted, but this node is its member: whatever it holds of it stays."""
    parent = Partition("p0", 0, END // 2, ("a", "b", "d"), "a")
    sync_groups(node_d, table(parent))
    node_d.engine.apply(group_of(1, "p0"), 3, [], term=1)  # behind the SPLIT entry at 5
    child_group = group_of(1, "p0-0")
    node_d.engine.apply(child_group, 1, [], term=1)
    left = Partition("p0-0", 0, END // 4, ("a", "b", "d"), "a", parent="p0", parent_index=5)
    right = Partition("p0-1", END // 4, END // 2, ("a", "b", "d"), "a", parent="p0", parent_index=5)
    sync_groups(node_d, table(left, right))
    assert node_d.retiring == {group_of(1, "p0")}
    assert node_d.erasing == {}
    await erase_removed(node_d)
    assert node_d.engine.applied_index(child_group) == 1
