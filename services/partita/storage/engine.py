"""One RocksDB for every partition on the node, made durable by the node's WAL.

Write path: the caller computes a write's effects from the latest state (committed
plus pending, see `latest`), `commit` appends them to the WAL as an entry of the
partition's group log (group commit: concurrent writes of every group share an fsync)
and, once durable, applies them to RocksDB with RocksDB's own WAL disabled.

The seam with replication (docs/replication.md): every WAL record belongs to one
group (`group_log`), and `apply(group, index, effects)` writes a group's effects and
its applied index in one RocksDB batch. A single-member group (replication factor 1,
and the node-local group) commits an entry when it is durable here, which is what
`commit` does. A replicated group's host persists the consensus core's entries and
hard state with `append_entries` and calls `apply` for its committed entries. Recovery
reads the kept WAL once: it re-applies, per group, the committed entries above the
group's applied index (every entry of a group without a hard state; up to the hard
state's commit index otherwise) and rebuilds where each group's entries are, so a
follower catching up can be sent them (`read_entries`). Truncation is per group: a
group's records are kept until they are applied and flushed, or longer while its host
retains them for followers (`retain`), but never beyond `MAX_RETAINED_RECORDS` records,
so one lagging group never pins the log of the others (it is compacted, and a follower
that needs what was dropped gets a snapshot).

A replica removed from this node is erased (`erase_group`): an erasure record in the WAL
first, then its key ranges, applied position and hard state go in one RocksDB batch with
an erasure marker (the record's LSN). Replay ignores a group's records older than its
marker, and redoes an erasure whose batch RocksDB lost, so a crash leaves the old
replica or none. A snapshot is installed in bounded batches (`install_snapshot`) under
an "installing" marker: a crash in the middle leaves the range empty and unserved
(`installing`) until the install is redone or the log has rebuilt it.

Reads of committed data go straight to RocksDB. Read-modify-write operations must see
writes that are durable-pending too, or two conditional writes racing on one key would
both pass their check; `_pending` holds the newest not-yet-applied value per key.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import logging
import os
import shutil
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import rocksdict

from partita.common.keys import STREAM_POSITION
from partita.storage.effects import Effect, Kind, decode_effects, encode_effects
from partita.storage.group_log import (
    LOCAL_GROUP,
    EntryRecord,
    EraseRecord,
    GroupLocations,
    decode_record,
    encode_entry,
    encode_erase,
    encode_hard_state,
    is_group_record,
)
from partita.storage.group_split import decode_split
from partita.storage.replication.types import Entry, EntryKind, GroupId, HardState, make_entry
from partita.storage.wal import WalMetrics, WriteAheadLog, fsync_directory

log = logging.getLogger(__name__)

# Table id 0 is never allocated (ids are odd), so this prefix is free for node metadata.
META_PREFIX = b"\x00" * 8
APPLIED_LSN_KEY = META_PREFIX + b"applied_lsn"
# + group id: the group's applied index, written in the same batch as its effects.
APPLIED_INDEX_PREFIX = META_PREFIX + b"applied/"
# + group id: the LSN of the group's newest erasure record, in the erasure's batch.
# Replay ignores the group's records before it.
ERASED_PREFIX = META_PREFIX + b"erased/"
# + group id: what an erased replica had promised and acknowledged, (term, last log
# index, vote), in the erasure's batch and kept when the erasure marker is dropped: a
# replica added back without a hard state restores its term and vote from it and does
# not vote until it has applied as far (`left_replica`).
LEFT_PREFIX = META_PREFIX + b"left/"
# + group id: a snapshot install under way, (index, term, lo length, lo, hi): set in
# the batch that empties the range, removed in the one that sets the applied position.
INSTALLING_PREFIX = META_PREFIX + b"installing/"
# A snapshot's pairs go into RocksDB in batches of about this many bytes (the chunk
# size it was sent in): an install's memory is bounded by it, not by the partition.
INSTALL_BATCH_BYTES = 256 * 1024
_LSN = struct.Struct(">Q")
_POSITION = struct.Struct(">QQ")  # a group's applied (index, term)
_INSTALLING = struct.Struct(">QQI")  # index, term, length of lo (then lo, then hi)
_LEFT = struct.Struct(">QQ")  # term, last log index (then the vote, UTF-8, empty if none)
# The term of a single-member group's entries: it never holds an election.
LOCAL_TERM = 1
# A group's host may retain applied records for followers (`retain`), up to this many
# WAL records behind the log's end; past it the group is compacted to its applied index.
MAX_RETAINED_RECORDS = 1_000_000
_MISSING = object()
# Flush RocksDB and drop covered WAL segments once this much WAL has accumulated.
CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024
# A restarted replica's log reaches back at most this many entries before its applied
# index, taken from what the WAL still holds, entries of at most this size only
# (`take_applied_tail`): enough for a follower that missed the last terms' first entries.
TAIL_ENTRIES = 8
TAIL_ENTRY_BYTES = 4096


class Engine:
    def __init__(
        self,
        db: rocksdict.Rdict,
        wal: WriteAheadLog,
        applied_lsn: int,
        applied: dict[GroupId, tuple[int, int]],
    ) -> None:
        self._db = db
        self._wal = wal
        self.applied_lsn = applied_lsn  # the newest WAL record applied (a figure)
        self._applied = {group: index for group, (index, _) in applied.items()}  # per group
        self._applied_terms = {group: term for group, (_, term) in applied.items()}
        self._locations: dict[GroupId, GroupLocations] = {}
        self._hard_states: dict[GroupId, tuple[HardState, int]] = {}  # newest, and its lsn
        self._next_local: dict[GroupId, int] = {}  # next index of a single-member group
        self._retained: dict[GroupId, int] = {}  # the host keeps records above this index
        # The newest small entries of each group found by the start's replay (see
        # `take_applied_tail`), taken once by the replication host and then dropped.
        self._tails: dict[GroupId, list[Entry]] = {}
        self.compacted_for_space: list[tuple[GroupId, int]] = []
        self._pending: dict[bytes, tuple[int, bytes | None]] = {}
        # Answers waiting for a key's pending writes to be decided (see `settled`).
        self._settling: dict[bytes, list[_Settling]] = {}
        self._bytes_since_checkpoint = 0
        self._checkpointing = False
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._flushes: set[asyncio.Future[None]] = set()  # snapshots' flushes under way
        self._options: rocksdict.Options | None = None  # set by open: its statistics
        self._directory: Path | None = None
        # The last process stopped cleanly (`close(clean=True)`), as `open` found it.
        self.stopped_cleanly = False
        self._erased: dict[GroupId, int] = {}  # the LSN of each group's newest erasure
        self._left: dict[GroupId, tuple[HardState, int]] = {}  # see LEFT_PREFIX
        self._erasing: set[GroupId] = set()  # erasure records not yet durable
        # Groups whose snapshot install was cut short (index of the snapshot): their
        # range is not served until an install completes or the log applies that far.
        self._installing: dict[GroupId, int] = {}
        # Installs whose pairs a worker thread is writing (`install_snapshot_off_loop`).
        self._install_threads: dict[GroupId, asyncio.Future[int]] = {}

    @classmethod
    def open(cls, directory: Path, *, sync: bool = True) -> Engine:
        directory.mkdir(parents=True, exist_ok=True)
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        # Tickers for the metrics (block cache hits and misses); their cost is within
        # the noise of a GetItem (docs/benchmarks.md).
        options.enable_statistics()
        db = rocksdict.Rdict(str(directory / "rocksdb"), options)
        write_options = rocksdict.WriteOptions()
        # Durability comes from our WAL. (rocksdict's stubs call this a method; at run
        # time it is a property.)
        write_options.disable_wal = True  # type: ignore[method-assign,assignment]
        db.set_write_options(write_options)
        raw = db.get(APPLIED_LSN_KEY)
        applied = _LSN.unpack(raw)[0] if raw is not None else 0
        wal = WriteAheadLog.open(directory / "wal", sync=sync)
        engine = cls(db, wal, applied, _applied_indexes(db))
        engine._options = options
        engine._directory = directory
        engine._erased = {group: _LSN.unpack(v)[0] for group, v in _metadata(db, ERASED_PREFIX)}
        engine._left = {group: _decode_left(v) for group, v in _metadata(db, LEFT_PREFIX)}
        cut_short = _metadata(db, INSTALLING_PREFIX)
        engine._installing = {group: _INSTALLING.unpack_from(v)[0] for group, v in cut_short}
        replayed = engine._replay()
        engine._recover_installs(cut_short)
        engine.stopped_cleanly = _take_clean_stop_mark(directory, sync)
        log.info(
            "engine open at %s: applied lsn %d, replayed %d records, %s",
            directory,
            applied,
            replayed,
            "after a clean stop" if engine.stopped_cleanly else "not after a clean stop",
        )
        return engine

    def _replay(self) -> int:
        """Rebuild the groups' locations and hard states from the kept WAL, then apply
        what was committed but not applied; returns how many entries were applied."""
        unapplied: list[tuple[int, GroupId, Entry]] = []
        legacy = 0
        for lsn, payload in self._wal.replay(self._wal.first_lsn - 1):
            if not is_group_record(payload):
                # A bare effects record, from before group logs: applied by LSN.
                if lsn > self.applied_lsn:
                    self._write(decode_effects(payload), lsn, None, 0)
                    legacy += 1
                continue
            record = decode_record(payload)
            if lsn < self._erased.get(record.group, 0):
                continue  # the replica this record belonged to was erased since
            if isinstance(record, EraseRecord):
                unapplied = [u for u in unapplied if u[1] != record.group]
                if lsn > self._erased.get(record.group, 0):
                    self._erase(record.group, record.ranges, lsn)  # RocksDB lost the batch
                continue
            if isinstance(record, EntryRecord):
                if record.group in self._installing:
                    continue  # what the snapshot being installed replaces
                self._locate(record.group, record.entry.index, lsn)
                self._keep_tail(record.group, record.entry)
                if record.entry.index > self._applied.get(record.group, 0):
                    unapplied.append((lsn, record.group, record.entry))
            else:
                held = self._hard_states.get(record.group)
                # A rewritten old hard state (checkpoint) may follow a newer one in the
                # log; hard states only ever move forward, so the furthest one wins.
                if held is None or _progress(record.hard_state) >= _progress(held[0]):
                    self._hard_states[record.group] = (record.hard_state, lsn)
        applied = 0
        for lsn, group, entry in unapplied:
            if self._locations[group].lsn_of(entry.index) != lsn:
                continue  # replaced by a later append at that index
            if entry.index > self.commit_index(group):
                continue
            self.apply(group, entry.index, _effects_of(entry), lsn, entry.term)
            applied += 1
        for group, locations in self._locations.items():
            self._next_local[group] = max(locations.last_index, self._applied.get(group, 0)) + 1
        # Only a replicated group's host takes its tail; a single-member group (no hard
        # state) never would, and its entries would stay in memory for good.
        self._tails = {g: t for g, t in self._tails.items() if g in self._hard_states}
        return applied + legacy

    def _recover_installs(self, cut_short: list[tuple[GroupId, bytes]]) -> None:
        """A snapshot install cut short by a crash: RocksDB holds its marker (written in
        the batch that emptied the range and dropped the applied position) and maybe
        some of its pairs. The pairs are deleted again and the group restarts empty:
        its WAL records are from before the install (what the snapshot replaced) and are
        dropped, its term and vote kept, its commit index forgotten (the log it counted
        is gone). The leader then sends the log from the start, or the snapshot again."""
        for group, value in cut_short:
            if group not in self._installing:
                continue  # erased since (a replayed erasure)
            index, _term, lo_length = _INSTALLING.unpack_from(value)
            lo = value[_INSTALLING.size : _INSTALLING.size + lo_length]
            hi = value[_INSTALLING.size + lo_length :]
            batch = rocksdict.WriteBatch(raw_mode=True)
            batch.delete_range(lo, hi)
            batch.delete(APPLIED_INDEX_PREFIX + group.encode())
            self._db.write(batch)
            self._applied.pop(group, None)
            self._applied_terms.pop(group, None)
            held = self._hard_states.get(group)
            if held is not None:
                self._hard_states[group] = (HardState(held[0].term, held[0].vote, 0), held[1])
            log.warning("group %s: snapshot install at %d was cut short; the range is emptied", group, index)

    def _keep_tail(self, group: GroupId, entry: Entry) -> None:
        """Keep the group's last few contiguous entries while replaying (small ones only:
        a large entry breaks the run), replacing any at or after a re-appended index."""
        tail = self._tails.get(group)
        if len(entry.data) > TAIL_ENTRY_BYTES:
            self._tails.pop(group, None)
            return
        if tail and entry.index <= tail[-1].index:
            del tail[bisect.bisect_left([e.index for e in tail], entry.index) :]
        if not tail or tail[-1].index + 1 != entry.index:
            tail = self._tails[group] = []
        tail.append(entry)
        if len(tail) > TAIL_ENTRIES:
            del tail[0]

    def take_applied_tail(self, group: GroupId) -> list[Entry]:
        """The group's last few entries up to and including its applied one, as the start's
        replay found them in the WAL (empty if it did not find that run). A restarted
        replica's log may start there instead of at the applied index, so a follower a few
        entries behind (it stopped before the others, e.g. while they handed leadership
        around) is caught up from the log, not sent a whole snapshot. Taken once."""
        tail = self._tails.pop(group, [])
        applied, term = self._applied.get(group, 0), self._applied_terms.get(group, 0)
        tail = [e for e in tail if e.index <= applied]
        if not tail or tail[-1].index != applied or tail[-1].term != term:
            return []
        return tail

    def _locate(self, group: GroupId, index: int, lsn: int) -> None:
        locations = self._locations.get(group)
        if locations is None:
            locations = self._locations[group] = GroupLocations()
        locations.record(index, lsn)

    # --- reads ----------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        """The committed value of `key`."""
        value: bytes | None = self._db.get(key)
        return value

    def latest(self, key: bytes) -> bytes | None:
        """The newest value of `key`, including writes not yet durable (for RMW)."""
        pending = self._pending.get(key)
        if pending is not None:
            return pending[1]
        return self.get(key)

    def scan(self, lo: bytes, hi: bytes, *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Committed items with lo <= key < hi, in key order (or reverse)."""
        it = self._db.iter()
        if reverse:
            it.seek_for_prev(hi)
            if it.valid() and it.key() >= hi:
                it.prev()
            while it.valid() and it.key() >= lo:
                yield it.key(), it.value()
                it.prev()
        else:
            it.seek(lo)
            while it.valid() and it.key() < hi:
                yield it.key(), it.value()
                it.next()

    async def snapshot_range(
        self, group: GroupId, lo: bytes, hi: bytes
    ) -> tuple[int, int, Iterator[tuple[bytes, bytes]]]:
        """The group's applied (index, term) and its items with lo <= key < hi as of
        that index: read from a RocksDB checkpoint made now (hard links to the SST
        files, after a memtable flush), so applies that come while the pairs are being
        read do not show (a leader streams this to a follower). The checkpoint is
        removed once the pairs are read or dropped. (rocksdict's Snapshot iterators
        read the live data, not the snapshot: the checkpoint is what isolates.)

        The memtable is flushed first from a worker thread: rocksdict lets go of the GIL
        in a flush, not in `create_checkpoint`, which flushes what is left itself, so a
        full memtable held the node's event loop for 35-45 ms per snapshot
        (bench/bench_snapshot_stall.py). What arrives meanwhile is flushed by the
        checkpoint; the position and the checkpoint are still taken in one step."""
        flush = asyncio.ensure_future(asyncio.to_thread(self._db.flush, True))
        # Kept until the thread ends, whoever awaits it: `close` must not close RocksDB
        # under it (a cancelled snapshot stream does not stop the thread).
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)
        await asyncio.shield(flush)
        index, term = self.applied_position(group)
        assert self._directory is not None
        path = self._directory / "checkpoints" / f"{uuid.uuid4().hex}"
        path.parent.mkdir(parents=True, exist_ok=True)
        rocksdict.Checkpoint(self._db).create_checkpoint(str(path))

        def pairs() -> Iterator[tuple[bytes, bytes]]:
            view = rocksdict.Rdict(
                str(path), rocksdict.Options(raw_mode=True), access_type=rocksdict.AccessType.read_only()
            )
            try:
                it = view.iter()
                it.seek(lo)
                while it.valid() and it.key() < hi:
                    yield it.key(), it.value()
                    it.next()
                del it
            finally:
                view.close()
                shutil.rmtree(path, ignore_errors=True)

        return index, term, pairs()

    def install_snapshot(
        self,
        group: GroupId,
        lo: bytes,
        hi: bytes,
        pairs: Iterator[tuple[bytes, bytes]],
        index: int,
        term: int,
        batch_bytes: int = INSTALL_BATCH_BYTES,
    ) -> int:
        """Replace the group's range [lo, hi) by `pairs` and set its applied position to
        (index, term), in batches of about `batch_bytes`: the first empties the range,
        drops the position and marks the install under way, the last sets the position
        and removes the mark. RocksDB keeps its writes in order (a crash loses a suffix),
        so a crash leaves the old range, or a marked one that is not served and is
        emptied on reopen (`_recover_installs`), or the new one. The install is flushed
        before it returns: the group's WAL records after it build on the snapshot, and a
        replay must never apply them to what was there before. Returns the bytes of keys
        and values installed."""
        self._begin_install(group, lo, hi, index, term)
        size = self._write_install(group, pairs, index, term, batch_bytes)
        self._end_install(group, index, term)
        return size

    async def install_snapshot_off_loop(
        self,
        group: GroupId,
        lo: bytes,
        hi: bytes,
        pairs: Iterator[tuple[bytes, bytes]],
        index: int,
        term: int,
        batch_bytes: int = INSTALL_BATCH_BYTES,
    ) -> int:
        """`install_snapshot` with the pairs' batches and the flush written from a worker
        thread, so the event loop (the node's other groups) goes on meanwhile. The range
        is marked (`installing`, not served) before the thread starts and its position
        set after it ends, both on the loop: the engine's dicts are the loop's only.
        RocksDB takes writes from several threads. An erasure of the group, or a second
        install of it, waits for this one's thread (`settle_install`)."""
        await self.settle_install(group)
        self._begin_install(group, lo, hi, index, term)
        thread = asyncio.ensure_future(
            asyncio.to_thread(self._write_install, group, pairs, index, term, batch_bytes)
        )
        self._install_threads[group] = thread
        try:
            # Shielded: a cancelled caller does not stop the thread; what it wrote stays
            # marked (not served), as after a crash, until an install completes.
            size = await asyncio.shield(thread)
        finally:
            if self._install_threads.get(group) is thread:
                del self._install_threads[group]
        if self._installing.get(group) == index:  # not erased meanwhile
            self._end_install(group, index, term)
        return size

    async def settle_install(self, group: GroupId) -> None:
        """Wait for the thread of an install of `group` under way, if any, to end."""
        thread = self._install_threads.get(group)
        if thread is not None:
            await asyncio.wait([thread])

    def _begin_install(self, group: GroupId, lo: bytes, hi: bytes, index: int, term: int) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        batch.put(INSTALLING_PREFIX + group.encode(), _INSTALLING.pack(index, term, len(lo)) + lo + hi)
        batch.delete_range(lo, hi)
        batch.delete(APPLIED_INDEX_PREFIX + group.encode())
        self._db.write(batch)
        self._installing[group] = index
        self._applied.pop(group, None)
        self._applied_terms.pop(group, None)

    def _write_install(
        self, group: GroupId, pairs: Iterator[tuple[bytes, bytes]], index: int, term: int, batch_bytes: int
    ) -> int:
        """The install's pairs, then its position and the mark's removal, then a flush.
        RocksDB only: it may run in a worker thread."""
        size = 0
        batch, pending = rocksdict.WriteBatch(raw_mode=True), 0
        for key, value in pairs:
            batch.put(key, value)
            pending += len(key) + len(value)
            if pending >= batch_bytes:
                self._db.write(batch)
                size += pending
                batch, pending = rocksdict.WriteBatch(raw_mode=True), 0
                # From a worker thread: hand the GIL to the event loop between batches.
                # Left to the interpreter's 5 ms switch interval, the loop (the node's
                # other groups) waited 10-13 ms at a time and woke every 3-4 ms.
                time.sleep(0)
        size += pending
        batch.put(APPLIED_INDEX_PREFIX + group.encode(), _POSITION.pack(index, term))
        batch.delete(INSTALLING_PREFIX + group.encode())
        self._db.write(batch)
        self._db.flush(True)
        return size

    def _end_install(self, group: GroupId, index: int, term: int) -> None:
        self._installing.pop(group, None)
        self._applied[group] = index
        self._applied_terms[group] = term

    def installing(self, group: GroupId) -> bool:
        """Whether the group's range holds a snapshot install cut short: not to be served."""
        return group in self._installing

    def table_ids(self) -> set[int]:
        """Every table id with at least one key here (one seek per table)."""
        ids = set()
        it = self._db.iter()
        it.seek(META_PREFIX[:-1] + b"\x01")
        while it.valid():
            table_id = int.from_bytes(it.key()[:8], "big")
            ids.add(table_id)
            if table_id >= 2**64 - 1:
                break
            it.seek((table_id + 1).to_bytes(8, "big"))
        return ids

    # --- figures for the metrics ----------------------------------------------------

    @property
    def wal_metrics(self) -> WalMetrics:
        return self._wal.metrics

    def rocksdb_property(self, name: str) -> int:
        """A RocksDB integer property (0 when RocksDB does not know it)."""
        value = self._db.property_int_value(name)
        return int(value) if value is not None else 0

    def rocksdb_statistics(self) -> str:
        """RocksDB's statistics dump (ticker and histogram lines)."""
        if self._options is None:
            return ""
        text = self._options.get_statistics()
        return str(text) if text else ""

    def disk_usage(self) -> tuple[int, int]:
        """(free, total) bytes of the file system holding the data."""
        if self._directory is None:
            return 0, 0
        usage = shutil.disk_usage(self._directory)
        return usage.free, usage.total

    # --- writes ---------------------------------------------------------------------

    async def commit(self, effects: list[Effect], group: GroupId = LOCAL_GROUP) -> int:
        """Make `effects` durable and visible as the next entry of the single-member
        `group`; returns the record's LSN."""
        return (await self.commit_many([effects], [group]))[0]

    async def commit_many(self, writes: list[list[Effect]], groups: list[GroupId] | None = None) -> list[int]:
        """Commit several independent writes; they share one WAL batch."""
        for effects in writes:
            self.stage(effects)
        return await self.commit_staged(writes, groups)

    def stage(self, effects: list[Effect]) -> None:
        """Make `effects` visible to `latest` now, before they are durable.

        A read-modify-write must stage its effects in the same synchronous step that
        planned them: the next plan on the same key, even one in the same incoming
        batch, then builds on this write instead of on the state before it. Every staged
        group must reach `commit_staged`, which un-stages it whatever happens.
        """
        self._mark_pending(effects)

    async def commit_staged(
        self, writes: list[list[Effect]], groups: list[GroupId] | None = None
    ) -> list[int]:
        """Make staged writes durable (one WAL batch) and apply them, in order: write i
        becomes the next entry of the single-member group `groups[i]` (default: the
        node-local group)."""
        try:
            names = groups if groups is not None else [LOCAL_GROUP] * len(writes)
            # Indexes are taken in the same synchronous step as the WAL queues the
            # records, so a group's indexes rise with the LSNs.
            entries = [
                (
                    group,
                    make_entry(
                        LOCAL_TERM, self._take_local_index(group), EntryKind.NORMAL, encode_effects(e)
                    ),
                )
                for group, e in zip(names, writes, strict=True)
            ]
            payloads = [encode_entry(group, entry) for group, entry in entries]
            lsns = await self._wal.append_many(payloads)
            # No await between here and the end of the loop: records are applied in
            # LSN order and atomically with respect to every other coroutine.
            for lsn, (group, entry), effects in zip(lsns, entries, writes, strict=True):
                self._locate(group, entry.index, lsn)
                self.apply(group, entry.index, effects, lsn)
            self._bytes_since_checkpoint += sum(len(p) for p in payloads)
        finally:
            for effects in writes:
                self._unmark_pending(effects)
        if self._bytes_since_checkpoint > CHECKPOINT_WAL_BYTES and not self._checkpointing:
            self._checkpoint_task = asyncio.get_running_loop().create_task(self.checkpoint())
        return lsns

    def unstage(self, effects: list[Effect]) -> None:
        """Undo `stage` for a write whose fate is decided elsewhere (a replicated write:
        applied through `apply` once committed, or never)."""
        self._unmark_pending(effects)

    def pending(self, key: bytes) -> bool:
        """Whether a write to `key` is staged and not yet applied or dropped."""
        return key in self._pending

    def settled(self, key: bytes) -> asyncio.Future[None]:
        """Completes once every write staged on `key` so far is applied or dropped.

        An answer read from a pending write (a failed condition) must not leave before
        that write is decided, or a client could see the write through the failure and
        then not see it in a strongly consistent read. Writes staged later are not
        waited for, so a key under steady writes never keeps the answer waiting.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending = self._pending.get(key)
        if pending is None:
            future.set_result(None)
        else:
            self._settling.setdefault(key, []).append(_Settling(pending[0], future))
        return future

    def _mark_pending(self, effects: list[Effect]) -> None:
        for e in effects:
            if e.kind is Kind.DELETE_RANGE or e.kind is Kind.STREAM_RECORD:
                continue
            count = self._pending.get(e.key, (0, None))[0]
            self._pending[e.key] = (count + 1, e.value if e.kind is Kind.PUT else None)

    def _unmark_pending(self, effects: list[Effect]) -> None:
        for e in effects:
            if e.kind is Kind.DELETE_RANGE or e.kind is Kind.STREAM_RECORD:
                continue
            count, value = self._pending[e.key]
            if count == 1:
                del self._pending[e.key]
            else:
                self._pending[e.key] = (count - 1, value)
            if self._settling:
                self._settle_one(e.key)

    def _settle_one(self, key: bytes) -> None:
        waiting = self._settling.get(key)
        if waiting is None:
            return
        still = []
        for settling in waiting:
            settling.remaining -= 1
            if settling.remaining > 0 and key in self._pending:
                still.append(settling)
            elif not settling.future.done():  # done: its waiter gave up
                settling.future.set_result(None)
        if still:
            self._settling[key] = still
        else:
            del self._settling[key]

    def _take_local_index(self, group: GroupId) -> int:
        index = self._next_local.get(group)
        if index is None:
            index = self._applied.get(group, 0) + 1
        self._next_local[group] = index + 1
        return index

    # --- the seam with the consensus core -------------------------------------------

    def applied_index(self, group: GroupId) -> int:
        return self._applied.get(group, 0)

    def last_index(self, group: GroupId) -> int:
        """The index of the group's newest entry in the WAL (0 if none is kept)."""
        locations = self._locations.get(group)
        return max(locations.last_index if locations else 0, self._applied.get(group, 0))

    def hard_state(self, group: GroupId) -> HardState | None:
        """The group's newest persisted hard state; None for a single-member group."""
        held = self._hard_states.get(group)
        return held[0] if held is not None else None

    def commit_index(self, group: GroupId) -> int:
        """How far the group's log is known committed on this node."""
        held = self._hard_states.get(group)
        if held is None:
            return self.last_index(group)  # a single-member group commits on append
        return held[0].commit

    def apply(
        self, group: GroupId, index: int, effects: list[Effect], lsn: int = 0, term: int = LOCAL_TERM
    ) -> bool:
        """Apply committed entry `index` (of `term`) of `group`: its effects and the
        group's applied position in one RocksDB batch. An entry at or below the applied
        index was applied before (a replay, a re-delivery) and is skipped: returns False."""
        if index <= self._applied.get(group, 0):
            return False
        if not lsn:  # a replicated entry: where this node's WAL holds it (the applied-LSN figure)
            located = self._locations.get(group)
            lsn = (located.lsn_of(index) or 0) if located is not None else 0
        self._write(effects, lsn, group, index, term)
        return True

    def applied_position(self, group: GroupId) -> tuple[int, int]:
        """(index, term) of the group's last applied entry: where a restarted replica's
        log begins (its snapshot base)."""
        return self._applied.get(group, 0), self._applied_terms.get(group, 0)

    async def append_entries(
        self, group: GroupId, entries: list[Entry], hard_state: HardState | None = None
    ) -> list[int]:
        """Persist a replicated group's entries (they replace its log from
        entries[0].index on) and hard state, durably; returns the entries' LSNs."""
        return (await self.append_groups([(group, entries, hard_state)]))[0]

    async def forget_leadership(self, node: str) -> int:
        """Durably drop `node` as the leader named in every hard state that names it;
        returns how many. For a start that does not follow a clean stop: a leader's
        appends leave before its own write (`SENDABLE_BEFORE_PERSIST`), so after a crash
        its log may lack entries it sent, and it must not resume those terms
        (`Replica._restart_as`); it campaigns instead, for a new term."""
        writes: list[tuple[GroupId, list[Entry], HardState | None]] = [
            (group, [], dataclasses.replace(state, leader=None))
            for group, (state, _) in self._hard_states.items()
            if state.leader == node
        ]
        if writes:
            await self.append_groups(writes)
        return len(writes)

    async def append_groups(
        self, writes: list[tuple[GroupId, list[Entry], HardState | None]]
    ) -> list[list[int]]:
        """`append_entries` for several groups at once: one WAL append (so one batch and
        one fsync, with one future to wait on); returns each write's entry LSNs."""
        payloads: list[bytes] = []
        for group, entries, hard_state in writes:
            payloads.extend(encode_entry(group, entry) for entry in entries)
            if hard_state is not None:
                payloads.append(encode_hard_state(group, hard_state))
        lsns = await self._wal.append_many(payloads)
        out: list[list[int]] = []
        at = 0
        for group, entries, hard_state in writes:
            mine = lsns[at : at + len(entries)]
            at += len(entries)
            for entry, lsn in zip(entries, mine, strict=True):
                self._locate(group, entry.index, lsn)
            if hard_state is not None:
                self._hard_states[group] = (hard_state, lsns[at])
                at += 1
            out.append(mine)
        self._bytes_since_checkpoint += sum(len(p) for p in payloads)
        return out

    def read_entries(self, group: GroupId, lo: int, hi: int) -> list[Entry]:
        """The group's kept entries with lo <= index <= hi, read back from the WAL with
        their checksums verified. Blocking file I/O: run it in an executor when large."""
        locations = self._locations.get(group)
        wanted = dict((lsn, index) for index, lsn in (locations.between(lo, hi) if locations else []))
        if not wanted:
            return []
        out: list[Entry] = []
        last = max(wanted)
        for lsn, payload in self._wal.replay(min(wanted) - 1):
            if lsn in wanted:
                record = decode_record(payload)
                if not isinstance(record, EntryRecord) or record.group != group:
                    raise RuntimeError(f"WAL record {lsn} is not entry {wanted[lsn]} of group {group}")
                out.append(record.entry)
            if lsn >= last:
                break
        return out

    def retain(self, group: GroupId, index: int) -> None:
        """Keep the group's records above `index` in the WAL even once applied (the
        host's followers still need them); `index` is where the host compacted."""
        self._retained[group] = index

    async def erase_group(self, group: GroupId, ranges: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        """The group's replica left this node: erase it. First an erasure record in the
        WAL (durable), then, in one RocksDB batch, the key `ranges` (the caller leaves
        out what other replicas here serve), the applied position and the erasure marker;
        its hard state and log go with it. Until the record is durable nothing changes,
        so its WAL records keep their place (a checkpoint cannot drop the replica's
        unapplied entries while RocksDB still holds its position); after it, replay
        drops them and redoes the batch if RocksDB lost it."""
        # A checkpoint meanwhile must not append the group's hard state again: after
        # the erasure record it would bring the group back on replay. (It may still
        # truncate the old one: its own appends reach the WAL after this record.)
        await self.settle_install(group)  # its thread would write the range back
        self._erasing.add(group)
        try:
            lsn = (await self._wal.append_many([encode_erase(group, ranges)]))[0]
            self._erase(group, ranges, lsn)
        finally:
            self._erasing.discard(group)

    def left_replica(self, group: GroupId) -> tuple[HardState, int] | None:
        """(hard state, last log index) of the group's replica when it was last erased
        here (commit 0: what it knew committed does not matter), or None if it never was.
        Kept for good: a node added back to a group must not vote again in a term it voted
        in, nor before it holds again what it acknowledged (it may have counted towards
        committing it)."""
        return self._left.get(group)

    def _erase(self, group: GroupId, ranges: tuple[tuple[bytes, bytes], ...], lsn: int) -> None:
        name = group.encode()
        batch = rocksdict.WriteBatch(raw_mode=True)
        left = self._leaving(group)
        if left is not None:
            batch.put(LEFT_PREFIX + name, _encode_left(*left))
        for lo, hi in ranges:
            batch.delete_range(lo, hi)
        batch.delete(APPLIED_INDEX_PREFIX + name)
        batch.delete(INSTALLING_PREFIX + name)
        batch.put(ERASED_PREFIX + name, _LSN.pack(lsn))
        if lsn > self.applied_lsn:
            batch.put(APPLIED_LSN_KEY, _LSN.pack(lsn))
            self.applied_lsn = lsn
        self._db.write(batch)
        self._erased[group] = lsn
        if left is not None:
            self._left[group] = left
        self._locations.pop(group, None)
        self._hard_states.pop(group, None)
        self._next_local.pop(group, None)
        self._retained.pop(group, None)
        self._applied.pop(group, None)
        self._applied_terms.pop(group, None)
        self._installing.pop(group, None)

    def _leaving(self, group: GroupId) -> tuple[HardState, int] | None:
        """What the replica being erased promised and holds, merged with an earlier
        incarnation's (the furthest of each): None if it never voted nor held entries."""
        held = self._hard_states.get(group)
        state = HardState(held[0].term, held[0].vote, 0) if held is not None else HardState()
        last = self.last_index(group)
        before = self._left.get(group)
        if before is not None:
            if before[0].term > state.term:
                state = before[0]
            last = max(last, before[1])
        if state == HardState() and last == 0:
            return None
        return state, last

    def groups(self) -> list[GroupId]:
        return sorted(set(self._locations) | set(self._applied) | set(self._hard_states))

    def _write(
        self, effects: list[Effect], lsn: int, group: GroupId | None, index: int, term: int = LOCAL_TERM
    ) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        position = 0
        for e in effects:
            if e.kind is Kind.PUT:
                batch.put(e.key, e.value)
            elif e.kind is Kind.DELETE or e.kind is Kind.SERVICE_DELETE:
                batch.delete(e.key)
            elif e.kind is Kind.STREAM_RECORD:
                position += 1
                batch.put(e.key + STREAM_POSITION.pack(index, position), e.value)
            else:
                batch.delete_range(e.key, e.value)
        if group is not None:
            batch.put(APPLIED_INDEX_PREFIX + group.encode(), _POSITION.pack(index, term))
            self._applied[group] = index
            self._applied_terms[group] = term
            installing = self._installing.get(group)
            if installing is not None and index >= installing:
                # Rebuilt from the log at least as far as the cut-short snapshot went.
                batch.delete(INSTALLING_PREFIX + group.encode())
                del self._installing[group]
        if lsn > self.applied_lsn:
            batch.put(APPLIED_LSN_KEY, _LSN.pack(lsn))
            self.applied_lsn = lsn
        self._db.write(batch)

    # --- truncation, per group ------------------------------------------------------

    def _truncation_floor(self) -> int:
        """The oldest LSN the WAL must keep: the first record of any group that is not
        applied yet or is retained for followers, or the newest hard state of a group.
        A group retaining more than MAX_RETAINED_RECORDS is compacted first."""
        end = self._wal.last_lsn + 1
        floor = end
        for group, locations in self._locations.items():
            applied = self._applied.get(group, 0)
            keep_after = min(applied, self._retained.get(group, applied))
            lsn = locations.first_lsn_after(keep_after)
            if lsn is not None and keep_after < applied and end - lsn > MAX_RETAINED_RECORDS:
                keep_after = self._retained[group] = applied
                self.compacted_for_space.append((group, applied))
                lsn = locations.first_lsn_after(applied)
            locations.compact(keep_after)
            if lsn is not None:
                floor = min(floor, lsn)
        return floor

    async def _rewrite_old_hard_states(self, floor: int) -> None:
        """Append again the hard states older than `floor`, so truncating there keeps
        every group's newest one (an idle group must not pin the log)."""
        stale = [
            (group, held[0])
            for group, held in self._hard_states.items()
            if held[1] < floor and group not in self._erasing
        ]
        if not stale:
            return
        lsns = await self._wal.append_many([encode_hard_state(group, state) for group, state in stale])
        for (group, state), lsn in zip(stale, lsns, strict=True):
            held = self._hard_states.get(group)
            if held is not None and held[0] is state:  # no newer one was persisted meanwhile
                self._hard_states[group] = (state, lsn)

    async def checkpoint(self) -> None:
        """Flush RocksDB's memtables, then drop WAL segments they cover."""
        if self._checkpointing:
            return
        self._checkpointing = True
        try:
            # Again while writes that arrived during the flush already passed the
            # threshold: none of them would start another checkpoint.
            while True:
                # Taken before the flush: what is applied now is in RocksDB once it returns.
                floor = self._truncation_floor()
                self._bytes_since_checkpoint = 0
                await self._rewrite_old_hard_states(floor)
                await asyncio.get_running_loop().run_in_executor(None, self._db.flush, True)
                self._wal.truncate_before(floor)
                self._drop_spent_erasures()
                if self._bytes_since_checkpoint <= CHECKPOINT_WAL_BYTES or self._wal.failure is not None:
                    break
        finally:
            self._checkpointing = False

    def _drop_spent_erasures(self) -> None:
        """An erasure marker older than the WAL's first record has nothing left to hide."""
        spent = [group for group, lsn in self._erased.items() if lsn < self._wal.first_lsn]
        if not spent:
            return
        batch = rocksdict.WriteBatch(raw_mode=True)
        for group in spent:
            batch.delete(ERASED_PREFIX + group.encode())
            del self._erased[group]
        self._db.write(batch)

    async def close(self, clean: bool = False) -> None:
        """Close; `clean`: the caller's every write is done (nothing it sent lacks its
        write), which the next `open` reads as `stopped_cleanly`, once."""
        for thread in list(self._install_threads.values()):
            await asyncio.wait([thread])  # RocksDB must not close under an install's writes
        if self._checkpoint_task is not None:
            await self._checkpoint_task  # it flushes and truncates: let it finish first
        if self._flushes:
            await asyncio.wait(list(self._flushes))
        floor = self._truncation_floor()
        await self._rewrite_old_hard_states(floor)
        await self._wal.close()
        self._db.flush(True)
        self._wal.truncate_before(floor)
        self._db.close()
        if clean and self._wal.failure is None and self._directory is not None:
            _put_clean_stop_mark(self._directory)


CLEAN_STOP_MARK = "clean-stop"
"""A file in the engine's directory: the last process stopped cleanly (`Engine.close`)."""


def _put_clean_stop_mark(directory: Path) -> None:
    fd = os.open(directory / CLEAN_STOP_MARK, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(directory)


def _take_clean_stop_mark(directory: Path, sync: bool) -> bool:
    """Whether the last process stopped cleanly; the mark is gone (durably) after, so a
    crash of this process is never taken for a clean stop."""
    try:
        (directory / CLEAN_STOP_MARK).unlink()
    except FileNotFoundError:
        return False
    if sync:
        fsync_directory(directory)
    return True


@dataclass
class _Settling:
    remaining: int  # writes to the key staged before the answer, not yet decided
    future: asyncio.Future[None]


def _metadata(db: rocksdict.Rdict, prefix: bytes) -> list[tuple[GroupId, bytes]]:
    """(group, value) of every key under `prefix` (+ group id)."""
    out = []
    it = db.iter()
    it.seek(prefix)
    while it.valid() and it.key().startswith(prefix):
        out.append((it.key()[len(prefix) :].decode(), it.value()))
        it.next()
    return out


def _applied_indexes(db: rocksdict.Rdict) -> dict[GroupId, tuple[int, int]]:
    out: dict[GroupId, tuple[int, int]] = {}
    it = db.iter()
    it.seek(APPLIED_INDEX_PREFIX)
    while it.valid() and it.key().startswith(APPLIED_INDEX_PREFIX):
        value = it.value()
        position = _POSITION.unpack(value) if len(value) == _POSITION.size else (_LSN.unpack(value)[0], 0)
        out[it.key()[len(APPLIED_INDEX_PREFIX) :].decode()] = position
        it.next()
    return out


def _encode_left(state: HardState, last: int) -> bytes:
    return _LEFT.pack(state.term, last) + (state.vote or "").encode()


def _decode_left(value: bytes) -> tuple[HardState, int]:
    term, last = _LEFT.unpack_from(value)
    vote = value[_LEFT.size :].decode() or None
    return HardState(term, vote, 0), last


def _progress(state: HardState) -> tuple[int, bool, int]:
    return state.term, state.vote is not None, state.commit


def _effects_of(entry: Entry) -> list[Effect]:
    """NOOP and MEMBERSHIP entries carry no effects but still advance the applied index;
    so does a SPLIT entry (a NORMAL one no write produces, `group_split.py`)."""
    if entry.kind is not EntryKind.NORMAL or decode_split(entry.data) is not None:
        return []
    return decode_effects(entry.data)
