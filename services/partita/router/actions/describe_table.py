"""DescribeTable."""

from __future__ import annotations

from typing import Any

from partita.api.operations import table_name_only
from partita.router.context import RouterContext
from partita.router.describe import table_description


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = table_name_only.validate(body)
    record = ctx.tables.require(name).record
    stats = await ctx.tables.stats_of(record.table_id)
    return {"Table": table_description(record, ctx.table_arn(name), stats)}
