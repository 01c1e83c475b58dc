"""DeleteItem: validate the request into a `DeleteItemRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations import common
from partita.api.operations.common import Expressions
from partita.api.operations.put_item import CONDITION_MEMBERS, condition_expressions
from partita.api.shape import Violations, expect_dict
from partita.common import errors


# Not frozen: a frozen dataclass costs a microsecond per request on the hot path.
@dataclass(slots=True)
class DeleteItemRequest:
    table_name: str
    key: dict[str, Any]
    return_old: bool
    return_old_on_failure: bool
    capacity: str
    expressions: Expressions


def validate(body: Any) -> DeleteItemRequest:
    body = expect_dict(body)
    v = Violations()
    shared = common.write_preamble(body, v, "Key", "key")
    v.raise_if_any()
    name, key, capacity = shared.table_name, shared.target, shared.capacity
    return_values, on_failure = shared.return_values, shared.return_old_on_failure
    condition, names = shared.condition, shared.names
    assert name is not None and key is not None

    plain = body.keys().isdisjoint(CONDITION_MEMBERS)
    if not plain:
        common.check_expression_params(body, ["ConditionExpression"], ["Expected"])
    key = common.check_item_values(key)
    if return_values not in (None, "NONE", "ALL_OLD"):
        raise errors.validation("ReturnValues can only be ALL_OLD or NONE")
    if plain:
        expressions = common.NO_EXPRESSIONS
    else:
        values = common.values_map(body.get("ExpressionAttributeValues"))
        expressions = condition_expressions(body, condition, names, values)
    return DeleteItemRequest(
        table_name=name,
        key=key,
        return_old=return_values == "ALL_OLD",
        return_old_on_failure=on_failure,
        capacity=capacity,
        expressions=expressions,
    )
