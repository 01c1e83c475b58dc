"""UpdateItem: validate the request into an `UpdateItemRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api import legacy
from partita.api.expressions import modified_attributes
from partita.api.operations import common
from partita.api.operations.common import Expressions
from partita.api.shape import Violations, expect_dict
from partita.common import errors
from partita.control.model import TableRecord


@dataclass(frozen=True)
class UpdateItemRequest:
    table_name: str
    key: dict[str, Any]
    return_values: str  # NONE, ALL_OLD, UPDATED_OLD, ALL_NEW or UPDATED_NEW
    return_old_on_failure: bool
    capacity: str
    expressions: Expressions
    modified: frozenset[str]  # top-level attributes the update writes

    def check_key_untouched(self, record: TableRecord) -> None:
        """DynamoDB refuses an update of a key attribute (it would move the item)."""
        for element in (record.partition_key, record.sort_key):
            if element is not None and element.name in self.modified:
                raise errors.validation(
                    common.INVALID
                    + f"Cannot update attribute {element.name}. This attribute is part of the key"
                )


def validate(body: Any) -> UpdateItemRequest:
    body = expect_dict(body)
    v = Violations()
    shared = common.write_preamble(body, v, "Key", "key")
    update = common.string(body, "UpdateExpression")
    v.raise_if_any()
    name, key, capacity = shared.table_name, shared.target, shared.capacity
    return_values, on_failure = shared.return_values, shared.return_old_on_failure
    condition, names = shared.condition, shared.names
    assert name is not None and key is not None

    common.check_expression_params(
        body, ["UpdateExpression", "ConditionExpression"], ["AttributeUpdates", "Expected"]
    )
    key = common.check_item_values(key)
    values = common.values_map(body.get("ExpressionAttributeValues"))
    if body.get("AttributeUpdates") is not None or body.get("Expected") is not None:
        expressions, modified = _legacy(body)
    else:
        if body.get("ConditionalOperator") is not None:
            legacy.conditional_operator(body, "Expected")
        expressions = common.resolve(
            Expressions(condition=condition, update=update, names=names, values=values)
        )
        resolved = expressions.resolved.update
        modified = modified_attributes(resolved) if resolved is not None else frozenset()
    return UpdateItemRequest(
        table_name=name,
        key=key,
        return_values=return_values or "NONE",
        return_old_on_failure=on_failure,
        capacity=capacity,
        expressions=expressions,
        modified=modified,
    )


def _legacy(body: dict[str, Any]) -> tuple[Expressions, frozenset[str]]:
    ph = legacy.Placeholders()
    update: str | None = None
    modified: frozenset[str] = frozenset()
    if body.get("AttributeUpdates") is not None:
        update, modified = legacy.attribute_updates(body["AttributeUpdates"], ph)
    condition = None
    if body.get("Expected") is not None:
        condition = legacy.expected(body["Expected"], legacy.conditional_operator(body, "Expected"), ph)
    elif body.get("ConditionalOperator") is not None:
        legacy.conditional_operator(body, "Expected")
    expressions = Expressions(
        condition=condition, update=update, names=ph.names or None, values=ph.values or None, legacy=True
    )
    return common.resolve(expressions), modified
