"""DeleteItem: validate the request into a `DeleteItemRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations import common, write_condition
from partita.api.operations.common import Expressions
from partita.api.shape import Violations, expect_dict


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
    assert shared.table_name is not None and shared.target is not None
    plain = write_condition.check_params(body)
    return DeleteItemRequest(
        table_name=shared.table_name,
        key=common.check_item_values(shared.target),
        return_old=write_condition.return_old(shared.return_values),
        return_old_on_failure=shared.return_old_on_failure,
        capacity=shared.capacity,
        expressions=write_condition.expressions(body, shared, plain),
    )
