"""The node's write-ahead log: durability, group commit, recovery, truncation.

Real files and real fsyncs throughout; os.fdatasync is wrapped only to count, hold or
fail calls. Nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from partita.storage import wal as wal_module
from partita.storage.wal import (
    HEADER_BYTES,
    WalClosed,
    WalCorruption,
    WalError,
    WalFailed,
    WriteAheadLog,
)

# A broken writer shows up as appends that never return: fail instead of hanging.
pytestmark = pytest.mark.timeout(60)

_HEADER = struct.Struct("<IIQI")  # crc, length, lsn, batch index


def _payload(i: int) -> bytes:
    return f"record-{i:05d}-".encode() * (1 + i % 5)


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("wal-*.log"))


def _record_offsets(segment: Path) -> list[int]:
    """Where the segment's records start, up to the zeros of its preallocated rest."""
    data = segment.read_bytes()
    offsets, offset = [], 0
    while offset + HEADER_BYTES <= len(data) and data[offset : offset + HEADER_BYTES] != bytes(HEADER_BYTES):
        offsets.append(offset)
        offset += HEADER_BYTES + _HEADER.unpack_from(data, offset)[1]
    return offsets


def _data_end(segment: Path) -> int:
    """Where the segment's records end (the file goes on, preallocated, in zeros)."""
    data = segment.read_bytes()
    last = _record_offsets(segment)[-1]
    return last + HEADER_BYTES + _HEADER.unpack_from(data, last)[1]


def _write_at(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(data)


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


async def _append_each(wal: WriteAheadLog, payloads: list[bytes]) -> list[int]:
    """One append at a time, so every record is its own batch."""
    return [await wal.append(p) for p in payloads]


class _CountingSync:
    def __init__(self) -> None:
        self.calls = 0
        self.real = os.fdatasync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.real(fd)


class _GatedSync:
    """An fdatasync that holds each call until released, so a test can act mid-sync."""

    def __init__(self, error: OSError | None = None) -> None:
        self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()
        self.error = error
        self.real = os.fdatasync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.started.set()
        self.release.wait(30)
        if self.error is not None:
            raise self.error
        self.real(fd)

    async def wait_started(self) -> None:
        assert await asyncio.to_thread(self.started.wait, 30)


# --- appending and reading back -----------------------------------------------------------


async def test_append_returns_dense_increasing_lsns_from_one(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path)
    assert wal.last_lsn == 0
    assert await _append_each(wal, [_payload(i) for i in range(5)]) == [1, 2, 3, 4, 5]
    assert wal.last_lsn == 5
    await wal.close()


async def test_append_many_assigns_consecutive_lsns_in_order(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path)
    assert await wal.append(b"first") == 1
    assert await wal.append_many([b"a", b"", b"c"]) == [2, 3, 4]
    assert await wal.append_many([]) == []
    assert list(wal.replay(0)) == [(1, b"first"), (2, b"a"), (3, b""), (4, b"c")]
    await wal.close()


async def test_replay_returns_what_was_appended_across_rollover_and_reopen(tmp_path: Path) -> None:
    payloads = [_payload(i) for i in range(300)]
    wal = WriteAheadLog.open(tmp_path, segment_bytes=2048)
    for start in range(0, 300, 30):  # a mix of batch shapes
        await asyncio.gather(*(wal.append(p) for p in payloads[start : start + 20]))
        await wal.append_many(payloads[start + 20 : start + 30])
    expected = {lsn: payloads[lsn - 1] for lsn in range(1, 301)}
    # The gathered appends may be numbered in any order within their batch.
    replayed = dict(wal.replay(0))
    assert sorted(replayed) == list(range(1, 301))
    assert sorted(replayed.values()) == sorted(expected.values())
    await wal.close()

    segments = _segments(tmp_path)
    assert len(segments) > 5
    wal = WriteAheadLog.open(tmp_path, segment_bytes=2048)
    assert wal.last_lsn == 300
    assert dict(wal.replay(0)) == replayed
    assert list(wal.replay(250)) == [(lsn, replayed[lsn]) for lsn in range(251, 301)]
    assert list(wal.replay(300)) == []
    # Each segment is named after the LSN of its first record.
    for segment in segments:
        first = _HEADER.unpack_from(segment.read_bytes(), 0)[2]
        assert segment.name == f"wal-{first:020d}.log"
    assert await wal.append(b"after reopen") == 301
    await wal.close()


async def test_append_many_larger_than_one_write_is_split_but_acknowledged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_module, "MAX_BATCH_BYTES", 1024)
    monkeypatch.setattr(wal_module, "MAX_PAYLOAD_BYTES", 1024 - HEADER_BYTES)
    wal = WriteAheadLog.open(tmp_path)
    payloads = [bytes([i]) * 300 for i in range(10)]
    assert await wal.append_many(payloads) == list(range(1, 11))
    assert wal.metrics.batches == 4  # three 320-byte records per 1024-byte write
    assert [p for _, p in wal.replay(0)] == payloads
    await wal.close()


async def test_oversized_payload_is_rejected(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path)
    with pytest.raises(ValueError):
        await wal.append(b"x" * (wal_module.MAX_PAYLOAD_BYTES + 1))
    assert await wal.append(b"fine") == 1
    await wal.close()


async def test_second_open_of_the_same_directory_is_refused(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path)
    with pytest.raises(WalError):
        WriteAheadLog.open(tmp_path)
    await wal.close()
    WriteAheadLog.open(tmp_path, sync=False)


async def test_close_writes_queued_appends_and_refuses_new_ones(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path)
    tasks = [asyncio.create_task(wal.append(_payload(i))) for i in range(20)]
    await asyncio.sleep(0)  # let them queue
    await wal.close()
    assert sorted([t.result() for t in tasks]) == list(range(1, 21))
    with pytest.raises(WalClosed):
        await wal.append(b"late")
    reopened = WriteAheadLog.open(tmp_path)
    assert reopened.last_lsn == 20
    await reopened.close()


async def test_close_writes_what_is_queued_and_ends_the_sync_thread(tmp_path: Path) -> None:
    before = {t.ident for t in threading.enumerate() if t.name == "wal-sync"}
    wal = WriteAheadLog.open(tmp_path)
    assert await wal.append(b"first") == 1
    assert [t for t in threading.enumerate() if t.name == "wal-sync" and t.ident not in before]
    queued = [asyncio.ensure_future(wal.append(_payload(i))) for i in range(20)]
    await wal.close()  # appended this turn, not yet taken: close still writes them
    assert sorted([await q for q in queued]) == list(range(2, 22))
    assert not [t for t in threading.enumerate() if t.name == "wal-sync" and t.ident not in before]
    reopened = WriteAheadLog.open(tmp_path)
    assert reopened.last_lsn == 21
    await reopened.close()


async def test_unsafe_mode_without_fsync_still_logs_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _CountingSync()
    monkeypatch.setattr(os, "fdatasync", counter)
    wal = WriteAheadLog.open(tmp_path, sync=False)
    await asyncio.gather(*(wal.append(_payload(i)) for i in range(50)))
    assert counter.calls == 0
    await wal.close()
    reopened = WriteAheadLog.open(tmp_path, sync=False)
    assert reopened.last_lsn == 50
    await reopened.close()


# --- group commit -------------------------------------------------------------------------


async def test_concurrent_appends_share_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _CountingSync()
    monkeypatch.setattr(os, "fdatasync", counter)
    wal = WriteAheadLog.open(tmp_path)
    lsns = await asyncio.gather(*(wal.append(_payload(i)) for i in range(200)))
    assert sorted(lsns) == list(range(1, 201))
    assert counter.calls < 200 / 4
    assert wal.metrics.fsyncs == counter.calls
    assert wal.metrics.records == 200
    await wal.close()


async def test_writers_that_append_in_a_loop_batch_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _CountingSync()
    monkeypatch.setattr(os, "fdatasync", counter)
    wal = WriteAheadLog.open(tmp_path)

    async def writer(w: int) -> None:
        for i in range(25):
            await wal.append(_payload(w * 100 + i))

    await asyncio.gather(*(writer(w) for w in range(8)))
    assert wal.last_lsn == 200
    assert counter.calls < 200 / 4
    await wal.close()


async def test_appends_during_an_fsync_wait_for_it_then_share_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _GatedSync()
    monkeypatch.setattr(os, "fdatasync", gate)
    wal = WriteAheadLog.open(tmp_path)
    first = asyncio.create_task(wal.append(b"first"))
    await gate.wait_started()
    # The loop is free while the fsync runs: these queue up behind it.
    later = [asyncio.create_task(wal.append(_payload(i))) for i in range(50)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert not first.done()  # its record is written but not yet synced
    assert not any(t.done() for t in later)
    assert wal.last_lsn == 0
    gate.release.set()
    assert await first == 1
    assert sorted(await asyncio.gather(*later)) == list(range(2, 52))
    assert gate.calls == 2
    assert wal.metrics.batches == 2
    assert wal.metrics.batch_size_counts[wal.metrics.batch_size_bounds.index(64)] == 1
    await wal.close()


async def test_append_cancelled_before_its_write_is_never_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _GatedSync()
    monkeypatch.setattr(os, "fdatasync", gate)
    wal = WriteAheadLog.open(tmp_path)
    first = asyncio.create_task(wal.append(b"first"))
    await gate.wait_started()
    doomed = asyncio.create_task(wal.append(b"cancelled"))
    await asyncio.sleep(0)
    doomed.cancel()
    gate.release.set()
    assert await first == 1
    assert await wal.append(b"third") == 2
    assert list(wal.replay(0)) == [(1, b"first"), (2, b"third")]
    await wal.close()


# --- failures -----------------------------------------------------------------------------


async def test_fsync_error_fails_the_batch_and_every_later_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wal = WriteAheadLog.open(tmp_path)
    assert await wal.append(b"durable") == 1

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "injected fsync failure")

    monkeypatch.setattr(os, "fdatasync", broken)
    results = await asyncio.gather(*(wal.append(_payload(i)) for i in range(10)), return_exceptions=True)
    assert all(isinstance(r, OSError) and r.errno == errno.EIO for r in results)
    assert wal.last_lsn == 1
    monkeypatch.undo()  # even with a working fsync again, the log stays failed
    with pytest.raises(WalFailed):
        await wal.append(b"after")
    with pytest.raises(WalFailed):
        await wal.append_many([b"after"])
    assert isinstance(wal.failure, OSError)
    await wal.close()


async def test_appends_queued_behind_a_failed_fsync_fail_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _GatedSync(error=OSError(errno.EIO, "injected fsync failure"))
    monkeypatch.setattr(os, "fdatasync", gate)
    wal = WriteAheadLog.open(tmp_path)
    in_sync = asyncio.create_task(wal.append(b"in the failing batch"))
    await gate.wait_started()
    queued = asyncio.create_task(wal.append(b"queued behind it"))
    await asyncio.sleep(0)
    gate.release.set()
    with pytest.raises(OSError) as in_sync_error:
        await in_sync
    assert in_sync_error.value.errno == errno.EIO
    with pytest.raises(WalFailed):
        await queued
    assert gate.calls == 1  # nothing more was attempted
    await wal.close()


async def test_write_error_fails_the_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wal = WriteAheadLog.open(tmp_path)

    def full_disk(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, "injected")

    monkeypatch.setattr(os, "pwrite", full_disk)
    with pytest.raises(OSError) as error:
        await wal.append(b"x")
    assert error.value.errno == errno.ENOSPC
    monkeypatch.undo()
    with pytest.raises(WalFailed):
        await wal.append(b"y")
    await wal.close()


# --- recovery: torn tails and corruption --------------------------------------------------


async def _log_with_separate_batches(directory: Path, count: int) -> list[bytes]:
    payloads = [_payload(i) for i in range(count)]
    wal = WriteAheadLog.open(directory)
    await _append_each(wal, payloads)
    await wal.close()
    return payloads


async def _assert_continues_after(directory: Path, kept: list[bytes]) -> None:
    """The log holds exactly `kept`, and new records follow it, also after a reopen."""
    wal = WriteAheadLog.open(directory)
    assert wal.last_lsn == len(kept)
    assert [p for _, p in wal.replay(0)] == kept
    assert await wal.append(b"new") == len(kept) + 1
    await wal.close()
    wal = WriteAheadLog.open(directory)
    assert [p for _, p in wal.replay(0)] == [*kept, b"new"]
    await wal.close()


async def test_reopen_cuts_a_partial_last_record_and_continues_from_its_lsn(tmp_path: Path) -> None:
    payloads = await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    end = _data_end(segment)
    # The last five bytes never reached the disk: zeros, as the preallocated rest reads.
    _write_at(segment, end - 5, bytes(5))
    await _assert_continues_after(tmp_path, payloads[:9])
    # The same, in a segment that ends with its records (written before preallocation,
    # or on a file system that cannot preallocate).
    payloads = await _log_with_separate_batches(tmp_path / "grown", 10)
    (segment,) = _segments(tmp_path / "grown")
    os.truncate(segment, _data_end(segment) - 5)
    await _assert_continues_after(tmp_path / "grown", payloads[:9])


async def test_reopen_cuts_a_last_record_cut_inside_its_header(tmp_path: Path) -> None:
    payloads = await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    os.truncate(segment, _record_offsets(segment)[-1] + 7)
    await _assert_continues_after(tmp_path, payloads[:9])


async def test_reopen_cuts_a_last_record_with_a_flipped_byte(tmp_path: Path) -> None:
    payloads = await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    _flip_byte(segment, _data_end(segment) - 3)
    await _assert_continues_after(tmp_path, payloads[:9])


async def test_reopen_drops_a_zero_filled_tail(tmp_path: Path) -> None:
    payloads = await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    with segment.open("ab") as f:
        f.write(b"\0" * 4096)  # what a crash after extending the file can leave
    await _assert_continues_after(tmp_path, payloads)
    assert _record_offsets(segment)  # parseable again: the zeros are gone


async def test_damage_inside_the_last_batch_is_a_torn_write_despite_intact_records_after_it(
    tmp_path: Path,
) -> None:
    wal = WriteAheadLog.open(tmp_path)
    before = [_payload(i) for i in range(3)]
    await _append_each(wal, before)
    last_batch = [_payload(i) for i in range(3, 8)]
    assert await wal.append_many(last_batch) == [4, 5, 6, 7, 8]
    await wal.close()
    (segment,) = _segments(tmp_path)
    # Pages of one write reach the disk in any order: lose record 5, keep 6..8.
    _flip_byte(segment, _record_offsets(segment)[4] + HEADER_BYTES + 2)
    await _assert_continues_after(tmp_path, [*before, last_batch[0]])


async def test_bad_checksum_before_a_later_batch_is_corruption(tmp_path: Path) -> None:
    await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    offset = _record_offsets(segment)[4]
    _flip_byte(segment, offset + HEADER_BYTES + 1)
    with pytest.raises(WalCorruption) as error:
        WriteAheadLog.open(tmp_path)
    assert error.value.segment == segment
    assert error.value.offset == offset


async def test_damaged_length_before_a_later_batch_is_corruption(tmp_path: Path) -> None:
    await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    offset = _record_offsets(segment)[4]
    data = bytearray(segment.read_bytes())
    data[offset + 4 : offset + 8] = struct.pack("<I", 0x7FFFFFF0)  # unparseable: cannot skip it
    segment.write_bytes(bytes(data))
    with pytest.raises(WalCorruption) as error:
        WriteAheadLog.open(tmp_path)
    assert error.value.offset == offset


async def test_intact_record_with_the_wrong_lsn_at_the_end_is_corruption(tmp_path: Path) -> None:
    await _log_with_separate_batches(tmp_path, 3)
    (segment,) = _segments(tmp_path)
    data, end = segment.read_bytes(), _data_end(segment)
    # A torn write cannot produce an intact record, so an intact copy of lsn 1 where
    # lsn 4 belongs is not something to cut off quietly.
    _write_at(segment, end, data[: _record_offsets(segment)[1]])
    with pytest.raises(WalCorruption) as error:
        WriteAheadLog.open(tmp_path)
    assert error.value.offset == end


async def test_damage_further_from_the_end_than_one_batch_is_corruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _log_with_separate_batches(tmp_path, 20)
    (segment,) = _segments(tmp_path)
    offset, end = _record_offsets(segment)[2], _data_end(segment)
    _write_at(segment, offset, b"\xff" * (end - offset))
    monkeypatch.setattr(wal_module, "MAX_BATCH_BYTES", 256)
    assert end - offset > 256
    with pytest.raises(WalCorruption) as error:
        WriteAheadLog.open(tmp_path)
    assert error.value.offset == offset
    # The same damage within one batch's reach of the end is a torn write.
    monkeypatch.setattr(wal_module, "MAX_BATCH_BYTES", 16 * 1024 * 1024)
    wal = WriteAheadLog.open(tmp_path)
    assert wal.last_lsn == 2
    await wal.close()


async def test_zeros_after_the_records_end_the_log_and_zeros_before_a_later_batch_are_corruption(
    tmp_path: Path,
) -> None:
    # A segment is preallocated: what follows its records reads as zeros, so records
    # zeroed at the very end read as the end of the log (what preallocation gives up,
    # the module's docstring says); zeros followed by a later batch cannot be a torn
    # write.
    payloads = await _log_with_separate_batches(tmp_path, 10)
    (segment,) = _segments(tmp_path)
    offsets, end = _record_offsets(segment), _data_end(segment)
    _write_at(segment, offsets[4], bytes(HEADER_BYTES + 4))
    with pytest.raises(WalCorruption) as error:
        WriteAheadLog.open(tmp_path)
    assert error.value.offset == offsets[4]
    _write_at(segment, offsets[4], bytes(end - offsets[4]))
    await _assert_continues_after(tmp_path, payloads[:4])


async def test_segments_are_preallocated_ahead_and_appends_go_right_after_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = 4096
    monkeypatch.setattr(wal_module, "PREALLOCATE_BYTES", step)
    wal = WriteAheadLog.open(tmp_path, segment_bytes=64 * 1024)
    await _append_each(wal, [_payload(i) for i in range(3)])
    (segment,) = _segments(tmp_path)
    assert segment.stat().st_size == step > _data_end(segment)  # written in place
    # A write past the preallocated end grows the file a step beyond it, not a batch.
    await _append_each(wal, [_payload(i) for i in range(3, 120)])
    size, end = segment.stat().st_size, _data_end(segment)
    assert end > step and end < size <= end + step + 1024
    await wal.close()
    # A log whose last segment ends with its records (as before preallocation) is
    # preallocated on open; the next record follows the records, not the end of the file.
    os.truncate(segment, end)
    wal = WriteAheadLog.open(tmp_path, segment_bytes=64 * 1024)
    assert segment.stat().st_size == end + step
    assert await wal.append(b"next") == 121
    await wal.close()
    assert len(_record_offsets(segment)) == 121
    # Rolled segments are preallocated too. Reopened with smaller segments, the log
    # rolls at once, leaving zeros after the first segment's records, which replay
    # crosses to the next segment.
    wal = WriteAheadLog.open(tmp_path, segment_bytes=128)
    payloads = [_payload(i) for i in range(121, 160)]
    await _append_each(wal, payloads)
    segments = _segments(tmp_path)
    assert len(segments) > 2 and all(s.stat().st_size > _data_end(s) for s in segments)
    assert [p for _, p in wal.replay(121)] == payloads
    assert len(list(wal.replay(0))) == 121 + len(payloads)
    await wal.close()


async def test_corruption_in_an_older_segment_fails_replay(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path, segment_bytes=1024)
    await _append_each(wal, [_payload(i) for i in range(60)])
    await wal.close()
    first, second, *_ = _segments(tmp_path)
    offset = _record_offsets(first)[1]
    _flip_byte(first, offset + HEADER_BYTES)
    wal = WriteAheadLog.open(tmp_path, segment_bytes=1024)  # only the last segment is scanned
    with pytest.raises(WalCorruption) as error:
        list(wal.replay(0))
    assert (error.value.segment, error.value.offset) == (first, offset)
    # Replay that starts past the damaged segment never reads it.
    second_first = int(second.name[4:24])
    assert next(iter(wal.replay(second_first - 1)))[0] == second_first
    await wal.close()


async def test_missing_middle_segment_fails_replay(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path, segment_bytes=1024)
    await _append_each(wal, [_payload(i) for i in range(60)])
    await wal.close()
    _segments(tmp_path)[1].unlink()
    wal = WriteAheadLog.open(tmp_path, segment_bytes=1024)
    with pytest.raises(WalCorruption):
        list(wal.replay(0))
    await wal.close()


# --- truncation ---------------------------------------------------------------------------


async def test_truncate_before_removes_only_fully_covered_segments(tmp_path: Path) -> None:
    wal = WriteAheadLog.open(tmp_path, segment_bytes=1024)
    payloads = [_payload(i) for i in range(80)]
    await _append_each(wal, payloads)
    segments = _segments(tmp_path)
    firsts = [int(s.name[4:24]) for s in segments]
    assert len(firsts) >= 4

    # Segment 1 still holds lsn firsts[2] - 1, so only segment 0 can go.
    assert wal.truncate_before(firsts[2] - 1) == 1
    assert _segments(tmp_path) == segments[1:]
    assert wal.truncate_before(firsts[2]) == 1
    assert _segments(tmp_path) == segments[2:]
    assert wal.first_lsn == firsts[2]
    assert [lsn for lsn, _ in wal.replay(firsts[2] - 1)] == list(range(firsts[2], 81))
    with pytest.raises(WalError):
        wal.replay(firsts[2] - 2)

    # The current segment stays, whatever the LSN.
    wal.truncate_before(10**9)
    assert _segments(tmp_path) == segments[-1:]
    assert await wal.append(b"more") == 81
    await wal.close()

    wal = WriteAheadLog.open(tmp_path, segment_bytes=1024)
    assert wal.first_lsn == firsts[-1]
    assert [p for _, p in wal.replay(firsts[-1] - 1)] == [*payloads[firsts[-1] - 1 :], b"more"]
    await wal.close()


# --- crash --------------------------------------------------------------------------------

_CHILD = r"""
import asyncio, sys
from partita.storage.wal import WriteAheadLog

async def main(directory):
    wal = WriteAheadLog.open(directory, segment_bytes=64 * 1024)
    async def writer(w):
        for i in range(1000):
            payload = (f"w{w}-{i}-" * (1 + i % 13)).encode()
            if i % 5 == 4:
                lsns = await wal.append_many([payload, payload[::-1]])
                pairs = zip(lsns, [payload, payload[::-1]])
            else:
                pairs = [(await wal.append(payload), payload)]
            sys.stdout.write("".join(f"{lsn} {p.hex()}\n" for lsn, p in pairs))
            sys.stdout.flush()
    await asyncio.gather(*(writer(w) for w in range(8)))

asyncio.run(main(sys.argv[1]))
"""


async def test_sigkill_mid_stream_loses_no_acknowledged_record(tmp_path: Path) -> None:
    services = Path(wal_module.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(services)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    fd = proc.stdout.fileno()
    buffer = b""
    deadline = time.monotonic() + 60  # a hang guard, not an assertion on speed
    while buffer.count(b"\n") < 1500:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, "the child stopped producing acknowledgements"
        chunk = os.read(fd, 65536)
        assert chunk, f"the child exited early: {proc.stderr.read().decode()}"
        buffer += chunk
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed mid-stream, not finished
    buffer += proc.stdout.read()  # acknowledgements already in the pipe count too
    proc.stdout.close()
    proc.stderr.close()
    acknowledged = {}
    for line in buffer.split(b"\n")[:-1]:
        lsn, hexed = line.split()
        acknowledged[int(lsn)] = bytes.fromhex(hexed.decode())

    wal = WriteAheadLog.open(tmp_path, segment_bytes=64 * 1024)
    recovered = dict(wal.replay(0))
    assert sorted(recovered) == list(range(1, wal.last_lsn + 1))
    for lsn, payload in acknowledged.items():
        assert recovered.get(lsn) == payload, f"acknowledged lsn {lsn} lost or changed"
    last = wal.last_lsn
    assert await wal.append(b"after the crash") == last + 1
    await wal.close()
