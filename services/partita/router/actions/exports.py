"""ExportTableToPointInTime, DescribeExport, ListExports.

DynamoDB exports only a table with point-in-time recovery on, which no Partita table can
have yet (`api/operations/continuous_backups.py`): every export is refused as DynamoDB
refuses one of a table without it, so there is never an export to describe or list.
"""

from __future__ import annotations

from typing import Any

from partita.api.shape import expect_dict
from partita.common.errors import DynamoError
from partita.router.context import RouterContext
from partita.router.table_arns import table_name_of


async def export_table(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = str(expect_dict(body)["TableArn"])
    name = table_name_of(arn)
    cached = ctx.tables.get(name)
    if cached is None or cached.record.status == "DELETING" or ctx.table_arn(name) != arn:
        raise DynamoError("TableNotFoundException", f"Table not found: {arn}")
    raise DynamoError(
        "PointInTimeRecoveryUnavailableException", f"Point in time recovery is not enabled for table '{name}'"
    )


async def describe_export(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = str(expect_dict(body)["ExportArn"])
    raise DynamoError("ExportNotFoundException", f"Export not found: {arn}")


async def list_exports(ctx: RouterContext, body: Any) -> dict[str, Any]:
    expect_dict(body)
    return {"ExportSummaries": []}
