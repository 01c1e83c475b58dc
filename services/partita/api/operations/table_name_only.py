"""DescribeTable and DeleteTable: requests that name one table."""

from __future__ import annotations

from typing import Any

from partita.api.shape import Violations, expect_dict


def validate(body: Any) -> str:
    body = expect_dict(body)
    v = Violations()
    name = body.get("TableName")
    v.table_name(name)
    v.raise_if_any()
    assert isinstance(name, str)
    return name
