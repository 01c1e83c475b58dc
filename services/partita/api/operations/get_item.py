"""GetItem: validate the request into a `GetItemRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api import legacy
from partita.api.operations import common
from partita.api.operations.common import Expressions
from partita.api.shape import Violations, expect_dict


# Not frozen: a frozen dataclass costs a microsecond per request on the hot path.
@dataclass(slots=True)
class GetItemRequest:
    table_name: str
    key: dict[str, Any]
    consistent: bool
    capacity: str
    expressions: Expressions


def validate(body: Any) -> GetItemRequest:
    body = expect_dict(body)
    v = Violations()
    name = common.string(body, "TableName")
    v.table_name(name)
    key = common.attribute_map(body.get("Key"))
    v.not_null(key, "key")
    capacity = common.capacity_mode(body, v)
    consistent = common.boolean(body, "ConsistentRead")
    to_get = common.attributes_to_get(body, v)
    projection = common.string(body, "ProjectionExpression")
    names = common.names_map(body.get("ExpressionAttributeNames"))
    v.raise_if_any()
    assert name is not None and key is not None

    plain = to_get is None and projection is None and names is None
    if not plain:
        common.check_expression_params(body, ["ProjectionExpression"], ["AttributesToGet"])
    key = common.check_item_values(key)
    if plain:  # the common GetItem: nothing to resolve
        return GetItemRequest(name, key, bool(consistent), capacity, common.NO_EXPRESSIONS)
    common.check_no_duplicate_names(to_get)
    return GetItemRequest(
        name, key, bool(consistent), capacity, projection_expressions(to_get, projection, names)
    )


def projection_expressions(
    to_get: list[str] | None, projection: str | None, names: dict[str, str] | None
) -> Expressions:
    """ProjectionExpression, or AttributesToGet translated into one; resolved."""
    if to_get is not None:
        ph = legacy.Placeholders()
        return common.resolve(
            Expressions(projection=legacy.projection(to_get, ph), names=ph.names, legacy=True)
        )
    return common.resolve(Expressions(projection=projection, names=names))
