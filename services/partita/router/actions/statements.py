"""PartiQL statements run as the DynamoDB requests they plan (`api.partiql.plan`):
the operations' own actions carry them out, so their checks, capacity and admission
are the same as for the request written out by hand."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import orjson

from partita.api.expressions.ast import Path
from partita.api.expressions.paths import get_value
from partita.api.partiql import parser
from partita.api.partiql.plan import NO_INDEX, KeySchema, ReadPlan, WritePlan, plan
from partita.api.partiql.syntax import Select
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import delete_item, put_item, query, scan, update_item
from partita.router.context import RouterContext

DUPLICATE_ITEM = "Duplicate primary key exists in table"
_INVALID_TOKEN = "Invalid NextToken"
_OTHER_REQUEST = "NextToken does not match request"
_WRITES = {"PutItem": put_item.run, "UpdateItem": update_item.run, "DeleteItem": delete_item.run}
_READS = {"Query": query.run, "Scan": scan.run}


def planned(
    ctx: RouterContext, statement: str, parameters: list[dict[str, Any]] | None
) -> ReadPlan | WritePlan:
    parsed = parser.parse(statement, parameters)
    index = parsed.source.index if isinstance(parsed, Select) else None
    return plan(parsed, key_schema(ctx, parsed.source.table, index))


def key_schema(ctx: RouterContext, table: str, index_name: str | None = None) -> KeySchema:
    """The key attributes of a table the router knows (a statement names no other), or
    of the table's index a SELECT reads."""
    cached = ctx.tables.get(table)
    if cached is None:
        raise errors.resource_not_found()
    record = cached.record
    keys = (record.partition_key, record.sort_key)
    if index_name is not None:
        index = record.index(index_name)
        if index is None:
            raise errors.validation(NO_INDEX)
        keys = (index.partition_key, index.sort_key)
    partition, sort = keys
    return KeySchema(partition.name, sort.name if sort is not None else None)


async def write(
    ctx: RouterContext, p: WritePlan, capacity: str | None, on_failure: str | None = None
) -> dict[str, Any]:
    request = dict(p.request)
    if capacity is not None:
        request["ReturnConsumedCapacity"] = capacity
    if on_failure is not None:
        request["ReturnValuesOnConditionCheckFailure"] = on_failure
    try:
        answer = _decoded(await _WRITES[p.operation](ctx, request))
    except DynamoError as exc:
        if p.insert and exc.code == "ConditionalCheckFailedException":
            raise errors.from_code("DuplicateItemException", DUPLICATE_ITEM) from None
        raise
    out: dict[str, Any] = {"Items": [answer["Attributes"]] if p.returning and "Attributes" in answer else []}
    if "ConsumedCapacity" in answer:
        out["ConsumedCapacity"] = answer["ConsumedCapacity"]
    return out


async def read(ctx: RouterContext, p: ReadPlan, body: dict[str, Any]) -> dict[str, Any]:
    """One page: the plan's requests in order from where NextToken left off, until
    Limit items have been evaluated or a request stops at its page's end. A token
    holds where to go on and the request it belongs to (its statement and parameters)."""
    request_id = _request_id(body)
    at, start = _resume(body.get("NextToken"), len(p.requests), request_id)
    limit = body.get("Limit")
    items: list[Any] = []
    consumed: list[dict[str, Any]] = []
    out: dict[str, Any] = {}
    while at < len(p.requests):
        request = dict(p.requests[at])
        for name in ("ConsistentRead", "ReturnConsumedCapacity"):
            if name in body:
                request[name] = body[name]
        if limit is not None:
            request["Limit"] = limit
        if start is not None:
            request["ExclusiveStartKey"] = start
        answer = _decoded(await _READS[p.operation](ctx, request))
        page = answer.get("Items", [])
        items.extend(page if p.labels is None else [_labelled(item, p.labels) for item in page])
        if "ConsumedCapacity" in answer:
            consumed.append(answer["ConsumedCapacity"])
        if limit is not None:
            limit -= answer.get("ScannedCount", 0)
        last = answer.get("LastEvaluatedKey")
        if last is not None:
            out["NextToken"] = _token(at, last, request_id)
            break
        at, start = at + 1, None
        if limit is not None and limit <= 0 and at < len(p.requests):
            out["NextToken"] = _token(at, None, request_id)
            break
    out["Items"] = items
    if consumed:
        out["ConsumedCapacity"] = summed(consumed)
    return out


def _decoded(answer: dict[str, Any] | bytes) -> dict[str, Any]:
    return orjson.loads(answer) if isinstance(answer, bytes) else answer


def _request_id(body: dict[str, Any]) -> str:
    """What a NextToken must have been given for: the statement and its parameters."""
    digest = hashlib.blake2b(orjson.dumps([body["Statement"], body.get("Parameters")]), digest_size=12)
    return digest.hexdigest()


def _token(at: int, last: dict[str, Any] | None, request_id: str) -> str:
    return base64.b64encode(orjson.dumps({"for": request_id, "at": at, "start": last})).decode()


def _resume(token: Any, count: int, request_id: str) -> tuple[int, dict[str, Any] | None]:
    if token is None:
        return 0, None
    try:
        state = orjson.loads(base64.b64decode(str(token), validate=True))
        owner, at, start = state["for"], state["at"], state["start"]
    except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise errors.validation(_INVALID_TOKEN) from None
    if not isinstance(at, int) or not (start is None or isinstance(start, dict)):
        raise errors.validation(_INVALID_TOKEN)
    if owner != request_id or not 0 <= at < count:
        raise errors.validation(_OTHER_REQUEST)
    return at, start


def _labelled(item: dict[str, Any], labels: tuple[tuple[Path, str], ...]) -> dict[str, Any]:
    """An item projected as PartiQL names its values: each path's value (when the item
    has it) under its label."""
    found = ((label, get_value(item, path.elements)) for path, label in labels)
    return {label: value for label, value in found if value is not None}


def summed(consumed: list[dict[str, Any]]) -> dict[str, Any]:
    """The ConsumedCapacity of several requests on one table, as one."""
    out = dict(consumed[0])
    for more in consumed[1:]:
        for name in ("CapacityUnits", "ReadCapacityUnits", "WriteCapacityUnits"):
            if name in more:
                out[name] = out.get(name, 0) + more[name]
        if "Table" in more and "Table" in out:
            out["Table"] = {k: out["Table"].get(k, 0) + v for k, v in more["Table"].items()}
    return out
