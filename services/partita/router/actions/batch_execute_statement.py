"""BatchExecuteStatement: up to 25 PartiQL statements, all reads (each a SELECT of one
item by its whole primary key, run as a GetItem) or all writes, run side by side; each
answers with its result or its own error, never failing the others."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from partita.api.partiql import parser
from partita.api.partiql import syntax as s
from partita.api.partiql.plan import WritePlan, batch_get, plan
from partita.api.shape import expect_dict
from partita.api.table_keys import key_of_key
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import get_item, statements
from partita.router.context import RouterContext

MIXED = "Read and write requests together in the same batch is not supported."
DUPLICATES = "Provided list of item keys contains duplicates"
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
    # A null entry is answered as CreateTable's null list members are: not a structure.
    entries: list[dict[str, Any]] = [expect_dict(entry) for entry in body["Statements"]]
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
    prepared = [_prepared(ctx, p) for p in parsed]
    _refuse_duplicates([p for p in prepared if not isinstance(p, DynamoError)])
    results = await asyncio.gather(
        *(_one(ctx, p, entry, capacity) for p, entry in zip(prepared, entries, strict=True))
    )
    out: dict[str, Any] = {"Responses": [r for r, _ in results]}
    consumed = [c for _, c in results if c is not None]
    if consumed:
        out["ConsumedCapacity"] = _by_table(consumed)
    return out


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A statement ready to run: its table, and its GetItem request or write plan."""

    table: str
    request: dict[str, Any] | WritePlan
    # The item's storage key, as BatchGetItem compares keys (numbers by value); None
    # when the key does not fit the schema (the statement then fails when it runs).
    key: bytes | None


def _prepared(ctx: RouterContext, parsed: s.Statement | DynamoError) -> _Prepared | DynamoError:
    if isinstance(parsed, DynamoError):
        return parsed
    try:
        table = parsed.source.table
        schema = statements.key_schema(ctx, table)
        request: dict[str, Any] | WritePlan
        if isinstance(parsed, s.Select):
            request = batch_get(parsed, schema)
            item_key = request["Key"]
        else:
            write = plan(parsed, schema)
            assert isinstance(write, WritePlan)
            request = write
            # An INSERT's key is in its item.
            item_key = write.request.get("Key") or {
                n: v for n, v in write.request["Item"].items() if n in (schema.partition, schema.sort)
            }
    except DynamoError as exc:
        return exc
    return _Prepared(table, request, _storage_key(ctx, table, item_key))


def _storage_key(ctx: RouterContext, table: str, item_key: dict[str, Any]) -> bytes | None:
    cached = ctx.tables.get(table)
    try:
        return key_of_key(cached.record, item_key).storage_key if cached is not None else None
    except DynamoError:
        return None


def _refuse_duplicates(prepared: list[_Prepared]) -> None:
    """One item named twice in a batch (reads too) refuses the whole batch, as
    BatchGetItem and BatchWriteItem do."""
    seen: set[tuple[str, bytes]] = set()
    for one in prepared:
        if one.key is None:
            continue
        if (one.table, one.key) in seen:
            raise errors.validation(DUPLICATES)
        seen.add((one.table, one.key))


async def _one(
    ctx: RouterContext, prepared: _Prepared | DynamoError, entry: dict[str, Any], capacity: str | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A statement's response entry and the capacity it consumed. As DynamoDB answers,
    an entry names its table once the statement has run, whatever the outcome, and not
    when it was refused before (parse and translation errors)."""
    if isinstance(prepared, DynamoError):
        return {"Error": _entry_error(prepared)}, None
    table, request = prepared.table, prepared.request
    try:
        if isinstance(request, dict):
            get = dict(request)
            if entry.get("ConsistentRead") is not None:
                get["ConsistentRead"] = entry["ConsistentRead"]
            if capacity is not None:
                get["ReturnConsumedCapacity"] = capacity
            answer = await get_item.run(ctx, get)
            got = orjson.loads(answer) if isinstance(answer, bytes) else answer
            out = {"TableName": table}
            if "Item" in got:
                out["Item"] = got["Item"]
            return out, got.get("ConsumedCapacity")
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
