"""DescribeContinuousBackups, UpdateContinuousBackups and RestoreTableToPointInTime
(`api/point_in_time.py`; the restore's copy and undo: `router/copy_jobs.py`)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from partita.api import point_in_time
from partita.api.operations import backups
from partita.common.errors import DynamoError
from partita.control.model import Claim, RestoreInfo, TableSpec
from partita.router.actions import table_spec
from partita.router.actions.backups import jobs_of, restore_into
from partita.router.context import RouterContext


async def describe(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = point_in_time.validate_describe(body)
    table = ctx.tables.tables.get(name)
    if table is None or table.record.status == "DELETING":
        raise point_in_time.table_not_found(name)
    setting = table.record.point_in_time
    return {"ContinuousBackupsDescription": point_in_time.description(setting, time.time())}


async def update(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = point_in_time.validate_update(body)
    now = time.time()

    def edit(spec: TableSpec) -> TableSpec:
        if spec.deleting:  # as DescribeContinuousBackups, a table being deleted is not found
            raise missing()
        return dataclasses.replace(spec, point_in_time=point_in_time.updated(spec.point_in_time, req, now))

    def missing() -> DynamoError:
        return point_in_time.table_not_found(req.table)

    # DynamoDB refuses a table created moments ago (ContinuousBackupsUnavailableException,
    # which clients retry); Partita records the setting at once, CREATING or not, which
    # suits both the clients that retry and those written against emulators that do not.
    spec = await table_spec.change(ctx, req.table, edit, refuse=(), missing=missing)
    return {"ContinuousBackupsDescription": point_in_time.description(spec.point_in_time, now)}


async def restore_table_to_point_in_time(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = point_in_time.validate_restore(body)
    jobs = jobs_of(ctx)
    source = await table_spec.client_spec(ctx, req.source)
    cached = ctx.tables.tables.get(req.source)
    if source is None or source.deleting or cached is None:
        raise point_in_time.table_not_found(req.source)
    if await ctx.catalog.get_table_spec(req.target) is not None:  # told before recovery's absence
        raise backups.table_already_exists(req.target)
    if not source.point_in_time.enabled:
        raise point_in_time.not_enabled(req.source)
    now = time.time()
    at = point_in_time.restore_time(req, source.point_in_time, now)
    restore = RestoreInfo(
        source_backup_arn="",
        source_table_arn=ctx.table_arn(source.name),
        restored_at=round(now, 3),
        backup_table=source.name,
        claim=Claim(jobs.owner, now + jobs.claim_seconds),
        point_in_time=round(at, 3),
        source_table_id=source.table_id,
    )
    return await restore_into(ctx, backups.restored_table(req.target, req.overrides, source, restore, now))
