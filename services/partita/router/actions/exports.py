"""ExportTableToPointInTime, DescribeExport, ListExports.

DynamoDB exports only a table with point-in-time recovery on; one without it is refused
as DynamoDB refuses it (`api/point_in_time.py`). Writing an export to S3 is not built
yet, so one with recovery on is refused by name: there is never an export to describe
or list.
"""

from __future__ import annotations

from typing import Any

from partita.api import point_in_time
from partita.api.shape import expect_dict
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.context import RouterContext
from partita.router.table_arns import table_name_of


async def export_table(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = str(expect_dict(body)["TableArn"])
    name = table_name_of(arn)
    cached = ctx.tables.get(name)
    if cached is None or cached.record.status == "DELETING" or ctx.table_arn(name) != arn:
        raise DynamoError("TableNotFoundException", f"Table not found: {arn}")
    if not cached.record.point_in_time.enabled:
        raise point_in_time.not_enabled(name)
    raise errors.validation("Partita does not support exports to S3 yet")


async def describe_export(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = str(expect_dict(body)["ExportArn"])
    raise DynamoError("ExportNotFoundException", f"Export not found: {arn}")


async def list_exports(ctx: RouterContext, body: Any) -> dict[str, Any]:
    expect_dict(body)
    return {"ExportSummaries": []}
