"""PutItem: validate the request into a `PutItemRequest` (expressions resolved)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api import legacy
from partita.api.item import check_item
from partita.api.operations import common
from partita.api.operations.common import Expressions
from partita.api.shape import Violations, expect_dict
from partita.api.values import Item, item_size
from partita.common import errors

# Members that make a write conditional; a request without any skips their checks.
CONDITION_MEMBERS = frozenset(
    {
        "ConditionExpression",
        "ExpressionAttributeNames",
        "ExpressionAttributeValues",
        "Expected",
        "ConditionalOperator",
    }
)


# Not frozen: a frozen dataclass costs a microsecond per request on the hot path.
@dataclass(slots=True)
class PutItemRequest:
    table_name: str
    item: Item
    size: int  # DynamoDB's size of `item` when capacity is asked for, else 0
    return_old: bool
    return_old_on_failure: bool
    capacity: str
    expressions: Expressions


def validate(body: Any) -> PutItemRequest:
    body = expect_dict(body)
    v = Violations()
    shared = common.write_preamble(body, v, "Item", "item")
    v.raise_if_any()
    name, raw_item, capacity = shared.table_name, shared.target, shared.capacity
    return_values, on_failure = shared.return_values, shared.return_old_on_failure
    condition, names = shared.condition, shared.names
    assert name is not None and raw_item is not None

    plain = body.keys().isdisjoint(CONDITION_MEMBERS)
    if not plain:
        common.check_expression_params(body, ["ConditionExpression"], ["Expected"])
    item = check_item(raw_item)  # also refuses an item over 400 KB
    if return_values not in (None, "NONE", "ALL_OLD"):
        raise errors.validation("ReturnValues can only be ALL_OLD or NONE")
    if plain:
        expressions = common.NO_EXPRESSIONS
    else:
        values = common.values_map(body.get("ExpressionAttributeValues"))
        expressions = condition_expressions(body, condition, names, values)
    return PutItemRequest(
        table_name=name,
        item=item,
        # item_size walks the whole item: only when a ConsumedCapacity needs it.
        size=item_size(item) if capacity != "NONE" else 0,
        return_old=return_values == "ALL_OLD",
        return_old_on_failure=on_failure,
        capacity=capacity,
        expressions=expressions,
    )


def condition_expressions(
    body: dict[str, Any], condition: str | None, names: dict[str, str] | None, values: dict[str, Any] | None
) -> Expressions:
    """ConditionExpression, or Expected translated into one; resolved."""
    if body.get("Expected") is not None:
        ph = legacy.Placeholders()
        operator = legacy.conditional_operator(body, "Expected")
        text = legacy.expected(body["Expected"], operator, ph)
        return common.resolve(
            Expressions(condition=text, names=ph.names or None, values=ph.values or None, legacy=True)
        )
    if body.get("ConditionalOperator") is not None:
        legacy.conditional_operator(body, "Expected")
    return common.resolve(Expressions(condition=condition, names=names, values=values))
