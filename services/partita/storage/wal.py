"""The storage node's write-ahead log: one log per node, group commit, CRC32C records.

Every partition a node hosts writes through this one log, so concurrent writes to any
partition share one fsync. Payloads are opaque bytes: callers put partition ids (and,
with replication, terms and indexes) inside them. The contract with the caller:

1. `lsn = await wal.append(payload)` returns once the record is on disk.
2. The caller applies the record to RocksDB with RocksDB's own WAL disabled, storing
   `lsn` as its applied LSN in the same write batch.
3. On restart: `WriteAheadLog.open(directory)`, then apply `wal.replay(applied_lsn)`.
4. Once RocksDB has flushed everything up to `lsn`: `wal.truncate_before(lsn + 1)`.

A record whose append was never acknowledged (crash before the fsync, cancelled
caller, failed fsync) may or may not be found on replay: its outcome is unknown, as
with any database.

On-disk format
--------------
A directory of segments named `wal-<first LSN, 20 digits>.log`, plus a `LOCK` file.
LSNs are dense and start at 1. A segment is a sequence of records, followed by zeros:
it is preallocated ahead of its records (`fallocate`, `PREALLOCATE_BYTES` at a time) and
written in place, so an fdatasync seldom has to make a new file size durable too
(docs/benchmarks.md, round 15: a quarter less wall time and 30% less CPU per fdatasync
here). The end of a segment's data is therefore where its records stop, not the end of
the file::

    offset  size  field (little-endian)
    0       4     CRC32C of bytes 4 .. end of record (length, lsn, batch index, payload)
    4       4     payload length
    8       8     lsn
    16      4     batch index: the record's position in the write it was part of
    20      n     payload

Two departures from the obvious header (length, crc, lsn): the checksum also covers
the length (a flipped length bit is then a checksum failure, not a misparse) and the
batch index, which recovery needs to tell a torn write from corruption (below). Each
group-commit batch is one write of at most `MAX_BATCH_BYTES` followed by one fdatasync,
and the next batch is written only after that fdatasync returned. A batch never spans
two segments.

Recovery (`open`) reads the last segment only; older segments are checked when
`replay` reads them. Scanning the last segment stops at the first record that is
incomplete, fails its checksum or has the wrong LSN, at offset X. Only zeros after X
are the unwritten rest of the segment: the log ends at X. Otherwise, that is a torn
write (never acknowledged, cut off) if it can be the last batch, which a crash
interrupted between its write and its fdatasync; or else acknowledged data is damaged
and `open` raises `WalCorruption`. Damage is corruption when:

- X is more than `MAX_BATCH_BYTES` before the last nonzero byte of the file: the last
  batch started at the previous, synced, end of the records, and is at most that long; or
- some intact record after X belongs to a later batch (its `lsn - batch index` is
  above the LSN expected at X): a later batch is only written after the earlier one
  was synced.

Intact records after X in the *same* batch are legitimate (pages of one write reach
the disk in any order) and are cut off with it: the file is truncated at X, durably,
before anything is appended after X, then preallocated again.

What preallocation gives up: acknowledged records at the very end of the last segment
that a faulty disk turned into zeros read as the end of the log, as in other logs
written into preallocated or pre-zeroed files (etcd's WAL, PostgreSQL's). Damage of any
other kind there, and zeros followed by data, are still found.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import errno
import fcntl
import os
import re
import struct
import sys
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import google_crc32c

from partita.common.metrics import FSYNC_BUCKETS, HistogramCell

_HEADER = struct.Struct("<IIQI")  # crc, length, lsn, batch index
_CHECKED_FIELDS = struct.Struct("<IQI")  # the header fields after the crc
HEADER_BYTES = _HEADER.size
_ZERO_HEADER = bytes(HEADER_BYTES)

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
"""Default segment size: 64 MiB. A new segment starts once the current one holds at
least this much, so a segment may exceed it by up to one batch. Smaller segments let
`truncate_before` reclaim space sooner; larger ones mean fewer files and rollovers."""

PREALLOCATE_BYTES = 1024 * 1024
"""How far ahead of its records a segment is preallocated: a write that reaches past it
grows the file this much further, so its size changes once a MiB of log, not once a
batch. Not the whole segment: a node's WAL takes what it holds plus this, and a test
suite opening thousands of engines does not reserve 64 MiB for each."""

MAX_BATCH_BYTES = 16 * 1024 * 1024
"""Largest single write between two fdatasyncs: 16 MiB. Part of the format, not a
tuning knob: recovery relies on it to bound how far before the end of the log a torn
write can reach, so it must never shrink for an existing log."""

MAX_PAYLOAD_BYTES = MAX_BATCH_BYTES - HEADER_BYTES
"""Largest payload of one record (16 MiB minus the header); larger ones raise
ValueError. DynamoDB's largest write, a 4 MB transaction, fits with room to spare."""

BATCH_SIZE_BOUNDS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
"""Upper bounds (records per batch) of the batch-size histogram's buckets."""

_SEGMENT_NAME = re.compile(r"wal-(\d{20})\.log")
_LOCK_NAME = "LOCK"


class WalError(Exception):
    """Base class of the write-ahead log's errors."""


class WalCorruption(WalError):
    """Acknowledged data is damaged: the log cannot be trusted without an operator."""

    def __init__(self, segment: Path, offset: int, reason: str) -> None:
        super().__init__(f"{segment}: offset {offset}: {reason}")
        self.segment = segment
        self.offset = offset
        self.reason = reason


class WalFailed(WalError):
    """A write or fsync failed earlier; the log accepts nothing until it is reopened."""


class WalClosed(WalError):
    """The log is closed (or closing)."""


@dataclass(slots=True)
class WalMetrics:
    """Counters for the metrics exporter; updated once per batch, so they cost little.

    `batch_size_counts[i]` counts batches of at most `batch_size_bounds[i]` records and
    more than the previous bound (not cumulative); the last slot counts larger ones.
    """

    records: int = 0  # records made durable
    bytes_written: int = 0  # headers included
    fsyncs: int = 0  # fdatasyncs of log data (directory fsyncs are not counted)
    batches: int = 0
    batch_size_sum: int = 0
    batch_size_bounds: tuple[int, ...] = BATCH_SIZE_BOUNDS
    batch_size_counts: list[int] = field(default_factory=lambda: [0] * (len(BATCH_SIZE_BOUNDS) + 1))
    # Time to write and fdatasync one batch, as the writer (and so every waiting
    # append) waits for it, hand-off to the sync thread and back included.
    sync_seconds: HistogramCell = field(default_factory=lambda: HistogramCell(FSYNC_BUCKETS))

    def observe_batch(self, records: int, nbytes: int) -> None:
        self.records += records
        self.bytes_written += nbytes
        self.batches += 1
        self.batch_size_sum += records
        self.batch_size_counts[bisect.bisect_left(self.batch_size_bounds, records)] += 1


@dataclass(frozen=True, slots=True)
class _Segment:
    first_lsn: int
    path: Path


@dataclass(slots=True, eq=False)
class _Append:
    """One `append`/`append_many` call waiting for the writer."""

    payloads: list[bytes]
    future: asyncio.Future[list[int]]
    lsns: list[int] = field(default_factory=list)  # assigned so far; may span batches


class WriteAheadLog:
    """A node-level write-ahead log with group commit. Create it with `open`."""

    def __init__(
        self,
        directory: Path,
        segments: list[_Segment],
        fd: int,
        segment_size: int,
        last_lsn: int,
        lock_fd: int,
        *,
        segment_bytes: int,
        sync: bool,
    ) -> None:
        self._directory = directory
        self._segments = segments
        self._fd = fd
        self._segment_size = segment_size
        # How long the current segment's file is (preallocated ahead of its records), as
        # the writer knows it: asking the file (fstat) before each write cost as much as
        # the growth it saves (docs/benchmarks.md, round 15).
        self._allocated = segment_size
        self._last_lsn = last_lsn  # durable: every record up to here is on disk
        self._next_lsn = last_lsn + 1  # assigned to the next record taken into a batch
        self._lock_fd = lock_fd
        self._segment_bytes = segment_bytes
        self._sync = sync
        self._pending: deque[_Append] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None  # bound by the first append
        self._batch_scheduled = False  # a call to _start_batch is due this loop turn
        self._in_flight = False  # a batch is with the sync thread; it alone owns _fd then
        self._idle: asyncio.Future[None] | None = None  # close() waits on it to drain
        self._closing = False
        self._close_task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._sync_thread: _SyncThread | None = None
        self.metrics = WalMetrics()

    # --- opening and recovery -----------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        sync: bool = True,
    ) -> WriteAheadLog:
        """Open (or create) the log in `directory`, recovering from a crash if needed.

        `sync=False` never fsyncs: acknowledged records can be lost on power failure.
        Only for tests and the "unsafe" benchmark option.

        Blocking; call it before serving. Raises `WalCorruption` if acknowledged data
        in the last segment is damaged, `WalError` if another process holds the log.
        """
        if segment_bytes <= 0:
            raise ValueError("segment_bytes must be positive")
        path = Path(directory)
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            if sync:
                fsync_directory(path.parent)
        lock_fd = _lock(path)
        try:
            segments = _list_segments(path)
            if not segments:
                first = _Segment(1, path / _segment_name(1))
                os.close(_create_segment(first.path, sync=sync))
                segments = [first]
            last = segments[-1]
            data = last.path.read_bytes()
            end, next_lsn = _valid_prefix(data, last.first_lsn)
            written = max(end, _nonzero_end(data))
            if end < written:
                _check_torn_tail(last.path, data[:written], end, next_lsn)
            fd = os.open(last.path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                if end < written:
                    # Durably, before appending after it: otherwise a later crash could
                    # resurrect the cut records behind the new ones.
                    os.ftruncate(fd, end)
                    if sync:
                        os.fsync(fd)
                # Also a log written before segments were preallocated.
                allocated = max(os.fstat(fd).st_size, _preallocate(fd, end))
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            os.close(lock_fd)
            raise
        wal = cls(path, segments, fd, end, next_lsn - 1, lock_fd, segment_bytes=segment_bytes, sync=sync)
        wal._allocated = allocated
        return wal

    # --- properties ---------------------------------------------------------------------

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def last_lsn(self) -> int:
        """The LSN of the last durable record (0 if there is none)."""
        return self._last_lsn

    @property
    def first_lsn(self) -> int:
        """The oldest LSN still kept; `replay(after)` needs `after >= first_lsn - 1`."""
        return self._segments[0].first_lsn

    @property
    def failure(self) -> BaseException | None:
        """The error that put the log into its failed state, if any."""
        return self._failure

    # --- appending ----------------------------------------------------------------------

    async def append(self, payload: bytes) -> int:
        """Append one record; returns its LSN once it is durable."""
        return (await self._submit([payload]))[0]

    async def append_many(self, payloads: list[bytes]) -> list[int]:
        """Append records with consecutive LSNs, in order; returns once all are durable.

        Not atomic across a crash: an unacknowledged call may leave a prefix behind.
        """
        if not payloads:
            return []
        return await self._submit(list(payloads))

    def _submit(self, payloads: list[bytes]) -> asyncio.Future[list[int]]:
        if self._failure is not None:
            raise WalFailed("the write-ahead log failed earlier; reopen it") from self._failure
        if self._closing:
            raise WalClosed("the write-ahead log is closed")
        for payload in payloads:
            # Checked here: a bad payload reaching the writer would fail the whole log.
            if not isinstance(payload, bytes):
                raise TypeError(f"WAL payloads are bytes, not {type(payload).__name__}")
            if len(payload) > MAX_PAYLOAD_BYTES:
                raise ValueError(f"WAL payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        future: asyncio.Future[list[int]] = loop.create_future()
        self._pending.append(_Append(payloads, future))
        if not self._in_flight and not self._batch_scheduled:
            # On the next turn, not now: the appends of this turn share the batch.
            self._batch_scheduled = True
            loop.call_soon(self._start_batch)
        return future

    def _start_batch(self) -> None:
        """Encode what is queued and hand it to the sync thread (or, unsynced, write it).

        Called on the loop when no batch is in flight. The sync thread answers through
        `_batch_synced`, which starts the next batch at once if appends queued up behind
        this one: one thread wake-up and one loop wake-up per batch, no task or executor
        future in between."""
        self._batch_scheduled = False
        if self._in_flight:
            return
        if self._failure is not None:
            self._notify_idle()
            return
        roll = self._segment_size >= self._segment_bytes
        data, count, batch = self._take_batch()
        if count == 0:  # every caller waiting had been cancelled, or nothing is queued
            self._notify_idle()
            return
        segment: _Segment | None = None
        if roll:  # the new segment is named after the batch's first record
            first = self._next_lsn - count
            segment = _Segment(first, self._directory / _segment_name(first))
        if not self._sync:
            try:
                if segment is not None:
                    self._switch_segment(_create_segment(segment.path, sync=False), segment)
                self._allocated = _write_at(
                    self._fd, data, 0 if segment is not None else self._segment_size, self._allocated
                )
            except BaseException as exc:
                self._batch_failed(exc, batch)
                if not isinstance(exc, Exception):
                    raise
                return
            self._batch_done(data, count, batch)
            return
        thread = self._sync_thread
        if thread is None:
            assert self._loop is not None
            thread = self._sync_thread = _SyncThread(self._loop, self._fd, self._allocated)
        self._in_flight = True
        thread.hand(
            _SyncJob(
                data,
                0 if segment is not None else self._segment_size,
                None if segment is None else segment.path,
                time.perf_counter(),
                self._batch_synced,
                (data, count, batch, segment),
            )
        )

    def _batch_synced(self, job: _SyncJob, error: BaseException | None) -> None:
        """The sync thread's answer, on the loop."""
        self._in_flight = False
        data, count, batch, segment = job.context
        if segment is not None and job.new_fd is not None:
            self._switch_segment(job.new_fd, segment, close_old=False)
        if error is not None:
            self._batch_failed(error, batch)
            return
        self.metrics.sync_seconds.observe(time.perf_counter() - job.started)
        self.metrics.fsyncs += 1
        self._batch_done(data, count, batch)

    def _switch_segment(self, fd: int, segment: _Segment, close_old: bool = True) -> None:
        self._allocated = PREALLOCATE_BYTES  # what `_create_segment` gave it
        # The current segment's last batch was synced before a roll, so the old
        # descriptor can simply be closed.
        if close_old:
            os.close(self._fd)
        self._fd = fd
        self._segments.append(segment)
        self._segment_size = 0

    def _batch_done(self, data: bytes, count: int, batch: list[_Append]) -> None:
        self._segment_size += len(data)
        self._last_lsn = self._next_lsn - 1
        self.metrics.observe_batch(count, len(data))
        for entry in batch:
            if len(entry.lsns) == len(entry.payloads) and not entry.future.done():
                entry.future.set_result(entry.lsns)
        if self._pending:
            self._start_batch()
        else:
            self._notify_idle()

    def _batch_failed(self, exc: BaseException, batch: list[_Append]) -> None:
        self._fail(exc, batch)
        self._notify_idle()

    def _notify_idle(self) -> None:
        if self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    def _take_batch(self) -> tuple[bytes, int, list[_Append]]:
        """Encode queued records into one write of at most MAX_BATCH_BYTES."""
        parts: list[bytes] = []
        size = 0
        count = 0
        batch: list[_Append] = []
        pending = self._pending
        lsn = self._next_lsn
        value, extend = google_crc32c.value, google_crc32c.extend
        full = False
        while pending and not full:
            entry = pending[0]
            if not entry.lsns and entry.future.cancelled():
                pending.popleft()  # nothing of it written yet, so it never happened
                continue
            payloads = entry.payloads
            taken = len(entry.lsns)
            for payload in payloads[taken:]:
                length = len(payload)
                if size + HEADER_BYTES + length > MAX_BATCH_BYTES:
                    full = True
                    break
                crc = extend(value(_CHECKED_FIELDS.pack(length, lsn, count)), payload)
                parts.append(_HEADER.pack(crc, length, lsn, count))
                parts.append(payload)
                entry.lsns.append(lsn)
                size += HEADER_BYTES + length
                lsn += 1
                count += 1
            if len(entry.lsns) > taken:
                batch.append(entry)
            if len(entry.lsns) == len(payloads):
                pending.popleft()
        self._next_lsn = lsn
        return b"".join(parts), count, batch

    def _fail(self, exc: BaseException, batch: list[_Append]) -> None:
        # No retry: after a failed fsync the kernel may have dropped the dirty pages
        # and a second fsync can report success without writing them. Only reopening
        # (which reads what really is on disk) is safe.
        self._failure = exc
        for entry in batch:
            if not entry.future.done():
                if isinstance(exc, Exception):
                    entry.future.set_exception(exc)
                else:
                    entry.future.cancel()
        failed = WalFailed("the write-ahead log failed; reopen it")
        failed.__cause__ = exc
        while self._pending:
            entry = self._pending.popleft()
            if not entry.future.done():
                entry.future.set_exception(failed)

    # --- reading ------------------------------------------------------------------------

    def replay(self, after_lsn: int = 0) -> Iterator[tuple[int, bytes]]:
        """Yield `(lsn, payload)` for every durable record with LSN > `after_lsn`.

        Stops at the `last_lsn` of the moment of the call. Checksums and LSN order are
        verified (`WalCorruption` on damage). Blocking file I/O: meant for recovery at
        start-up, or to be run in an executor. Raises `WalError` at once if records
        after `after_lsn` were already removed by `truncate_before`.
        """
        if after_lsn < 0:
            raise ValueError("after_lsn must be >= 0")
        end = self._last_lsn
        if after_lsn >= end:
            return iter(())
        segments = list(self._segments)
        start = after_lsn + 1
        if start < segments[0].first_lsn:
            raise WalError(f"records {start}..{segments[0].first_lsn - 1} were already truncated")
        i = bisect.bisect_right([s.first_lsn for s in segments], start) - 1
        return _read_segments(segments[i:], start, end)

    # --- space reclamation and shutdown -------------------------------------------------

    def truncate_before(self, lsn: int) -> int:
        """Delete whole segments whose records are all below `lsn`; returns how many.

        Call it once RocksDB has flushed everything below `lsn`. The current segment
        is never deleted. Blocks for the unlinks and one directory fsync (milliseconds,
        once per checkpoint). Also allowed after `close`.
        """
        doomed: list[_Segment] = []
        while len(self._segments) > 1 and self._segments[1].first_lsn <= lsn:
            doomed.append(self._segments.pop(0))
        # Oldest first, so a crash part-way leaves a log without holes.
        for segment in doomed:
            with contextlib.suppress(FileNotFoundError):
                segment.path.unlink()
        if doomed and self._sync:
            fsync_directory(self._directory)
        return len(doomed)

    async def close(self) -> None:
        """Write and sync everything queued, then stop the writer and release the log."""
        if self._close_task is None:
            self._close_task = asyncio.get_running_loop().create_task(self._close())
        # Shielded: a cancelled caller must not leave descriptors closed under a
        # writer that is still running, nor a half-closed log for the next caller.
        await asyncio.shield(self._close_task)

    async def _close(self) -> None:
        self._closing = True
        loop = asyncio.get_running_loop()
        if self._in_flight or self._batch_scheduled or (self._pending and self._failure is None):
            self._idle = loop.create_future()
            if not self._in_flight and not self._batch_scheduled:
                self._start_batch()
            await self._idle
        try:
            if self._failure is None:
                # Makes a clean shutdown durable even with sync=False.
                await loop.run_in_executor(None, _datasync, self._fd)
        finally:
            if self._sync_thread is not None:
                # It is idle: nothing is in flight once the queue drained.
                await loop.run_in_executor(None, self._sync_thread.stop)
            os.close(self._fd)
            os.close(self._lock_fd)


class _SyncJob:
    """One batch for the sync thread: optionally start a new segment, then write `data`
    at `offset` and fdatasync it; `done(job, error)` is then called on the loop."""

    __slots__ = ("context", "data", "done", "new_fd", "offset", "roll_to", "started")

    def __init__(
        self,
        data: bytes,
        offset: int,
        roll_to: Path | None,
        started: float,
        done: Callable[[_SyncJob, BaseException | None], None],
        context: tuple[bytes, int, list[_Append], _Segment | None],
    ) -> None:
        self.data = data
        self.offset = offset
        self.roll_to = roll_to
        self.started = started
        self.done = done
        self.context = context
        self.new_fd: int | None = None  # the new segment's descriptor, once created


class _SyncThread:
    """The log's own thread for writes and fdatasyncs, one batch at a time.

    A dedicated thread blocking on a lock instead of an executor: handing a batch over
    is one lock release, and the answer one `call_soon_threadsafe`, where an executor
    hop per batch cost a work item, a concurrent future chained to an asyncio future and
    a task wake-up (19% of a replica's loop under YCSB A, docs/benchmarks.md). Private,
    so a batch's fdatasync never queues behind unrelated blocking work (RocksDB flushes).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, allocated: int) -> None:
        self._loop = loop
        self._fd = fd  # the thread's own copy: the loop's changes only between batches
        self._allocated = allocated  # the file's length, as `WriteAheadLog._allocated`
        self._job: _SyncJob | None = None
        self._stopping = False
        # Held while there is no job: the thread blocks acquiring it, `hand` releases it.
        self._ready = threading.Lock()
        self._ready.acquire()
        self._thread = threading.Thread(target=self._run, name="wal-sync", daemon=True)
        self._thread.start()

    def hand(self, job: _SyncJob) -> None:
        """Give the idle thread its next batch (never while one is in flight)."""
        self._job = job
        self._ready.release()

    def stop(self) -> None:
        """Blocking: end the idle thread and wait for it."""
        self._stopping = True
        self._ready.release()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._ready.acquire()
            job, self._job = self._job, None
            if job is None:
                if self._stopping:
                    return
                continue
            error: BaseException | None = None
            try:
                if job.roll_to is not None:
                    job.new_fd = _create_segment(job.roll_to, sync=True)
                    os.close(self._fd)
                    self._fd = job.new_fd
                    self._allocated = PREALLOCATE_BYTES
                self._allocated = _write_at(self._fd, job.data, job.offset, self._allocated)
                _datasync(self._fd)
            except BaseException as exc:  # reported to the loop, which fails the log
                error = exc
            try:
                self._loop.call_soon_threadsafe(job.done, job, error)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return


# --- file helpers (the blocking ones run in the log's sync thread) ------------------------


def _segment_name(first_lsn: int) -> str:
    return f"wal-{first_lsn:020d}.log"


def _list_segments(directory: Path) -> list[_Segment]:
    segments = []
    for entry in directory.iterdir():
        match = _SEGMENT_NAME.fullmatch(entry.name)
        if match is not None:
            segments.append(_Segment(int(match.group(1)), entry))
    segments.sort(key=lambda s: s.first_lsn)
    return segments


def _lock(directory: Path) -> int:
    fd = os.open(directory / _LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise WalError(f"the write-ahead log in {directory} is already open") from None
    return fd


def _create_segment(path: Path, sync: bool) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        _preallocate(fd, 0)
        if sync:
            fsync_directory(path.parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _preallocate(fd: int, end: int) -> int:
    """Make the segment at least `PREALLOCATE_BYTES` longer than `end` (the rest reading
    as zeros), so the writes up to there do not change its size; returns that length.
    Best effort: where the file system cannot, the segment grows as it is written, which
    recovery reads the same way."""
    if hasattr(os, "posix_fallocate"):
        with contextlib.suppress(OSError):
            os.posix_fallocate(fd, end, PREALLOCATE_BYTES)
    return end + PREALLOCATE_BYTES


def fsync_directory(directory: Path) -> None:
    """Make a directory's entries (files created, renamed, removed) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _datasync(fd: int) -> None:
    # Looked up at call time so tests can substitute a failing os.fdatasync.
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # macOS has no fdatasync
        os.fsync(fd)


def _write_at(fd: int, data: bytes, offset: int, allocated: int) -> int:
    """Write `data` at `offset`, preallocating further first when it reaches past
    `allocated` (the file's length); returns the file's length after."""
    end = offset + len(data)
    if end > allocated:
        allocated = _preallocate(fd, end)
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written == 0:
            raise OSError(errno.EIO, "write made no progress")
        view = view[written:]
        offset += written
    return allocated


def _nonzero_end(data: bytes, step: int = 1 << 16) -> int:
    """Offset just past the last nonzero byte of `data` (0 if all zeros): the end of
    what was ever written into a preallocated segment."""
    zeros = bytes(step)
    end = len(data)
    while end > 0:
        start = max(0, end - step)
        chunk = data[start:end]
        if chunk != zeros[: end - start]:
            return start + len(chunk.rstrip(b"\0"))
        end = start
    return 0


# --- record parsing -----------------------------------------------------------------------


def _record_at(data: bytes, offset: int) -> tuple[int, int, int] | None:
    """`(lsn, batch index, end offset)` of an intact record at `offset`, else None."""
    if len(data) - offset < HEADER_BYTES:
        return None
    crc, length, lsn, index = _HEADER.unpack_from(data, offset)
    end = offset + HEADER_BYTES + length
    if length > MAX_PAYLOAD_BYTES or end > len(data):
        return None
    if google_crc32c.value(data[offset + 4 : end]) != crc:
        return None
    return lsn, index, end


def _valid_prefix(data: bytes, first_lsn: int) -> tuple[int, int]:
    """End offset of the intact records at the start of `data`, and the next LSN."""
    offset, lsn = 0, first_lsn
    while (record := _record_at(data, offset)) is not None and record[0] == lsn:
        offset, lsn = record[2], lsn + 1
    return offset, lsn


def _check_torn_tail(path: Path, data: bytes, bad: int, lsn: int) -> None:
    """Raise WalCorruption unless the damage at `bad` can be the unsynced last batch."""
    misplaced = _record_at(data, bad)
    if misplaced is not None:  # intact, so not torn: the wrong LSN was written here
        raise WalCorruption(path, bad, f"record with lsn {misplaced[0]} where lsn {lsn} belongs")
    if len(data) - bad > MAX_BATCH_BYTES:
        raise WalCorruption(
            path, bad, f"record {lsn} is damaged further from the end than an unsynced batch can reach"
        )
    later = _later_batch_record(data, bad, lsn)
    if later is not None:
        raise WalCorruption(path, bad, f"record {lsn} is damaged, yet a later batch is intact at {later}")


def _later_batch_record(data: bytes, start: int, lsn: int) -> int | None:
    """Offset of an intact record at or after `start` from a batch later than `lsn`'s.

    A damaged header cannot be trusted to find the next record, so every byte offset
    is a candidate. The LSN field filters them: an intact later record's LSN lies in
    (lsn, lsn + records that fit], which almost no other 8 bytes do; only those
    candidates get a checksum. The tail is read as 8-byte words, one pass per
    alignment, to keep the per-offset work small: about two seconds for the largest
    possible tail (16 MiB), milliseconds for the usual one (the last batch, KiBs).
    """
    lo = lsn + 1
    hi = lsn + (len(data) - start) // HEADER_BYTES
    for shift in range(8):
        first_field = start + shift + 8  # the lsn field of a header at start + shift
        words = (len(data) - first_field) // 8
        if words <= 0:
            continue
        values = array("Q")
        values.frombytes(data[first_field : first_field + 8 * words])
        if sys.byteorder == "big":
            values.byteswap()
        for i in [i for i, candidate in enumerate(values) if lo <= candidate <= hi]:
            offset = first_field - 8 + 8 * i
            record = _record_at(data, offset)
            if record is not None and record[0] - record[1] > lsn:
                return offset
    return None


def _read_segments(segments: Iterable[_Segment], start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Records `start..end` from consecutive segments, verifying checksums and LSNs."""
    expected: int | None = None
    path, offset = Path(), 0
    for segment in segments:
        if expected is None:
            expected = segment.first_lsn
        elif segment.first_lsn != expected:
            raise WalCorruption(
                segment.path, 0, f"segment starts at lsn {segment.first_lsn}, expected {expected}"
            )
        path, offset = segment.path, 0
        with open(path, "rb") as f:
            while expected <= end:
                header = f.read(HEADER_BYTES)
                if not header or header == _ZERO_HEADER:
                    # The end of this segment (its preallocated rest reads as zeros);
                    # the next one continues the log, or the log ends short.
                    break
                if len(header) < HEADER_BYTES:
                    raise WalCorruption(path, offset, "truncated record header")
                crc, length, lsn, _ = _HEADER.unpack(header)
                if lsn != expected or length > MAX_PAYLOAD_BYTES:
                    raise WalCorruption(path, offset, f"bad header where lsn {expected} belongs")
                if lsn < start:
                    # Skipped unverified: a wrong length here derails the parse, and the
                    # next header then fails the LSN check.
                    f.seek(length, os.SEEK_CUR)
                else:
                    payload = f.read(length)
                    if len(payload) < length:
                        raise WalCorruption(path, offset, f"truncated payload of lsn {lsn}")
                    if google_crc32c.extend(google_crc32c.value(header[4:]), payload) != crc:
                        raise WalCorruption(path, offset, f"checksum mismatch in lsn {lsn}")
                    yield lsn, payload
                expected += 1
                offset += HEADER_BYTES + length
        if expected > end:
            return
    raise WalCorruption(path, offset, f"the log ends before lsn {expected}, short of durable lsn {end}")
