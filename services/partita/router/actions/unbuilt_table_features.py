"""Contributor Insights and Kinesis Data Streams destinations: not built, and answered
as DynamoDB answers a table that uses neither.

Each table reports Contributor Insights DISABLED and no Kinesis destination, which is
the truth; turning either on is refused by name, as CreateTable refuses parameters
Partita does not implement, and a table that does not exist is not found, in the words
LocalStack's recordings of DynamoDB give. The shapes, enums and lengths of the requests
are the service model's (`api/service_model.py`, checked before an action runs).
"""

from __future__ import annotations

from typing import Any

from partita.common import errors
from partita.router.context import RouterContext

NO_INSIGHTS = "Partita does not support CloudWatch Contributor Insights yet"
NO_KINESIS = "Partita does not support Kinesis Data Streams destinations yet"


def _table(ctx: RouterContext, body: dict[str, Any]) -> str:
    name: str = body["TableName"]
    table = ctx.tables.tables.get(name)
    if table is None or table.record.status == "DELETING":
        raise errors.table_not_found(name)
    index = body.get("IndexName")
    if index is not None and all(i.name != index for i in table.record.indexes):
        raise errors.resource_not_found(f"Requested resource not found: Index: {index} not found")
    return name


def _disabled(name: str, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"TableName": name}
    if body.get("IndexName") is not None:
        out["IndexName"] = body["IndexName"]
    out["ContributorInsightsStatus"] = "DISABLED"
    return out


async def describe_contributor_insights(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    return _disabled(_table(ctx, body), body)


async def update_contributor_insights(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    name = _table(ctx, body)
    if body["ContributorInsightsAction"] == "ENABLE":
        raise errors.validation(NO_INSIGHTS)
    return _disabled(name, body)  # already off: turning it off changes nothing


async def list_contributor_insights(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    # Only tables and indexes with Contributor Insights are listed: none.
    if body.get("TableName") is not None:
        _table(ctx, body)
    return {"ContributorInsightsSummaries": []}


async def describe_kinesis_streaming_destination(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    return {"TableName": _table(ctx, body), "KinesisDataStreamDestinations": []}


async def enable_kinesis_streaming_destination(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    _table(ctx, body)
    raise errors.validation(NO_KINESIS)


async def update_kinesis_streaming_destination(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    name = _table(ctx, body)
    settings = body.get("UpdateKinesisStreamingConfiguration")
    if not isinstance(settings, dict) or all(v is None for v in settings.values()):
        raise errors.validation(
            "Streaming destination cannot be updated with given parameters: "
            "UpdateKinesisStreamingConfiguration cannot be null or contain only null values"
        )
    # DynamoDB's recorded words, "enable" included, for an update of a stream that is not
    # one of the table's destinations (none is, here).
    raise errors.validation(
        "Table is not in a valid state to enable Kinesis Streaming Destination: No streaming destination "
        f"with streamArn: {body['StreamArn']} found for table with tableName: {name}"
    )


async def disable_kinesis_streaming_destination(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    name = _table(ctx, body)
    raise errors.validation(
        "Table is not in a valid state to disable Kinesis Streaming Destination: No streaming destination "
        f"with streamArn: {body['StreamArn']} found for table with tableName: {name}"
    )
