"""The syntax tree of a PartiQL statement for DynamoDB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

PathElement = str | int  # an attribute name, or a list index


@dataclass(frozen=True, slots=True)
class Path:
    elements: tuple[PathElement, ...]

    @property
    def root(self) -> str:
        first = self.elements[0]
        assert isinstance(first, str)
        return first


@dataclass(frozen=True, slots=True)
class Value:
    """A literal or a bound parameter: an AttributeValue."""

    value: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Size:
    path: Path


Operand = Path | Value | Size


@dataclass(frozen=True, slots=True)
class Comparison:
    op: Literal["=", "<>", "<", "<=", ">", ">="]
    left: Operand
    right: Operand


@dataclass(frozen=True, slots=True)
class Between:
    subject: Operand
    low: Operand
    high: Operand


@dataclass(frozen=True, slots=True)
class In:
    subject: Operand
    options: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Is:
    """`path IS [NOT] MISSING`, or `path IS [NOT] <type>` (NULL, BOOL, STRING, ...) as
    the DynamoDB type it names ("NULL", "BOOL", "S", "N", "B", "M", "L")."""

    path: Path
    what: str
    negated: bool


@dataclass(frozen=True, slots=True)
class Function:
    """A function used as a condition."""

    name: Literal["begins_with", "contains", "attribute_type", "attribute_exists", "attribute_not_exists"]
    args: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class And:
    left: Condition
    right: Condition


@dataclass(frozen=True, slots=True)
class Or:
    left: Condition
    right: Condition


@dataclass(frozen=True, slots=True)
class Not:
    operand: Condition


Condition = Comparison | Between | In | Is | Function | And | Or | Not


@dataclass(frozen=True, slots=True)
class TableRef:
    table: str
    index: str | None = None


@dataclass(frozen=True, slots=True)
class Select:
    projection: tuple[Path, ...] | None  # None: `*`
    source: TableRef
    where: Condition | None
    order_by: tuple[tuple[Path, bool], ...]  # (key, descending)


@dataclass(frozen=True, slots=True)
class Insert:
    source: TableRef
    item: Value  # an M


@dataclass(frozen=True, slots=True)
class Assign:
    """`SET path = value`, `path = operand + operand`, `list_append(...)`,
    `set_add(path, set)` or `set_delete(path, set)`."""

    path: Path
    kind: Literal["value", "+", "-", "list_append", "set_add", "set_delete"]
    args: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Remove:
    path: Path


Returning = Literal["ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"]


@dataclass(frozen=True, slots=True)
class Update:
    source: TableRef
    actions: tuple[Assign | Remove, ...]
    where: Condition
    returning: Returning | None


@dataclass(frozen=True, slots=True)
class Delete:
    source: TableRef
    where: Condition
    returning: Returning | None


Statement = Select | Insert | Update | Delete
