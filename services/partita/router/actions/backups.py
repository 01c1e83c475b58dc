"""CreateBackup, DescribeBackup, ListBackups, DeleteBackup, RestoreTableFromBackup
(`api/operations/backups.py`; the copies: `router/copy_jobs.py`)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from partita.api.operations import backups
from partita.common import errors
from partita.control.model import BackupInfo, TableRecord, TableSpec
from partita.router import table_copy
from partita.router.actions import table_spec
from partita.router.context import RouterContext
from partita.router.copy_jobs import CopyJobs
from partita.router.describe import (
    created_description,
    global_index_description,
    index_description,
    key_schema,
    table_uuid,
)

# A table this small is read whole before CreateBackup answers, so the backup holds it
# exactly as it was when asked; a larger one is read while the backup is CREATING.
READ_AHEAD_BYTES = 16 * 1024 * 1024


def jobs_of(ctx: RouterContext) -> CopyJobs:
    if ctx.copy_jobs is None:
        raise errors.internal_server_error("backups are not served by this router")
    return ctx.copy_jobs


async def create_backup(ctx: RouterContext, body: Any) -> dict[str, Any]:
    table_name, backup_name = backups.validate_create(body)
    jobs = jobs_of(ctx)
    spec = await table_spec.client_spec(ctx, table_name)
    cached = ctx.tables.get(table_name)
    if spec is None or cached is None or cached.record.status == "DELETING":
        raise backups.table_not_found(table_name)
    if cached.record.status == "CREATING":
        raise backups.table_in_use(f"Table is being created: {table_name}")
    now = time.time()
    info = backups.backup_info(
        spec, ctx.table_arn(table_name), backup_name, jobs.owner, now, jobs.claim_seconds
    )
    snapshot = await table_copy.read_ahead(ctx, table_name, READ_AHEAD_BYTES)
    hidden = backups.hidden_spec(spec, info, now)
    if not await ctx.catalog.create_table_spec(hidden):
        raise errors.internal_server_error("backup id taken; retry")
    await ctx.tables.refresh()
    jobs.start_backup(hidden.name, snapshot)
    return {"BackupDetails": backup_details(info)}


async def describe_backup(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = backups.validate_arn(body)
    spec = await _backup_spec(ctx, arn)
    return {"BackupDescription": await backup_description(ctx, spec)}


async def list_backups(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = backups.validate_list(body)
    infos = [
        c.record.backup
        for c in ctx.tables.hidden.values()
        if c.record.backup and c.record.status != "DELETING"
    ]
    page, last = backups.listed([b for b in infos if b is not None], req)
    out: dict[str, Any] = {"BackupSummaries": [backup_summary(b) for b in page]}
    if last is not None:
        out["LastEvaluatedBackupArn"] = last
    return out


async def delete_backup(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = backups.validate_arn(body)
    spec = await _backup_spec(ctx, arn)
    info = spec.backup
    assert info is not None
    if info.status == "CREATING":
        raise backups.backup_in_use(f"Backup is being created: {arn}")
    if any(c.record.restore and c.record.restore.in_progress and c.record.restore.backup_table == spec.name
           for c in ctx.tables.tables.values()):  # fmt: skip
        raise backups.backup_in_use(f"Backup is being restored: {arn}")
    description = await backup_description(ctx, spec)
    if not await ctx.catalog.replace_table_spec(dataclasses.replace(spec, deleting=True)):
        raise errors.internal_server_error("Backup changed concurrently; retry")
    await ctx.tables.refresh()
    description["BackupDetails"]["BackupStatus"] = "DELETED"
    return {"BackupDescription": description}


async def restore_table_from_backup(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = backups.validate_restore(body)
    jobs = jobs_of(ctx)
    backup = await _backup_spec(ctx, req.backup_arn)
    assert backup.backup is not None
    if backup.backup.status != "AVAILABLE":
        raise backups.backup_in_use(f"Backup is being created: {req.backup_arn}")
    spec = backups.restored_spec(req, backup, jobs.owner, time.time(), jobs.claim_seconds)
    return await restore_into(ctx, spec)


async def restore_into(ctx: RouterContext, spec: TableSpec) -> dict[str, Any]:
    """A restore's new table created (TableAlreadyExistsException if its name is taken)
    and its copy started; the answer of both kinds of restore."""
    if not await ctx.catalog.create_table_spec(spec):
        raise backups.table_already_exists(spec.name)
    await ctx.tables.refresh()
    jobs_of(ctx).start_restore(spec.name)
    record = TableRecord.of(spec, None, [])
    return {"TableDescription": created_description(record, ctx.table_arn(spec.name))}


async def _backup_spec(ctx: RouterContext, arn: str) -> TableSpec:
    name = backups.hidden_table_of(arn)
    spec = await ctx.catalog.get_table_spec(name) if name is not None else None
    if spec is None or spec.backup is None or spec.deleting or spec.backup.arn != arn:
        raise backups.backup_not_found(arn)
    return spec


# --- descriptions ------------------------------------------------------------------------------


def backup_details(info: BackupInfo) -> dict[str, Any]:
    return {
        "BackupArn": info.arn,
        "BackupName": info.backup_name,
        "BackupSizeBytes": info.size_bytes,
        "BackupStatus": info.status,
        "BackupType": "USER",
        "BackupCreationDateTime": info.created_at,
    }


def backup_summary(info: BackupInfo) -> dict[str, Any]:
    source = TableSpec.from_json(info.source)
    return {
        "TableName": source.name,
        "TableId": table_uuid(source.table_id),
        "TableArn": info.source_arn,
        **backup_details(info),
    }


async def backup_description(ctx: RouterContext, spec: TableSpec) -> dict[str, Any]:
    info = spec.backup
    assert info is not None
    source = TableSpec.from_json(info.source)
    record = TableRecord.of(source, None, [])
    details: dict[str, Any] = {
        "TableName": source.name,
        "TableId": table_uuid(source.table_id),
        "TableArn": info.source_arn,
        "TableSizeBytes": info.size_bytes,
        "KeySchema": key_schema(record),
        "TableCreationDateTime": source.created_at,
        "ProvisionedThroughput": {
            "ReadCapacityUnits": source.read_capacity,
            "WriteCapacityUnits": source.write_capacity,
        },
        "ItemCount": info.item_count,
        "BillingMode": source.billing_mode,
    }
    features: dict[str, Any] = {}
    local = [index_description(i, info.source_arn) for i in source.indexes if i.kind == "LOCAL"]
    global_ = [
        global_index_description(record, i, info.source_arn) for i in source.indexes if i.kind == "GLOBAL"
    ]
    if local:
        features["LocalSecondaryIndexes"] = [_feature(i) for i in local]
    if global_:
        features["GlobalSecondaryIndexes"] = [
            {**_feature(i), "ProvisionedThroughput": {k: i["ProvisionedThroughput"][k] for k in _UNITS}}
            for i in global_
        ]
    if source.stream.enabled:
        features["StreamDescription"] = {"StreamEnabled": True, "StreamViewType": source.stream.view_type}
    ttl = source.time_to_live
    features["TimeToLiveDescription"] = {
        "TimeToLiveStatus": ttl.status,
        **({"AttributeName": ttl.attribute_name} if ttl.attribute_name else {}),
    }
    return {
        "BackupDetails": backup_details(info),
        "SourceTableDetails": details,
        "SourceTableFeatureDetails": features,
    }


_UNITS = ("ReadCapacityUnits", "WriteCapacityUnits")


def _feature(index: dict[str, Any]) -> dict[str, Any]:
    return {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
