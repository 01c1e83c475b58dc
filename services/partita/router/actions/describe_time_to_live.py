"""DescribeTimeToLive."""

from __future__ import annotations

from typing import Any

from partita.api.operations import describe_time_to_live
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = describe_time_to_live.validate(body)
    record = ctx.tables.require(name).record
    return {"TimeToLiveDescription": describe_time_to_live.description(record.time_to_live, record.status)}
