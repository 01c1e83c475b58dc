"""DescribeContinuousBackups and UpdateContinuousBackups (`api/operations/continuous_backups.py`)."""

from __future__ import annotations

from typing import Any

from partita.api.operations import continuous_backups
from partita.router.context import RouterContext


async def describe(ctx: RouterContext, body: Any) -> dict[str, Any]:
    return _answer(ctx, continuous_backups.validate_describe(body))


async def update(ctx: RouterContext, body: Any) -> dict[str, Any]:
    return _answer(ctx, continuous_backups.validate_update(body))


def _answer(ctx: RouterContext, name: str) -> dict[str, Any]:
    table = ctx.tables.tables.get(name)
    if table is None or table.record.status == "DELETING":
        raise continuous_backups.table_not_found(name)
    return {"ContinuousBackupsDescription": continuous_backups.DESCRIPTION}
