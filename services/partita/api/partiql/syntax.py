"""The syntax tree of a PartiQL statement for DynamoDB.

Conditions, operands and update actions are the expression tree's own nodes
(`api.expressions.ast`), resolved: paths hold attribute names and values are
`Literal`s. `IS MISSING` is `attribute_not_exists`, `IS <type>` is `attribute_type`,
`set_add`/`set_delete` are ADD/DELETE actions: a statement's WHERE and SET are what an
expression says, so the planner prints them as one (`plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from partita.api.expressions import ast


@dataclass(frozen=True, slots=True)
class TableRef:
    table: str
    index: str | None = None


@dataclass(frozen=True, slots=True)
class Select:
    projection: tuple[ast.Path, ...] | None  # None: `*`
    source: TableRef
    where: ast.Condition | None
    order_by: tuple[tuple[ast.Path, bool], ...]  # (key, descending)


@dataclass(frozen=True, slots=True)
class Insert:
    source: TableRef
    item: dict[str, Any]  # the item's attributes


Returning = Literal["ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"]


@dataclass(frozen=True, slots=True)
class Update:
    source: TableRef
    actions: tuple[ast.UpdateAction, ...]  # in the order written
    where: ast.Condition
    returning: Returning | None


@dataclass(frozen=True, slots=True)
class Delete:
    source: TableRef
    where: ast.Condition
    returning: Returning | None


Statement = Select | Insert | Update | Delete
