"""ListTables: names in order, paged by ExclusiveStartTableName/LastEvaluatedTableName."""

from __future__ import annotations

from typing import Any

from partita.api.operations import list_tables
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = list_tables.validate(body)
    names = sorted(ctx.tables.tables)
    if req.exclusive_start is not None:
        names = [n for n in names if n > req.exclusive_start]
    page = names[: req.limit]
    out: dict[str, Any] = {"TableNames": page}
    if len(names) > req.limit:
        out["LastEvaluatedTableName"] = page[-1]
    return out
