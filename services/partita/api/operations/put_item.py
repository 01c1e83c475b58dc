"""PutItem: validate the request into a `PutItemRequest` (expressions resolved)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.item import check_item
from partita.api.operations import common, write_condition
from partita.api.operations.common import Expressions
from partita.api.shape import Violations, expect_dict
from partita.api.values import Item, item_size


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
    assert shared.table_name is not None and shared.target is not None
    plain = write_condition.check_params(body)
    item = check_item(shared.target)  # also refuses an item over 400 KB
    return PutItemRequest(
        table_name=shared.table_name,
        item=item,
        # item_size walks the whole item: only when a ConsumedCapacity needs it.
        size=item_size(item) if shared.capacity != "NONE" else 0,
        return_old=write_condition.return_old(shared.return_values),
        return_old_on_failure=shared.return_old_on_failure,
        capacity=shared.capacity,
        expressions=write_condition.expressions(body, shared, plain),
    )
