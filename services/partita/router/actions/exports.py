"""ExportTableToPointInTime, DescribeExport, ListExports (`api/operations/exports.py`;
the export itself, a table at a time written to S3: `router/copy_jobs.py`).

DynamoDB exports only a table with point-in-time recovery on, at a time within its
restorable window (`api/point_in_time.py`).
"""

from __future__ import annotations

import time
from typing import Any

from partita.api import point_in_time
from partita.api.operations import exports, imports
from partita.api.shape import expect_dict, expect_type
from partita.common import errors
from partita.common.errors import DynamoError
from partita.control.model import NO_REVISION
from partita.control.store import ImportExportLedger
from partita.router.context import RouterContext
from partita.router.copy_jobs import CopyJobs
from partita.router.describe import table_uuid
from partita.router.table_arns import table_name_of


def _ledger(ctx: RouterContext) -> tuple[ImportExportLedger, CopyJobs]:
    if ctx.imports is None or ctx.copy_jobs is None:
        raise errors.internal_server_error("exports are not served by this router")
    return ctx.imports, ctx.copy_jobs


async def export_table(ctx: RouterContext, body: Any) -> dict[str, Any]:
    request = exports.validate(body)
    arn = str(request["TableArn"])
    name = table_name_of(arn)
    cached = ctx.tables.get(name)
    if cached is None or cached.record.status == "DELETING" or ctx.table_arn(name) != arn:
        raise DynamoError("TableNotFoundException", f"Table not found: {arn}")
    setting = cached.record.point_in_time
    if not setting.enabled:
        raise point_in_time.not_enabled(name)
    ledger, jobs = _ledger(ctx)
    token = request.get("ClientToken")
    now = time.time()
    if token is not None:
        for data, _ in await ledger.list_exports():
            # A token names its export for eight hours, as DynamoDB's does.
            if (
                data["request"].get("ClientToken") == token
                and now - data["started_at"] < exports.TOKEN_SECONDS
            ):
                earlier = exports.ExportRecord.from_json(data)
                if exports.conflicts(request, earlier.request):
                    raise exports.conflict(str(token))
                return {"ExportDescription": earlier.description(table_uuid(earlier.table_id))}
    earliest, latest = point_in_time.window(setting, now)
    at = float(request.get("ExportTime", latest))
    if not earliest <= at <= latest:
        raise exports.invalid_time(earliest, latest)
    export_id = exports.new_export_id(now)
    record = exports.ExportRecord(
        export_id=export_id,
        arn=f"{arn}/export/{export_id}",
        table_name=name,
        table_arn=arn,
        table_id=cached.record.table_id,
        export_time=round(at, 3),
        request=request,
        started_at=round(now, 3),
        claim=jobs.claim(),
    )
    if not await ledger.put_export(export_id, record.to_json(), NO_REVISION):
        raise errors.internal_server_error("export id taken; retry")
    jobs.start_export(export_id)
    return {"ExportDescription": record.description(table_uuid(record.table_id))}


async def describe_export(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = str(expect_dict(body)["ExportArn"])
    ledger, _ = _ledger(ctx)
    export_id = exports.export_id_of(arn)
    found = await ledger.get_export(export_id) if export_id is not None else None
    if found is None or found[0]["arn"] != arn:
        raise exports.export_not_found(arn)
    record = exports.ExportRecord.from_json(found[0])
    return {"ExportDescription": record.description(table_uuid(record.table_id))}


async def list_exports(ctx: RouterContext, body: Any) -> dict[str, Any]:
    body = expect_dict(body)
    ledger, _ = _ledger(ctx)
    records = [exports.ExportRecord.from_json(data) for data, _ in await ledger.list_exports()]
    page, token = imports.ledger_page(
        records,
        lambda r: r.export_id,
        expect_type(body.get("TableArn"), str, "a string"),
        expect_type(body.get("MaxResults"), int, "an integer"),
        expect_type(body.get("NextToken"), str, "a string"),
    )
    out: dict[str, Any] = {"ExportSummaries": [r.summary() for r in page]}
    if token is not None:
        out["NextToken"] = token
    return out
