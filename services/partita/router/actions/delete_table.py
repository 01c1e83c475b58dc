"""DeleteTable: mark the spec deleting; nodes drop the data, then the autoadmin removes
the table."""

from __future__ import annotations

import dataclasses
from typing import Any

from partita.api.operations import table_name_only
from partita.common import errors
from partita.control.model import TableRecord
from partita.router.actions import table_spec
from partita.router.context import RouterContext
from partita.router.describe import deleting_description


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = table_name_only.validate(body)
    spec = await table_spec.change(
        ctx,
        name,
        lambda spec: dataclasses.replace(spec, deleting=True),
        refuse=("CREATING", "UPDATING", "DELETING"),
        missing=lambda: errors.table_not_found(name),
    )
    cached = ctx.tables.get(name)
    record = TableRecord.of(spec, None, list(cached.record.partitions) if cached else [])
    stats = await ctx.tables.stats_of(spec.table_id)  # gone with the table soon after
    return {"TableDescription": deleting_description(record, ctx.table_arn(name), stats)}
