"""BatchGetItem: validate the request into a `BatchGetItemRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations import common
from partita.api.operations.common import Expressions
from partita.api.operations.get_item import projection_expressions
from partita.api.shape import Violations, expect_dict
from partita.common import errors

MAX_KEYS = 100
NO_SCHEMA_MATCH = "The provided key element does not match the schema"


@dataclass(frozen=True)
class TableKeys:
    table_name: str
    keys: list[dict[str, Any]]
    consistent: bool
    expressions: Expressions
    raw: dict[str, Any]  # the client's KeysAndAttributes, echoed in UnprocessedKeys


@dataclass(frozen=True)
class BatchGetItemRequest:
    tables: list[TableKeys]
    capacity: str


def validate(body: Any) -> BatchGetItemRequest:
    body = expect_dict(body)
    v = Violations()
    capacity = common.capacity_mode(body, v)
    items = common.request_items(body, v)
    for name, entry in items.items():
        if not isinstance(entry, dict):
            raise errors.serialization(
                "Unexpected value type in payload: expected a KeysAndAttributes structure"
            )
        _table_shape(name, entry, v)
    v.raise_if_any()

    tables = []
    total = 0
    for name, entry in items.items():
        common.check_expression_params(entry, ["ProjectionExpression"], ["AttributesToGet"])
        to_get = entry.get("AttributesToGet")
        common.check_no_duplicate_names(to_get)
        expressions = projection_expressions(
            to_get,
            common.string(entry, "ProjectionExpression"),
            common.names_map(entry.get("ExpressionAttributeNames")),
        )
        keys = []
        for raw_key in entry["Keys"]:
            key = common.attribute_map(raw_key)
            if key is None:  # a null in Keys: a key with no attributes, which no schema matches
                raise errors.validation(NO_SCHEMA_MATCH)
            keys.append(common.check_item_values(key))
            total += 1
            if total > MAX_KEYS:
                raise errors.validation("Too many items requested for the BatchGetItem call")
        tables.append(
            TableKeys(name, keys, bool(common.boolean(entry, "ConsistentRead")), expressions, entry)
        )
    return BatchGetItemRequest(tables, capacity)


def _table_shape(name: str, entry: dict[str, Any], v: Violations) -> None:
    if not common.valid_table_name(name):
        v.add(
            name,
            "requestItems",
            "Map keys must satisfy constraint: [Member must have length less than or equal to 255, "
            "Member must have length greater than or equal to 3, "
            "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+]",
        )
    keys = entry.get("Keys")
    if keys is not None and not isinstance(keys, list):
        raise errors.serialization("Unexpected value type in payload: expected a list")
    where = f"requestItems.{name}.member.keys"
    if v.not_null(keys, where):
        assert keys is not None
        if len(keys) < 1:
            v.add(keys, where, "Member must have length greater than or equal to 1")
        if len(keys) > MAX_KEYS:
            v.add(keys, where, f"Member must have length less than or equal to {MAX_KEYS}")
    common.attributes_to_get(entry, v, f"requestItems.{name}.member.attributesToGet")
    common.boolean(entry, "ConsistentRead")
