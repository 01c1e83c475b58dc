"""TransactWriteItems and TransactGetItems: validate the requests (pure).

Each action is validated as the single request it stands for (a Put as a PutItem, an
Update as an UpdateItem, a Delete as a DeleteItem, a ConditionCheck as a conditional
DeleteItem that writes nothing, a Get as a GetItem), so its checks and messages are
those of that request. The model's own constraints (1 to 100 actions, token length)
are checked before, by the service model, as for every operation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from partita.api.operations import common, delete_item, get_item, put_item, update_item
from partita.api.operations.common import Expressions
from partita.api.shape import Violations, expect_dict
from partita.api.values import Item
from partita.common import errors

ActionKind = Literal["put", "update", "delete", "check"]
_MEMBERS = {"Put": "put", "Update": "update", "Delete": "delete", "ConditionCheck": "check"}
# A transaction's request may be at most 4 MB of items (DynamoDB's documented limit).
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
_ONE_OF = "TransactItems can only contain one of Check, Put, Update or Delete"


@dataclass(slots=True)
class WriteAction:
    kind: ActionKind
    table_name: str
    item: Item | None  # a Put's item
    key: dict[str, Any] | None  # the Key of an Update, Delete or ConditionCheck
    size: int  # a Put's item size (DynamoDB's), else 0
    return_old_on_failure: bool
    expressions: Expressions
    return_values: str = "NONE"  # an Update's (always NONE in a transaction)
    modified: frozenset[str] = frozenset()  # top-level attributes an Update writes

    def storage_options(self) -> dict[str, Any]:
        """The single write's storage options (storage/operations.py)."""
        options = self.expressions.storage_body()
        if self.kind == "put":
            options["size"] = self.size
        if self.kind == "update":
            assert self.key is not None
            options["key"] = self.key
        if self.return_old_on_failure:
            options["return_old_on_failure"] = True
        return options


@dataclass(slots=True)
class TransactWriteRequest:
    actions: list[WriteAction]
    capacity: str
    collection_metrics: bool
    token: str | None
    digest: str  # of the actions, to tell a retried request from another with its token


@dataclass(slots=True)
class GetAction:
    table_name: str
    key: dict[str, Any]
    expressions: Expressions = field(default_factory=Expressions)


@dataclass(slots=True)
class TransactGetRequest:
    actions: list[GetAction]
    capacity: str


def validate_write(body: Any) -> TransactWriteRequest:
    body = expect_dict(body)
    v = Violations()
    capacity = common.capacity_mode(body, v)
    common.collection_metrics(body, v)
    v.raise_if_any()
    listed = body.get("TransactItems")
    if not isinstance(listed, list):
        raise errors.validation(_ONE_OF)
    actions = [_write_action(entry) for entry in listed]
    size = sum(action.size for action in actions)
    if size > MAX_TRANSACTION_BYTES:
        # Not found recorded; Alternator's test, run against DynamoDB, matches "size cannot exceed".
        raise errors.validation("Transaction request size cannot exceed 4 MB")
    token = body.get("ClientRequestToken")
    return TransactWriteRequest(
        actions,
        capacity,
        body.get("ReturnItemCollectionMetrics") == "SIZE",
        token if isinstance(token, str) else None,
        hashlib.sha256(orjson.dumps(listed, option=orjson.OPT_SORT_KEYS)).hexdigest(),
    )


def validate_get(body: Any) -> TransactGetRequest:
    body = expect_dict(body)
    v = Violations()
    capacity = common.capacity_mode(body, v)
    v.raise_if_any()
    listed = body.get("TransactItems")
    if not isinstance(listed, list):
        raise errors.validation("TransactItems can only contain Get")
    actions = []
    for entry in listed:
        get = entry.get("Get") if isinstance(entry, dict) else None
        if not isinstance(get, dict):
            raise errors.validation("TransactItems can only contain Get")
        req = get_item.validate(get)
        actions.append(GetAction(req.table_name, req.key, req.expressions))
    return TransactGetRequest(actions, capacity)


def _write_action(entry: Any) -> WriteAction:
    given = [m for m in _MEMBERS if isinstance(entry, dict) and entry.get(m) is not None]
    if len(given) != 1:
        raise errors.validation(_ONE_OF)
    member = given[0]
    request = expect_dict(entry[member])
    # Only ALL_OLD may come back from a failed condition; capacity is reported per table.
    single = {**request, "ReturnConsumedCapacity": "TOTAL"}
    kind: ActionKind = _MEMBERS[member]  # type: ignore[assignment]
    if kind == "put":
        put = put_item.validate(single)
        return WriteAction(
            kind, put.table_name, put.item, None, put.size, put.return_old_on_failure, put.expressions
        )
    if kind == "update":
        update = update_item.validate(single)
        return WriteAction(
            kind,
            update.table_name,
            None,
            update.key,
            0,
            update.return_old_on_failure,
            update.expressions,
            modified=update.modified,
        )
    delete = delete_item.validate(single)
    return WriteAction(
        kind, delete.table_name, None, delete.key, 0, delete.return_old_on_failure, delete.expressions
    )


def canceled(reasons: list[dict[str, Any]]) -> errors.DynamoError:
    """TransactionCanceledException in DynamoDB's words, one reason per action, the
    reasons in the error body (storage nodes and routers both cancel)."""
    codes = ", ".join(reason["Code"] for reason in reasons)
    return errors.from_code(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        {"CancellationReasons": reasons},
    )
