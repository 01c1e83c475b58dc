"""The seam between the consensus core and the storage engine: WAL records tagged with
their group, per-group applied indexes, reading a group's log back, per-group
truncation. Real RocksDB and a real WAL in tmp_path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from partita.storage import engine as engine_module
from partita.storage.effects import Effect, Kind, encode_effects
from partita.storage.engine import Engine
from partita.storage.group_log import (
    LOCAL_GROUP,
    EntryRecord,
    GroupLocations,
    HardStateRecord,
    RecordError,
    decode_record,
    encode_entry,
    encode_hard_state,
    group_of,
)
from partita.storage.group_split import encode_split
from partita.storage.replication.types import ChecksumMismatch, Entry, EntryKind, HardState, make_entry
from partita.storage.wal import WriteAheadLog


def put(key: bytes, value: bytes) -> Effect:
    return Effect(Kind.PUT, key, value)


def entry(term: int, index: int, *effects: Effect) -> Entry:
    return make_entry(term, index, EntryKind.NORMAL, encode_effects(list(effects)))


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    original = WriteAheadLog.open.__func__  # type: ignore[attr-defined]

    def open_small(cls: type[WriteAheadLog], directory: Path, **kwargs: object) -> WriteAheadLog:
        kwargs.setdefault("segment_bytes", 512)
        return original(cls, directory, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(WriteAheadLog, "open", classmethod(open_small))


# --- the records ------------------------------------------------------------------------


def test_an_entry_record_round_trips_with_its_group_term_index_and_checksum() -> None:
    e = make_entry(7, 42, EntryKind.NORMAL, b"effects")
    record = decode_record(encode_entry("9/p3", e))
    assert record == EntryRecord("9/p3", e)


def test_a_hard_state_record_round_trips_with_and_without_a_vote() -> None:
    for state in (HardState(3, "node-b", 17), HardState(4, None, 0)):
        assert decode_record(encode_hard_state("1/p0", state)) == HardStateRecord("1/p0", state)


def test_a_hard_state_record_round_trips_with_its_leader_and_old_records_have_none() -> None:
    for state in (HardState(3, "node-b", 17, "node-b"), HardState(4, None, 0, "node-c")):
        assert decode_record(encode_hard_state("1/p0", state)) == HardStateRecord("1/p0", state)
    # Written before the leader was kept: the vote ends the record.
    old = encode_hard_state("1/p0", HardState(3, "node-b", 17))
    record = decode_record(old)
    assert isinstance(record, HardStateRecord) and record.hard_state.leader is None


def test_a_flipped_byte_in_an_entry_fails_its_checksum_on_decode() -> None:
    raw = bytearray(encode_entry("1/p0", make_entry(1, 1, EntryKind.NORMAL, b"payload")))
    raw[-1] ^= 0x01
    with pytest.raises(ChecksumMismatch):
        decode_record(bytes(raw))


def test_malformed_records_raise_record_error() -> None:
    for bad in (b"", b"\xa1", b"\xa1\x00\x09ab", b"\xa1\x00\x01g" + b"\x00" * 5, b"\xff\x00\x00"):
        with pytest.raises(RecordError):
            decode_record(bad)


def test_group_locations_replace_from_a_rewritten_index_and_compact_below_one() -> None:
    locations = GroupLocations()
    for index, lsn in ((1, 10), (2, 11), (3, 12), (4, 13)):
        locations.record(index, lsn)
    locations.record(3, 20)  # a new leader's entry at 3 replaces 3 and 4
    assert locations.between(1, 9) == [(1, 10), (2, 11), (3, 20)]
    assert locations.lsn_of(4) is None
    locations.compact(1)
    assert locations.first_lsn_after(0) == 11
    assert locations.last_index == 3


# --- the engine: single-member groups (replication factor 1) -----------------------------


async def test_each_partition_gets_its_own_dense_indexes_and_applied_index(engine: Engine) -> None:
    a, b = group_of(1, "p0"), group_of(1, "p1")
    await engine.commit_many([[put(b"a1", b"1")], [put(b"b1", b"1")], [put(b"a2", b"2")]], [a, b, a])
    assert (engine.applied_index(a), engine.applied_index(b)) == (2, 1)
    assert [e.index for e in engine.read_entries(a, 1, 10)] == [1, 2]
    assert engine.read_entries(b, 1, 10)[0].data == encode_effects([put(b"b1", b"1")])


async def test_applied_indexes_survive_a_reopen_and_indexes_continue(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await e.commit([put(b"k", b"1")], group_of(3, "p0"))
    await e.commit([put(b"k", b"2")], group_of(3, "p0"))
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_index(group_of(3, "p0")) == 2
        await e.commit([put(b"k", b"3")], group_of(3, "p0"))
        assert e.applied_index(group_of(3, "p0")) == 3
        assert e.get(b"k") == b"3"
    finally:
        await e.close()


async def test_a_group_whose_applied_index_rocksdb_lost_is_replayed_alone(tmp_path: Path) -> None:
    """The applied index is in the data's batch: a crash that loses one loses both,
    and replay re-applies that group's entries only."""
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await e.commit([put(b"a", b"1")], "g-a")
    await e.commit([put(b"b", b"1")], "g-b")
    await e._wal.close()
    e._db.delete(engine_module.APPLIED_INDEX_PREFIX + b"g-a")
    e._db.delete(b"a")
    e._db.put(b"b", b"changed-after-apply")  # g-b is applied: replay must not touch it
    e._db.close()
    e = Engine.open(directory, sync=False)
    try:
        assert (e.get(b"a"), e.get(b"b")) == (b"1", b"changed-after-apply")
        assert e.applied_index("g-a") == 1
    finally:
        await e.close()


async def test_apply_skips_an_entry_at_or_below_the_applied_index(engine: Engine) -> None:
    assert engine.apply("g", 1, [put(b"k", b"first")])
    assert not engine.apply("g", 1, [put(b"k", b"again")])
    assert engine.get(b"k") == b"first"
    assert engine.apply("g", 2, [])  # a NOOP still advances the applied index
    assert engine.applied_index("g") == 2


# --- the engine: replicated groups (the host persists, the core commits) -----------------


async def test_applying_a_replicated_entry_advances_the_applied_lsn_to_its_wal_record(engine: Engine) -> None:
    """The node's applied-LSN figure (partita_storage_applied_lsn) moves under replication
    too: the host applies by (group, index), and the engine knows where that entry is."""
    lsns = await engine.append_entries("r", [entry(1, i, put(b"k%d" % i, b"v")) for i in (1, 2)])
    engine.apply("r", 1, [Effect(Kind.PUT, b"k1", b"v")], term=1)
    assert engine.applied_lsn == lsns[0]
    engine.apply("r", 2, [Effect(Kind.PUT, b"k2", b"v")], term=1)
    assert engine.applied_lsn == lsns[1]


async def test_replay_applies_a_replicated_group_only_up_to_its_commit_index(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    entries = [entry(1, i, put(b"k%d" % i, b"v")) for i in (1, 2, 3)]
    await e.append_entries("r", entries, HardState(1, "leader", 2))
    await e._wal.close()
    e._db.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_index("r") == 2
        assert [e.get(b"k%d" % i) for i in (1, 2, 3)] == [b"v", b"v", None]
        assert e.last_index("r") == 3
        assert e.hard_state("r") == HardState(1, "leader", 2)
    finally:
        await e.close()


async def test_replay_passes_a_committed_split_entry_without_effects(tmp_path: Path) -> None:
    """A node restarted with a parent's SPLIT entry committed in its WAL replays it as an
    entry without effects (it crashed on it, over and over, before)."""
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    split = make_entry(1, 2, EntryKind.NORMAL, encode_split(1 << 63))
    entries = [entry(1, 1, put(b"k1", b"v")), split, entry(1, 3, put(b"k3", b"v"))]
    await e.append_entries("r", entries, HardState(1, "leader", 3))
    await e._wal.close()
    e._db.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_index("r") == 3
        assert (e.get(b"k1"), e.get(b"k3")) == (b"v", b"v")
    finally:
        await e.close()


async def test_entries_appended_again_replace_the_log_from_their_index(tmp_path: Path) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    old = [entry(1, i, put(b"k", b"old%d" % i)) for i in (1, 2, 3)]
    await e.append_entries("r", old, HardState(1, "a", 1))
    new = [entry(2, 2, put(b"k", b"new2"))]
    await e.append_entries("r", new, HardState(2, "b", 2))
    assert [(x.term, x.index) for x in e.read_entries("r", 1, 5)] == [(1, 1), (2, 2)]
    await e._wal.close()
    e._db.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.get(b"k") == b"new2"  # index 2 of term 2, never term 1's
        assert e.last_index("r") == 2
    finally:
        await e.close()


async def test_several_groups_append_in_one_wal_batch_and_replay_each(tmp_path: Path) -> None:
    """The host's round: every group's entries and hard states (a commit-only one with no
    entries too) in one WAL append, one batch; each group reads and replays as its own."""
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    batches = e.wal_metrics.batches
    a = [entry(1, i, put(b"a%d" % i, b"v")) for i in (1, 2)]
    b = [entry(3, 5, put(b"b5", b"v"))]
    lsns = await e.append_groups(
        [("ga", a, HardState(1, "x", 2)), ("gb", b, None), ("gc", [], HardState(4, "y", 7))]
    )
    assert e.wal_metrics.batches == batches + 1
    assert len(lsns[0]) == 2 and len(lsns[1]) == 1 and lsns[2] == []
    assert e.read_entries("ga", 1, 2) == a and e.read_entries("gb", 5, 5) == b
    assert e.hard_state("ga") == HardState(1, "x", 2) and e.hard_state("gc") == HardState(4, "y", 7)
    assert e.hard_state("gb") is None
    await e._wal.close()
    e._db.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.applied_index("ga") == 2 and [e.get(b"a1"), e.get(b"a2")] == [b"v", b"v"]
        assert e.hard_state("gc") == HardState(4, "y", 7)
    finally:
        await e.close()


async def test_read_entries_verifies_what_it_reads_back(engine: Engine) -> None:
    entries = [entry(1, i, put(b"k", b"x" * i)) for i in range(1, 6)]
    await engine.append_entries("r", entries)
    assert engine.read_entries("r", 2, 4) == entries[1:4]
    assert engine.read_entries("other", 1, 5) == []


# --- truncation per group -----------------------------------------------------------------


async def test_an_unapplied_group_holds_the_log_but_an_applied_one_does_not(
    tmp_path: Path, small_segments: None
) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    try:
        await e.append_entries("slow", [entry(1, 1, put(b"s", b"v"))], HardState(1, "x", 0))
        for i in range(30):
            await e.commit([put(b"k%d" % i, b"x" * 40)], "busy")
        await e.checkpoint()
        assert e._wal.first_lsn == 1  # "slow" has an entry not yet committed here
        e.apply("slow", 1, [put(b"s", b"v")])
        await e.checkpoint()
        assert e._wal.first_lsn > 1
    finally:
        await e.close()


async def test_a_retained_group_is_compacted_once_it_lags_too_far(
    tmp_path: Path, small_segments: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "MAX_RETAINED_RECORDS", 20)
    e = Engine.open(tmp_path / "node", sync=False)
    try:
        await e.commit([put(b"lag", b"v")], "lagging")
        e.retain("lagging", 0)  # its host still wants index 1 for a follower
        for i in range(10):
            await e.commit([put(b"k%d" % i, b"x" * 40)], "busy")
        await e.checkpoint()
        assert e._wal.first_lsn == 1 and e.compacted_for_space == []
        for i in range(30):
            await e.commit([put(b"k%d" % i, b"x" * 40)], "busy")
        await e.checkpoint()
        assert e.compacted_for_space == [("lagging", 1)]
        assert e._wal.first_lsn > 1
        assert e.read_entries("lagging", 1, 1) == []
    finally:
        await e.close()


async def test_the_newest_hard_state_survives_truncation_of_its_segment(
    tmp_path: Path, small_segments: None
) -> None:
    directory = tmp_path / "node"
    e = Engine.open(directory, sync=False)
    await e.append_entries("r", [entry(1, 1, put(b"r", b"v"))], HardState(5, "me", 1))
    e.apply("r", 1, [put(b"r", b"v")])
    for i in range(30):
        await e.commit([put(b"k%d" % i, b"x" * 40)], LOCAL_GROUP)
    await e.checkpoint()
    assert e._wal.first_lsn > 1
    await e.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.hard_state("r") == HardState(5, "me", 1)
    finally:
        await e.close()


async def test_a_legacy_bare_effects_record_is_still_replayed(tmp_path: Path) -> None:
    """A WAL written before group records: its records are applied by LSN."""
    directory = tmp_path / "node"
    wal = WriteAheadLog.open(directory / "wal", sync=False)
    await wal.append(encode_effects([put(b"old", b"v")]))
    await wal.close()
    e = Engine.open(directory, sync=False)
    try:
        assert e.get(b"old") == b"v"
        await e.commit([put(b"new", b"v")])
        assert e.applied_index(LOCAL_GROUP) == 1
    finally:
        await e.close()
