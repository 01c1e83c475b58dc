"""ImportTable, DescribeImport, ListImports (`api/operations/imports.py`; the loading:
`router/copy_jobs.py`)."""

from __future__ import annotations

import time
from typing import Any

from partita.api.operations import imports
from partita.api.shape import expect_dict, expect_type
from partita.common import errors
from partita.control.model import NO_REVISION
from partita.control.store import ImportExportLedger
from partita.router.actions import create_table
from partita.router.context import RouterContext
from partita.router.copy_jobs import CopyJobs
from partita.router.describe import table_uuid


def _ledger(ctx: RouterContext) -> tuple[ImportExportLedger, CopyJobs]:
    if ctx.imports is None or ctx.copy_jobs is None:
        raise errors.internal_server_error("imports are not served by this router")
    return ctx.imports, ctx.copy_jobs


async def import_table(ctx: RouterContext, body: Any) -> dict[str, Any]:
    request, table = imports.validate(body)
    ledger, jobs = _ledger(ctx)
    token = request.get("ClientToken")
    if token is not None:
        for data, _ in await ledger.list_imports():
            if data["request"].get("ClientToken") == token:  # the same request again
                record = imports.ImportRecord.from_json(data)
                return {"ImportTableDescription": record.description(table_uuid(record.table_id))}
    now = time.time()
    import_id = imports.new_import_id(now)
    table_arn = ctx.table_arn(table.table_name)
    arn = f"{table_arn}/import/{import_id}"
    spec = await create_table.create(ctx, table, importing=arn)
    record = imports.ImportRecord(
        import_id=import_id,
        arn=arn,
        table_name=spec.name,
        table_arn=table_arn,
        table_id=spec.table_id,
        request=request,
        started_at=round(now, 3),
        claim=jobs.claim(),
    )
    if not await ledger.put_import(import_id, record.to_json(), NO_REVISION):
        raise errors.internal_server_error("import id taken; retry")
    jobs.start_import(import_id)
    return {"ImportTableDescription": record.description(table_uuid(record.table_id))}


async def describe_import(ctx: RouterContext, body: Any) -> dict[str, Any]:
    arn = str(expect_dict(body)["ImportArn"])
    ledger, _ = _ledger(ctx)
    import_id = imports.import_id_of(arn)
    found = await ledger.get_import(import_id) if import_id is not None else None
    if found is None or found[0]["arn"] != arn:
        raise imports.import_not_found(arn)
    record = imports.ImportRecord.from_json(found[0])
    return {"ImportTableDescription": record.description(table_uuid(record.table_id))}


async def list_imports(ctx: RouterContext, body: Any) -> dict[str, Any]:
    body = expect_dict(body)
    ledger, _ = _ledger(ctx)
    records = [imports.ImportRecord.from_json(data) for data, _ in await ledger.list_imports()]
    page, token = imports.ledger_page(
        records,
        lambda r: r.import_id,
        expect_type(body.get("TableArn"), str, "a string"),
        expect_type(body.get("PageSize"), int, "an integer"),
        expect_type(body.get("NextToken"), str, "a string"),
    )
    out: dict[str, Any] = {"ImportSummaryList": [r.summary() for r in page]}
    if token is not None:
        out["NextToken"] = token
    return out
