"""BatchExecuteStatement: up to 25 PartiQL statements, all reads (each a SELECT of one
item by its whole primary key, run as a GetItem) or all writes, run side by side; each
answers with its result or its own error, never failing the others."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from partita.api.partiql import parser
from partita.api.partiql import syntax as s
from partita.api.partiql.plan import WritePlan, batch_get, plan
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import get_item, statements
from partita.router.context import RouterContext

MIXED = "Read and write requests together in the same batch is not supported."
# The error codes of a statement's entry (BatchStatementError), by the exception the
# same request alone would answer with.
_ENTRY_CODES = {
    "ConditionalCheckFailedException": "ConditionalCheckFailed",
    "DuplicateItemException": "DuplicateItem",
    "ValidationException": "ValidationError",
    "ResourceNotFoundException": "ResourceNotFound",
    "ProvisionedThroughputExceededException": "ProvisionedThroughputExceeded",
    "ItemCollectionSizeLimitExceededException": "ItemCollectionSizeLimitExceeded",
    "RequestLimitExceeded": "RequestLimitExceeded",
    "ThrottlingException": "ThrottlingError",
    "TransactionConflictException": "TransactionConflict",
    "AccessDeniedException": "AccessDenied",
}


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    entries: list[dict[str, Any]] = body["Statements"]
    capacity = body.get("ReturnConsumedCapacity")
    parsed: list[s.Statement | DynamoError] = []
    for entry in entries:
        try:
            parsed.append(parser.parse(entry["Statement"], entry.get("Parameters")))
        except DynamoError as exc:
            parsed.append(exc)
    kinds = {isinstance(p, s.Select) for p in parsed if not isinstance(p, DynamoError)}
    if len(kinds) > 1:
        raise errors.validation(MIXED)
    results = await asyncio.gather(
        *(_one(ctx, p, entry, capacity) for p, entry in zip(parsed, entries, strict=True))
    )
    out: dict[str, Any] = {"Responses": [r for r, _ in results]}
    consumed = [c for _, c in results if c is not None]
    if consumed:
        out["ConsumedCapacity"] = _by_table(consumed)
    return out


async def _one(
    ctx: RouterContext, parsed: s.Statement | DynamoError, entry: dict[str, Any], capacity: str | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A statement's response entry and the capacity it consumed. As DynamoDB answers,
    an entry names its table once the statement has run, whatever the outcome, and not
    when it was refused before (parse and translation errors)."""
    try:
        if isinstance(parsed, DynamoError):
            raise parsed
        table = parsed.source.table
        key = statements.key_schema(ctx, table)
        request = batch_get(parsed, key) if isinstance(parsed, s.Select) else plan(parsed, key)
    except DynamoError as exc:
        return {"Error": _entry_error(exc)}, None
    try:
        if isinstance(request, dict):
            if entry.get("ConsistentRead") is not None:
                request["ConsistentRead"] = entry["ConsistentRead"]
            if capacity is not None:
                request["ReturnConsumedCapacity"] = capacity
            answer = await get_item.run(ctx, request)
            got = orjson.loads(answer) if isinstance(answer, bytes) else answer
            out = {"TableName": table}
            if "Item" in got:
                out["Item"] = got["Item"]
            return out, got.get("ConsumedCapacity")
        assert isinstance(request, WritePlan)
        # A batch member's ReturnValuesOnConditionCheckFailure is taken but changes nothing.
        written = await statements.write(ctx, request, capacity)
        out = {"TableName": table}
        if written["Items"]:
            out["Item"] = written["Items"][0]
        return out, written.get("ConsumedCapacity")
    except DynamoError as exc:
        return {"Error": _entry_error(exc), "TableName": table}, None


def _entry_error(exc: DynamoError) -> dict[str, str]:
    return {"Code": _ENTRY_CODES.get(exc.code, "InternalServerError"), "Message": exc.message}


def _by_table(consumed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The statements' ConsumedCapacity, one entry per table."""
    tables: dict[str, list[dict[str, Any]]] = {}
    for c in consumed:
        tables.setdefault(c["TableName"], []).append(c)
    return [statements.summed(each) for each in tables.values()]
