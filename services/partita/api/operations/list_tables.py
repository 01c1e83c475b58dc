"""ListTables: page through table names in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.shape import Violations, expect_dict, expect_type

MAX_LIMIT = 100


@dataclass(frozen=True)
class ListTablesRequest:
    limit: int
    exclusive_start: str | None


def validate(body: Any) -> ListTablesRequest:
    body = expect_dict(body)
    v = Violations()
    start = body.get("ExclusiveStartTableName")
    limit = expect_type(body.get("Limit"), int, "a number")
    v.table_name(start, "exclusiveStartTableName", required=False)
    v.at_least(limit, "limit", 1)
    v.at_most(limit, "limit", MAX_LIMIT)
    v.raise_if_any()
    return ListTablesRequest(limit or MAX_LIMIT, start)
