"""One RocksDB for every partition on the node, made durable by the node's WAL.

Write path: the caller computes a write's effects from the latest state (committed
plus pending, see `latest`), `commit` appends them to the WAL (group commit: concurrent
writes share an fsync) and, once durable, applies them to RocksDB with RocksDB's own
WAL disabled, recording the applied LSN in the same batch. Recovery replays the WAL
after that LSN. Replication (P3) slots in at `commit`: the effects become a log entry
proposed to the partition's group instead of appended locally.

Reads of committed data go straight to RocksDB. Read-modify-write operations must see
writes that are durable-pending too, or two conditional writes racing on one key would
both pass their check; `_pending` holds the newest not-yet-applied value per key.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import rocksdict

from partita.storage.effects import Effect, Kind, decode_effects, encode_effects
from partita.storage.wal import WalMetrics, WriteAheadLog

log = logging.getLogger(__name__)

# Table id 0 is never allocated (ids are odd), so this prefix is free for node metadata.
META_PREFIX = b"\x00" * 8
APPLIED_LSN_KEY = META_PREFIX + b"applied_lsn"
_LSN = struct.Struct(">Q")
_MISSING = object()
# Flush RocksDB and drop covered WAL segments once this much WAL has accumulated.
CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024


class Engine:
    def __init__(self, db: rocksdict.Rdict, wal: WriteAheadLog, applied_lsn: int) -> None:
        self._db = db
        self._wal = wal
        self.applied_lsn = applied_lsn
        self._pending: dict[bytes, tuple[int, bytes | None]] = {}
        self._bytes_since_checkpoint = 0
        self._checkpointing = False
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._options: rocksdict.Options | None = None  # set by open: its statistics
        self._directory: Path | None = None

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
        engine = cls(db, wal, applied)
        engine._options = options
        engine._directory = directory
        replayed = engine._replay()
        log.info("engine open at %s: applied lsn %d, replayed %d records", directory, applied, replayed)
        return engine

    def _replay(self) -> int:
        count = 0
        for lsn, payload in self._wal.replay(self.applied_lsn):
            self._apply(lsn, decode_effects(payload))
            count += 1
        return count

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

    async def commit(self, effects: list[Effect]) -> int:
        """Make `effects` durable and visible; returns the record's LSN."""
        return (await self.commit_many([effects]))[0]

    async def commit_many(self, groups: list[list[Effect]]) -> list[int]:
        """Commit several independent writes; they share one WAL batch."""
        for effects in groups:
            self.stage(effects)
        return await self.commit_staged(groups)

    def stage(self, effects: list[Effect]) -> None:
        """Make `effects` visible to `latest` now, before they are durable.

        A read-modify-write must stage its effects in the same synchronous step that
        planned them: the next plan on the same key, even one in the same incoming
        batch, then builds on this write instead of on the state before it. Every staged
        group must reach `commit_staged`, which un-stages it whatever happens.
        """
        self._mark_pending(effects)

    async def commit_staged(self, groups: list[list[Effect]]) -> list[int]:
        """Make staged writes durable (one WAL batch) and apply them, in order."""
        try:
            payloads = [encode_effects(effects) for effects in groups]
            lsns = await self._wal.append_many(payloads)
            # No await between here and the end of the loop: records are applied in
            # LSN order and atomically with respect to every other coroutine.
            for lsn, effects in zip(lsns, groups, strict=True):
                self._apply(lsn, effects)
            self._bytes_since_checkpoint += sum(len(p) for p in payloads)
        finally:
            for effects in groups:
                self._unmark_pending(effects)
        if self._bytes_since_checkpoint > CHECKPOINT_WAL_BYTES and not self._checkpointing:
            self._checkpoint_task = asyncio.get_running_loop().create_task(self.checkpoint())
        return lsns

    def _mark_pending(self, effects: list[Effect]) -> None:
        for e in effects:
            if e.kind is Kind.DELETE_RANGE:
                continue
            count = self._pending.get(e.key, (0, None))[0]
            self._pending[e.key] = (count + 1, e.value if e.kind is Kind.PUT else None)

    def _unmark_pending(self, effects: list[Effect]) -> None:
        for e in effects:
            if e.kind is Kind.DELETE_RANGE:
                continue
            count, value = self._pending[e.key]
            if count == 1:
                del self._pending[e.key]
            else:
                self._pending[e.key] = (count - 1, value)

    def _apply(self, lsn: int, effects: list[Effect]) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for e in effects:
            if e.kind is Kind.PUT:
                batch.put(e.key, e.value)
            elif e.kind is Kind.DELETE or e.kind is Kind.SERVICE_DELETE:
                batch.delete(e.key)
            else:
                batch.delete_range(e.key, e.value)
        if lsn > self.applied_lsn:
            batch.put(APPLIED_LSN_KEY, _LSN.pack(lsn))
            self.applied_lsn = lsn
        self._db.write(batch)

    async def checkpoint(self) -> None:
        """Flush RocksDB's memtables, then drop WAL segments they cover."""
        if self._checkpointing:
            return
        self._checkpointing = True
        try:
            covered = self.applied_lsn
            self._bytes_since_checkpoint = 0
            await asyncio.get_running_loop().run_in_executor(None, self._db.flush, True)
            self._wal.truncate_before(covered + 1)
        finally:
            self._checkpointing = False

    async def close(self) -> None:
        if self._checkpoint_task is not None:
            await self._checkpoint_task  # it flushes and truncates: let it finish first
        await self._wal.close()
        self._db.flush(True)
        self._wal.truncate_before(self.applied_lsn + 1)
        self._db.close()
