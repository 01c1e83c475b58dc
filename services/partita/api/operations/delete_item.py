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
    name = common.string(body, "TableName")
    v.table_name(name)
    key = common.attribute_map(body.get("Key"))
    v.not_null(key, "key")
    capacity = common.capacity_mode(body, v)
    common.collection_metrics(body, v)
    return_values = common.string(body, "ReturnValues")
    v.enum(return_values, "returnValues", common.RETURN_VALUES)
    on_failure = common.return_on_failure(body, v)
    condition = common.string(body, "ConditionExpression")
    names = common.names_map(body.get("ExpressionAttributeNames"))
    v.raise_if_any()
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
