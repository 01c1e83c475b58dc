"""PutItem, GetItem, DeleteItem (P1 subset): shape validation of the request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.item import check_item
from partita.api.shape import Violations, expect_dict, expect_type
from partita.api.values import Item
from partita.common import errors

_RETURN_VALUES = ["NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"]
_CAPACITY = ["INDEXES", "TOTAL", "NONE"]


@dataclass(frozen=True)
class PutItemRequest:
    table_name: str
    item: Item
    return_old: bool


@dataclass(frozen=True)
class KeyRequest:
    table_name: str
    key: dict[str, Any]
    return_old: bool = False
    consistent: bool = False


def _common(body: dict[str, Any], v: Violations) -> str:
    name = body.get("TableName")
    v.table_name(name)
    v.enum(body.get("ReturnConsumedCapacity"), "returnConsumedCapacity", _CAPACITY)
    v.enum(body.get("ReturnValues"), "returnValues", _RETURN_VALUES)
    return name  # type: ignore[return-value]


def _return_old(body: dict[str, Any], operation: str) -> bool:
    rv = body.get("ReturnValues") or "NONE"
    if rv not in ("NONE", "ALL_OLD"):
        raise errors.validation(f"ReturnValues can only be ALL_OLD or NONE")
    return rv == "ALL_OLD"


def validate_put(body: Any) -> PutItemRequest:
    body = expect_dict(body)
    v = Violations()
    name = _common(body, v)
    item = body.get("Item")
    v.not_null(item, "item")
    v.raise_if_any()
    return PutItemRequest(name, check_item(item), _return_old(body, "PutItem"))


def validate_get(body: Any) -> KeyRequest:
    body = expect_dict(body)
    v = Violations()
    name = _common(body, v)
    key = body.get("Key")
    v.not_null(key, "key")
    consistent = expect_type(body.get("ConsistentRead"), bool, "a boolean")
    v.raise_if_any()
    return KeyRequest(name, key, consistent=bool(consistent))


def validate_delete(body: Any) -> KeyRequest:
    body = expect_dict(body)
    v = Violations()
    name = _common(body, v)
    key = body.get("Key")
    v.not_null(key, "key")
    v.raise_if_any()
    return KeyRequest(name, key, return_old=_return_old(body, "DeleteItem"))
