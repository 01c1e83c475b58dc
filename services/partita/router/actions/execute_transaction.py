"""ExecuteTransaction: up to 100 PartiQL statements as one transaction, all reads or all
writes, run as the TransactGetItems or TransactWriteItems they stand for.

Each statement is planned as for ExecuteStatement (`api/partiql/plan.py`): a SELECT of
one item by its whole key is a Get; INSERT a Put that must not find its item, UPDATE an
Update of an existing item, DELETE a Delete. An INSERT whose item exists cancels the
transaction with the reason `DuplicateItem`, as DynamoDB names it.
"""

from __future__ import annotations

from typing import Any

import orjson

from partita.api.operations.transactions import canceled
from partita.api.partiql import parser
from partita.api.partiql import syntax as s
from partita.api.partiql.plan import WritePlan, batch_get, plan
from partita.api.shape import expect_dict
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import statements, transactions
from partita.router.actions.batch_execute_statement import MIXED
from partita.router.context import RouterContext

_MEMBER = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}
# What a transaction's action may carry of its single request's members.
_ACTION_MEMBERS = frozenset(
    {"TableName", "Item", "Key", "UpdateExpression", "ConditionExpression", "ExpressionAttributeNames",
     "ExpressionAttributeValues", "ReturnValuesOnConditionCheckFailure"}
)  # fmt: skip


async def run(ctx: RouterContext, body: Any) -> bytes:
    # A null entry is answered as CreateTable's null list members are: not a structure.
    entries: list[dict[str, Any]] = [expect_dict(entry) for entry in body["TransactStatements"]]
    parsed = [parser.parse(entry["Statement"], entry.get("Parameters")) for entry in entries]
    if len({isinstance(p, s.Select) for p in parsed}) > 1:
        raise errors.validation(MIXED)
    shared = {k: body[k] for k in ("ReturnConsumedCapacity", "ClientRequestToken") if k in body}
    if isinstance(parsed[0], s.Select):
        gets = [{"Get": batch_get(p, statements.key_schema(ctx, p.source.table))} for p in parsed]
        shared.pop("ClientRequestToken", None)
        return await transactions.run_get(ctx, {"TransactItems": gets, **shared})
    writes: list[WritePlan] = []
    for statement in parsed:
        planned = plan(statement, statements.key_schema(ctx, statement.source.table))
        assert isinstance(planned, WritePlan)
        writes.append(planned)
    actions = [
        {_MEMBER[w.operation]: {k: v for k, v in w.request.items() if k in _ACTION_MEMBERS}} for w in writes
    ]
    try:
        answer = await transactions.run_write(ctx, {"TransactItems": actions, **shared})
    except DynamoError as exc:
        raise _duplicates_named(exc, writes) from None
    consumed = orjson.loads(answer).get("ConsumedCapacity")
    # Writes read nothing, and DynamoDB says so with an empty list (LocalStack's recording).
    out: dict[str, Any] = {"Responses": []}
    if consumed is not None:
        out["ConsumedCapacity"] = consumed
    return orjson.dumps(out)


def _duplicates_named(exc: DynamoError, writes: list[WritePlan]) -> DynamoError:
    """An INSERT's failed condition is its item's existence: DuplicateItem."""
    reasons = (exc.extra or {}).get("CancellationReasons")
    if exc.code != "TransactionCanceledException" or not reasons:
        return exc
    named = [
        {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"}
        if write.insert and reason.get("Code") == "ConditionalCheckFailed"
        else reason
        for write, reason in zip(writes, reasons, strict=True)
    ]
    return canceled(named)
