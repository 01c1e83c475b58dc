"""ExecuteStatement: one PartiQL statement (`statements`)."""

from __future__ import annotations

from typing import Any

from partita.api.partiql.plan import ReadPlan
from partita.router.actions import statements
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    p = statements.planned(ctx, body["Statement"], body.get("Parameters"))
    if isinstance(p, ReadPlan):
        return await statements.read(ctx, p, body)
    return await statements.write(
        ctx, p, body.get("ReturnConsumedCapacity"), body.get("ReturnValuesOnConditionCheckFailure")
    )
