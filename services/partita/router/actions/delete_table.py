"""DeleteTable: mark the spec deleting; nodes drop the data, then the autoadmin removes
the table."""

from __future__ import annotations

import dataclasses
from typing import Any

from partita.api.operations import table_name_only
from partita.common import errors
from partita.control.model import TableRecord, TableSpec
from partita.router.actions import table_spec
from partita.router.context import RouterContext
from partita.router.describe import deleting_description

PROTECTED = (
    "Resource cannot be deleted as it is currently protected against deletion. "
    "Disable deletion protection first."
)


def _deleting(spec: TableSpec) -> TableSpec:
    # Checked in the compare-and-swap: a protection turned on meanwhile holds.
    if spec.deletion_protection:
        raise errors.validation(PROTECTED)
    return dataclasses.replace(spec, deleting=True)


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = table_name_only.validate(body)
    arn = ctx.table_arn(name)
    if any(c.record.backup and c.record.backup.status == "CREATING" and c.record.backup.source_arn == arn
           for c in ctx.tables.hidden.values()):  # fmt: skip
        # DynamoDB does not delete a table while a backup of it is being created.
        raise errors.resource_in_use(f"{table_spec.IN_USE}Table is being backed up: {name}")
    if any(c.record.restore and c.record.restore.in_progress and c.record.restore.point_in_time is not None
           and c.record.restore.backup_table == name for c in ctx.tables.tables.values()):  # fmt: skip
        # A point-in-time restore copies from the table itself, and reads its history.
        raise errors.resource_in_use(f"{table_spec.IN_USE}Table is being restored from: {name}")
    spec = await table_spec.change(
        ctx,
        name,
        _deleting,
        refuse=("CREATING", "UPDATING", "DELETING"),
        missing=lambda: errors.table_not_found(name),
    )
    cached = ctx.tables.get(name)
    record = TableRecord.of(spec, None, list(cached.record.partitions) if cached else [])
    stats = await ctx.tables.stats_of(spec.table_id)  # gone with the table soon after
    return {"TableDescription": deleting_description(record, ctx.table_arn(name), stats)}
