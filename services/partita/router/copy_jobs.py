"""The copies behind backups, restores and imports, run by the routers and taken over
when a router dies.

A job is a table spec that says it needs one: a backup's hidden table still CREATING,
or a restored table whose copy is in progress (a point-in-time restore copies its source
table as it is, then undoes what the source's history records since the restore time:
`table_copy.undo_changes`). The router that created it claims it at
once (`Claim`, in the spec, so one compare-and-swap both records the job and claims
it) and renews the claim while it copies; every router looks for jobs whose claim has
expired (its router died) every `SWEEP_SECONDS` and takes them over, copying again from
the start: a copy is a series of puts, so copying twice leaves the same items.

A backup taken over is copied from the table as it is then (later than asked: the
README says so). One whose first router read the whole table before answering
CreateBackup (`snapshot`) writes what it read: the backup holds the table as it was
when asked.

An import's record lives in the import ledger (etcd), not on its table's spec: it
outlives a table its failure dropped. Its claim is kept there the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import orjson

from partita.api import point_in_time
from partita.api.operations import exports, imports
from partita.api.operations.exports import ExportRecord
from partita.api.operations.imports import ImportRecord
from partita.api.values import item_size
from partita.common import config
from partita.common.errors import DynamoError
from partita.control.model import Claim, RestoreInfo, TableRecord, TableSpec
from partita.router import table_copy
from partita.router.context import RouterContext
from partita.router.describe import table_uuid
from partita.router.s3_objects import S3Failure, S3Objects
from partita.router.table_copy import Copied

log = logging.getLogger(__name__)

# A claim holds this long (`partita router --copy-claim-seconds`); renewed when a third
# of it is left. A dead router's copies wait this long for another to take them over.
CLAIM_SECONDS = config.DEFAULT_COPY_CLAIM_SECONDS
SWEEP_SECONDS = 2.0
# How long a job waits for its new table's partitions to be placed.
PLACEMENT_TIMEOUT_SECONDS = 120.0
CAS_ATTEMPTS = 5
# How long after a point-in-time restore's time its copy starts: writes stamped before it
# have reached their partitions by then.
SETTLE_SECONDS = 2.0
# How long a failed import waits for its dropped table to be removed before it reads FAILED.
DROP_WAIT_SECONDS = 30.0
# An export's items are kept in memory up to this many bytes, then on the router's disk.
SPOOL_BYTES = 16 * 1024 * 1024


class CopyJobs:
    """This router's copies, and its sweep for jobs other routers left."""

    def __init__(
        self,
        ctx: RouterContext,
        owner: str,
        clock: Callable[[], float] = time.time,
        claim_seconds: float = CLAIM_SECONDS,
    ) -> None:
        self.ctx = ctx
        self.owner = owner
        self.clock = clock
        self.claim_seconds = claim_seconds
        self.running: dict[str, asyncio.Task[None]] = {}
        self.copied = 0  # jobs finished by this router

    def claim(self) -> Claim:
        return Claim(self.owner, self.clock() + self.claim_seconds)

    def start_backup(self, name: str, snapshot: table_copy.Snapshot | None) -> None:
        self._start(name, lambda: self._backup(name, snapshot))

    def start_restore(self, name: str) -> None:
        self._start(name, lambda: self._restore(name))

    def start_import(self, import_id: str) -> None:
        self._start(f"import/{import_id}", lambda: self._import(import_id))

    def start_export(self, export_id: str) -> None:
        self._start(f"export/{export_id}", lambda: self._export(export_id))

    def _start(self, name: str, job: Callable[[], Any]) -> None:
        task = self.running.get(name)
        if task is None or task.done():
            self.running[name] = asyncio.create_task(self._guarded(name, job))

    async def _guarded(self, name: str, job: Callable[[], Any]) -> None:
        try:
            await job()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the claim lapses, and a sweep tries again
            log.warning("copy for %s stopped: %s", name, exc)

    async def run(self) -> None:
        """Take over the jobs whose routers stopped renewing their claims."""
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("backup job sweep failed: %s", exc)

    async def sweep(self) -> None:
        """Every job is found from the table cache, which every change already reaches:
        a backup's hidden table CREATING, a restore in progress, a table being imported
        (whose import record alone is then read)."""
        self.running = {name: task for name, task in self.running.items() if not task.done()}
        now = self.clock()
        cache = self.ctx.tables
        for cached in [*cache.hidden.values(), *cache.tables.values()]:
            record = cached.record
            if record.name in self.running and not self.running[record.name].done():
                continue
            if record.status == "DELETING":
                continue
            if _orphaned_backup(record, now) and await self._take(record.name):
                self.start_backup(record.name, None)
            elif _orphaned_restore(record, now) and await self._take(record.name):
                self.start_restore(record.name)
            elif record.importing:
                await self._take_import(record, now)
        await self._take_exports(now)

    async def _take_exports(self, now: float) -> None:
        """An export has no table to be found by: the ledger's records are read, and the
        unfinished ones whose claims lapsed are taken over."""
        ledger = self.ctx.imports
        if ledger is None:
            return
        for data, revision in await ledger.list_exports():
            record = ExportRecord.from_json(data)
            task = self.running.get(f"export/{record.export_id}")
            if (
                record.status != "IN_PROGRESS"
                or record.claim.held(now)
                or (task is not None and not task.done())
            ):
                continue
            record.claim = self.claim()
            if await ledger.put_export(record.export_id, record.to_json(), revision):
                self.start_export(record.export_id)

    async def _take_import(self, table: TableRecord, now: float) -> None:
        ledger = self.ctx.imports
        import_id = imports.import_id_of(table.importing)
        if ledger is None or import_id is None:
            return
        task = self.running.get(f"import/{import_id}")
        if task is not None and not task.done():
            return
        found = await ledger.get_import(import_id)
        if found is None or found[0].get("arn") != table.importing:
            # ImportTable creates the table, then the record: a router that died between
            # the two left a table no import will ever load.
            if now > table.created_at + self.claim_seconds:
                await self._drop(table.name, table.importing)
            return
        record = ImportRecord.from_json(found[0])
        if record.status != "IN_PROGRESS" or record.claim.held(now):
            return
        record.claim = self.claim()
        if await ledger.put_import(import_id, record.to_json(), found[1]):
            self.start_import(import_id)

    async def _take(self, name: str) -> bool:
        claim = self.claim()
        now = self.clock()

        def taken(spec: TableSpec) -> TableSpec | None:
            if (
                spec.backup is not None
                and spec.backup.status == "CREATING"
                and not spec.backup.claim.held(now)
            ):
                return dataclasses.replace(spec, backup=dataclasses.replace(spec.backup, claim=claim))
            if spec.restore is not None and spec.restore.in_progress and not spec.restore.claim.held(now):
                return dataclasses.replace(spec, restore=dataclasses.replace(spec.restore, claim=claim))
            return None

        return await self._change(name, taken) is not None

    # --- the jobs ---------------------------------------------------------------------------

    async def _backup(self, name: str, snapshot: table_copy.Snapshot | None) -> None:
        spec = await self._spec(name)
        info = spec.backup
        assert info is not None
        source_spec = TableSpec.from_json(info.source)
        source = source_spec.name
        current = await self.ctx.catalog.get_table_spec(source)
        if snapshot is None and (
            current is None or current.table_id != source_spec.table_id or current.deleting
        ):
            # Its table went before the copy could start (DeleteTable waits for a backup
            # being created, but not for one a dead router left): nothing to back up.
            await self._change(name, lambda s: dataclasses.replace(s, deleting=True) if s.backup else None)
            log.warning("backup %s dropped: its table %s is gone", info.arn, source)
            return
        await self._placed(name)
        renew = self._renewer(name)
        if snapshot is not None:
            done = Copied()
            await table_copy.write_items(self.ctx, name, snapshot.items, done)
            if snapshot.rest is not None:
                done = await table_copy.copy_table(
                    self.ctx, source, name, renew, start=snapshot.rest, done=done
                )
        else:
            done = await table_copy.copy_table(self.ctx, source, name, renew)

        def available(spec: TableSpec) -> TableSpec | None:
            if spec.backup is None or spec.backup.claim.owner != self.owner:
                return None
            ready = dataclasses.replace(
                spec.backup, status="AVAILABLE", item_count=done.items, size_bytes=done.bytes, claim=Claim()
            )
            return dataclasses.replace(spec, backup=ready)

        if await self._change(name, available) is not None:
            self.copied += 1
            log.info("backup %s available: %d items, %d bytes", info.arn, done.items, done.bytes)

    async def _restore(self, name: str) -> None:
        spec = await self._spec(name)
        restore = spec.restore
        assert restore is not None
        await self._placed(name)
        history_ms = None
        if restore.point_in_time is not None:
            history_ms = await self._history_ms(name, restore)
            if history_ms is None:
                return
            # A write its router stamped before the restore time may still be on its way
            # to its leader: the copy reads once every such write has landed.
            await asyncio.sleep(max(0.0, restore.point_in_time + SETTLE_SECONDS - self.clock()))
        await self._placed(restore.backup_table)
        renew = self._renewer(name)
        done = await table_copy.copy_table(self.ctx, restore.backup_table, name, renew)
        if restore.point_in_time is not None and history_ms is not None:
            undone = await table_copy.undo_changes(
                self.ctx, restore.backup_table, name, history_ms, restore.point_in_time, renew
            )
            log.info("table %s: %d items as they were at %.3f", name, undone, restore.point_in_time)

        def finished(spec: TableSpec) -> TableSpec | None:
            if spec.restore is None or spec.restore.claim.owner != self.owner:
                return None
            return dataclasses.replace(
                spec, restore=dataclasses.replace(spec.restore, in_progress=False, claim=Claim())
            )

        if await self._change(name, finished) is not None:
            self.copied += 1
            log.info("table %s restored from %s: %d items", name, restore.source_backup_arn, done.items)

    async def _history_ms(self, name: str, restore: RestoreInfo) -> int | None:
        """The source's history to undo a point-in-time restore's changes from; None (and
        the new table dropped, as nothing can fill it) when the source table is gone or
        its history no longer reaches back to the restore time (recovery turned off)."""
        source = await self.ctx.catalog.get_table_spec(restore.backup_table)
        setting = source.point_in_time if source is not None else None
        if (
            source is None
            or source.deleting
            or source.table_id != restore.source_table_id
            or setting is None
            or not setting.enabled
            or setting.enabled_at is None
            or restore.point_in_time is None
            or setting.enabled_at > restore.point_in_time
        ):
            await self._change(name, lambda s: dataclasses.replace(s, deleting=True) if s.restore else None)
            log.warning("restore of %s dropped: its source's history is gone", name)
            return None
        return point_in_time.history_ms(setting)

    async def _import(self, import_id: str) -> None:
        ledger = self.ctx.imports
        assert ledger is not None
        found = await ledger.get_import(import_id)
        if found is None:
            return
        record, revision = ImportRecord.from_json(found[0]), found[1]
        s3 = S3Objects(self.ctx.settings.region)
        await self._placed(record.table_name)

        async def saved() -> None:
            nonlocal revision
            record.claim = self.claim()
            if not await ledger.put_import(import_id, record.to_json(), revision):
                raise LostClaim(record.arn)
            again = await ledger.get_import(import_id)
            assert again is not None
            revision = again[1]

        try:
            sources = await s3.objects(record.bucket, record.prefix)
        except S3Failure as exc:
            await self._gone(await self._drop(record.table_name, record.arn))
            record.status, record.failure_code, record.failure_message = "FAILED", exc.code, exc.message
            record.ended_at = round(self.clock(), 3)
            await saved()
            return
        table = self.ctx.tables.require_placed(record.table_name).record
        compression = str(record.request.get("InputCompressionType", "NONE"))
        record.processed_bytes = record.processed_items = record.imported_items = record.error_count = 0
        try:
            for source in sorted(sources, key=lambda o: o.key):
                parsed = imports.read_object(
                    await s3.read(record.bucket, source.key), compression, record.request, table
                )
                written = Copied()
                await table_copy.write_items(self.ctx, record.table_name, parsed.items, written)
                record.processed_bytes += source.size
                record.processed_items += len(parsed.items) + parsed.errors
                record.imported_items += written.items
                record.error_count += parsed.errors
                await saved()
        except S3Failure as exc:  # an object listed but not readable: what was written stays
            record.failure_code, record.failure_message = exc.code, exc.message
        await self._imported(record.table_name, record.arn)
        record.status = "COMPLETED" if record.error_count == 0 and record.failure_code is None else "FAILED"
        record.ended_at = round(self.clock(), 3)
        record.claim = Claim()
        if await ledger.put_import(import_id, record.to_json(), revision):
            self.copied += 1
            log.info("import %s %s: %d items", record.arn, record.status, record.imported_items)

    async def _export(self, export_id: str) -> None:
        ledger = self.ctx.imports
        assert ledger is not None
        found = await ledger.get_export(export_id)
        if found is None:
            return
        record, revision = ExportRecord.from_json(found[0]), found[1]

        async def saved() -> None:
            nonlocal revision
            record.claim = self.claim() if record.status == "IN_PROGRESS" else Claim()
            if not await ledger.put_export(export_id, record.to_json(), revision):
                raise LostClaim(record.arn)
            again = await ledger.get_export(export_id)
            assert again is not None
            revision = again[1]

        renewed_at = [self.clock()]

        async def renew(_: Copied) -> None:
            if self.clock() - renewed_at[0] >= self.claim_seconds / 3:
                await saved()
                renewed_at[0] = self.clock()

        try:
            await self._write_export(record, renew)
        except S3Failure as exc:
            record.status, record.failure_code, record.failure_message = "FAILED", exc.code, exc.message
        except ExportUnavailable as exc:
            record.status, record.failure_code, record.failure_message = "FAILED", "UNKNOWN", str(exc)
        record.ended_at = round(self.clock(), 3)
        await saved()
        self.copied += 1
        log.info("export %s %s: %d items", record.arn, record.status, record.item_count)

    async def _write_export(self, record: ExportRecord, renew: Callable[[Copied], Any]) -> None:
        """The table at the export time, written to S3 as DynamoDB lays an export out:
        its items as they are now, spooled to a local file, then those the history says
        changed since the export time left out and their images then added."""
        s3 = S3Objects(self.ctx.settings.region)
        bucket, sse = str(record.request["S3Bucket"]), exports.sse_arguments(record.request)
        await s3.write(bucket, f"{exports.export_root(record.request)}/_started", b"", sse)
        source = await self.ctx.catalog.get_table_spec(record.table_name)
        setting = source.point_in_time if source is not None else None
        if source is None or source.table_id != record.table_id or setting is None or not setting.enabled:
            raise ExportUnavailable(f"point in time recovery of {record.table_name} ended before its export")
        if setting.enabled_at is None or setting.enabled_at > record.export_time:
            raise ExportUnavailable(f"the history of {record.table_name} no longer reaches the export time")
        await self._placed(record.table_name)
        await asyncio.sleep(max(0.0, record.export_time + SETTLE_SECONDS - self.clock()))
        names = self.ctx.tables.require_placed(record.table_name).record.key_names
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            async for page in table_copy.item_pages(self.ctx, record.table_name):
                for item in page:
                    spool.write(
                        orjson.dumps([{n: item[n] for n in names}, item], option=orjson.OPT_SORT_KEYS)
                    )
                    spool.write(b"\n")
                await renew(Copied())
            undo = await table_copy.read_undo(
                self.ctx, record.table_name, point_in_time.history_ms(setting), record.export_time, renew
            )
            spool.seek(0)
            written = await self._write_data(s3, record, sse, _exported_items(spool, undo), renew)
        files_key = f"{exports.export_base(record)}/manifest-files.json"
        files = exports.files_manifest(written)
        ended = self.clock()
        summary_key = f"{exports.export_base(record)}/manifest-summary.json"
        summary = exports.summary_manifest(record, table_uuid(record.table_id), ended, files_key)
        for key, body in ((files_key, files), (summary_key, summary)):
            await s3.write(bucket, key, body, sse)
            await s3.write(bucket, key.removesuffix(".json") + ".md5", exports.md5_text(body), sse)
        record.status, record.manifest = "COMPLETED", summary_key

    async def _write_data(
        self,
        s3: S3Objects,
        record: ExportRecord,
        sse: dict[str, str],
        items: Iterator[dict[str, Any]],
        renew: Callable[[Copied], Any],
    ) -> list[tuple[exports.DataFile, str]]:
        """The items, as gzipped data files of about DATA_FILE_BYTES each; each file
        with its ETag. An export of no items writes one empty file, as DynamoDB does."""
        bucket = str(record.request["S3Bucket"])
        written: list[tuple[exports.DataFile, str]] = []
        lines: list[bytes] = []
        size = 0

        async def flush() -> None:
            nonlocal lines, size
            data = exports.data_file(record, b"".join(lines), len(lines))
            written.append((data, await s3.write(bucket, data.key, data.body, sse)))
            lines, size = [], 0
            await renew(Copied())

        record.item_count = record.billed_bytes = 0
        for item in items:
            line = exports.item_line(item)
            lines.append(line)
            size += len(line)
            record.item_count += 1
            record.billed_bytes += item_size(item)
            if size >= exports.DATA_FILE_BYTES:
                await flush()
        if lines or not written:
            await flush()
        return written

    async def _imported(self, name: str, arn: str) -> None:
        """The table's items are all in: clients see it ACTIVE."""

        def done(spec: TableSpec) -> TableSpec | None:
            return dataclasses.replace(spec, importing="") if spec.importing == arn else None

        await self._change(name, done)

    async def _drop(self, name: str, arn: str) -> TableSpec | None:
        """A failed import's table goes, as DynamoDB drops it; the spec as marked."""

        def dropped(spec: TableSpec) -> TableSpec | None:
            return dataclasses.replace(spec, deleting=True) if spec.importing == arn else None

        return await self._change(name, dropped)

    async def _gone(self, marked: TableSpec | None) -> None:
        """Wait, a bounded time, for the autoadmin to remove a dropped table: DynamoDB's
        ListTables no longer names a failed import's table once the import reads FAILED
        (moto's DynamoDB-verified test_import_from_missing_s3_table)."""
        deadline = self.clock() + DROP_WAIT_SECONDS
        while marked is not None and self.clock() < deadline:
            current = await self.ctx.catalog.get_table_spec(marked.name)
            if current is None or current.table_id != marked.table_id:
                break
            await asyncio.sleep(0.1)
        await self.ctx.tables.refresh("backup")

    # --- the spec, read and changed -------------------------------------------------------------

    def _renewer(self, name: str) -> Callable[[Copied], Any]:
        renewed_at = [self.clock()]

        async def renew(_: Copied) -> None:
            if self.clock() - renewed_at[0] < self.claim_seconds / 3:
                return
            claim = self.claim()

            def renewed(spec: TableSpec) -> TableSpec | None:
                if spec.backup is not None and spec.backup.claim.owner == self.owner:
                    return dataclasses.replace(spec, backup=dataclasses.replace(spec.backup, claim=claim))
                if spec.restore is not None and spec.restore.claim.owner == self.owner:
                    return dataclasses.replace(spec, restore=dataclasses.replace(spec.restore, claim=claim))
                return None

            if await self._change(name, renewed) is None:
                raise LostClaim(name)
            renewed_at[0] = self.clock()

        return renew

    async def _spec(self, name: str) -> TableSpec:
        spec = await self.ctx.catalog.get_table_spec(name)
        if spec is None or spec.deleting:
            raise LostClaim(name)
        return spec

    async def _placed(self, name: str) -> None:
        deadline = self.clock() + PLACEMENT_TIMEOUT_SECONDS
        while True:
            await self.ctx.tables.refresh("backup")
            try:
                self.ctx.tables.require_placed(name)
                return
            except DynamoError:
                if self.clock() > deadline:
                    raise
            await asyncio.sleep(0.2)

    async def _change(self, name: str, edit: Callable[[TableSpec], TableSpec | None]) -> TableSpec | None:
        """`edit` applied to the stored spec by compare-and-swap; None when `edit` declines
        (the job is no longer this router's, or no longer needed) or the spec is gone."""
        for _ in range(CAS_ATTEMPTS):
            spec = await self.ctx.catalog.get_table_spec(name)
            if spec is None or spec.deleting:
                return None
            updated = edit(spec)
            if updated is None:
                return None
            if await self.ctx.catalog.replace_table_spec(updated):
                await self.ctx.tables.refresh("backup")
                return updated
        return None

    async def close(self) -> None:
        for task in self.running.values():
            task.cancel()


def _orphaned_backup(record: TableRecord, now: float) -> bool:
    return (
        record.backup is not None and record.backup.status == "CREATING" and not record.backup.claim.held(now)
    )


def _orphaned_restore(record: TableRecord, now: float) -> bool:
    return record.restore is not None and record.restore.in_progress and not record.restore.claim.held(now)


def _exported_items(spool: IO[bytes], undo: point_in_time.Undo) -> Iterator[dict[str, Any]]:
    """The table at the export time: each spooled item (a line of [key, item]) not changed
    since, then the image at that time of each key changed since, where it had one."""
    for line in spool:
        key, item = orjson.loads(line)
        if orjson.dumps(key, option=orjson.OPT_SORT_KEYS) not in undo.first:
            yield item
    for _, image in undo.images():
        if image is not None:
            yield image


class ExportUnavailable(Exception):
    """The table's history cannot give it at the export time any more."""


class LostClaim(Exception):
    """The job's spec was taken by another router, or deleted: this router stops."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the copy of {name} is no longer this router's")
