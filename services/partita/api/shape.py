"""Request-shape checks with DynamoDB's wording.

DynamoDB reports every shape violation of a request at once:
"2 validation errors detected: Value null at 'tableName' failed to satisfy constraint:
Member must not be null; Value ...". `Violations` collects them in request order and
raises one ValidationException at the end.
"""

from __future__ import annotations

import re
from typing import Any

from partita.common import errors

TABLE_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_.-]+")
# Names already found valid: every request names a table, and most name the same few.
_VALID_TABLE_NAMES: set[str] = set()
_VALID_TABLE_NAMES_MAX = 10_000


# CreateTable without a TableName: DynamoDB's own words, not Coral's "Value null at
# 'tableName'" that the data operations still give (nubo-db's conformance suite, run
# against DynamoDB in 2026).
CREATE_TABLE_NEEDS_NAME = "The parameter 'TableName' is required but was not present in the request"


class Violations:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, value: Any, where: str, constraint: str) -> None:
        self.messages.append(
            f"Value {'null' if value is None else repr_value(value)} at '{where}' "
            f"failed to satisfy constraint: {constraint}"
        )

    def not_null(self, value: Any, where: str) -> bool:
        if value is None:
            self.add(None, where, "Member must not be null")
            return False
        return True

    def table_name(self, value: Any, where: str = "tableName", *, required: bool = True) -> None:
        if value is None:
            if required:
                self.not_null(value, where)
            return
        if not isinstance(value, str):
            raise errors.serialization("Unexpected value type in payload: expected a string")
        if value in _VALID_TABLE_NAMES:
            return
        before = len(self.messages)
        if not TABLE_NAME_PATTERN.fullmatch(value):
            self.add(value, where, "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+")
        if len(value) < 3:
            self.add(value, where, "Member must have length greater than or equal to 3")
        if len(value) > 255:
            self.add(value, where, "Member must have length less than or equal to 255")
        if len(self.messages) == before and len(_VALID_TABLE_NAMES) < _VALID_TABLE_NAMES_MAX:
            _VALID_TABLE_NAMES.add(value)

    def enum(self, value: Any, where: str, allowed: list[str]) -> None:
        if value is not None and value not in allowed:
            self.add(value, where, f"Member must satisfy enum value set: [{', '.join(allowed)}]")

    def at_least(self, value: Any, where: str, minimum: int) -> None:
        if value is not None and value < minimum:
            self.add(value, where, f"Member must have value greater than or equal to {minimum}")

    def at_most(self, value: Any, where: str, maximum: int) -> None:
        if value is not None and value > maximum:
            self.add(value, where, f"Member must have value less than or equal to {maximum}")

    def raise_if_any(self) -> None:
        if self.messages:
            raise errors.constraint_violations(self.messages)


def repr_value(value: Any) -> str:
    if isinstance(value, bool):
        return "'true'" if value else "'false'"
    return f"'{value}'"


def expect_dict(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.serialization("Start of structure or map found where not expected.")
    return body


def expect_type(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
        raise errors.serialization(f"Unexpected value type in payload: expected {what}")
    return value
