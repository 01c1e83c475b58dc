"""The expression syntax tree: plain frozen dataclasses, no behaviour.

One set of node types serves two stages. The parser produces a *raw* tree: path
elements are the names as written (a `#placeholder` keeps its `#`) and values are
`ValueRef(":name")`. The resolve pass produces a *resolved* tree of the same shape in
which path elements are real attribute names and every `ValueRef` became a `Literal`
carrying its attribute value. Raw trees are cached and shared between requests;
resolved trees belong to one request. Lexically a bare name can never start with `#`,
so in a raw path an element starting with `#` is always a placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PathElement = str | int


@dataclass(frozen=True, slots=True)
class Path:
    """A document path: attribute names (str) and list indexes (int)."""

    elements: tuple[PathElement, ...]


@dataclass(frozen=True, slots=True)
class ValueRef:
    """An `:name` reference into ExpressionAttributeValues (raw trees only)."""

    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Literal:
    """An attribute value substituted for a `ValueRef` (resolved trees only).

    Compared by identity: two literals are the same node only if they are one object,
    which is all the engine needs and avoids deep-comparing large values.
    """

    value: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """`name(args...)`; in a condition it is either an operand (size) or a condition."""

    name: str
    args: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Arithmetic:
    """`left + right` or `left - right`, only as the value of a SET action."""

    op: str
    left: Operand
    right: Operand


Operand = Path | ValueRef | Literal | FunctionCall | Arithmetic

# --- conditions ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compare:
    """`left op right` with op one of = <> < <= > >=."""

    op: str
    left: Operand
    right: Operand


@dataclass(frozen=True, slots=True)
class Between:
    operand: Operand
    low: Operand
    high: Operand


@dataclass(frozen=True, slots=True)
class In:
    operand: Operand
    options: tuple[Operand, ...]


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


# A FunctionCall appears as a condition for the boolean functions (attribute_exists, ...).
Condition = Compare | Between | In | And | Or | Not | FunctionCall

# --- update expressions ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UpdateAction:
    """One action of an UpdateExpression.

    `clause` is SET, REMOVE, ADD or DELETE; `value` is the right-hand side (None for
    REMOVE; a ValueRef/Literal for ADD and DELETE).
    """

    clause: str
    path: Path
    value: Operand | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """Actions in the order they were written (the order DynamoDB reports overlaps in)."""

    actions: tuple[UpdateAction, ...]


# --- projection ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Projection:
    paths: tuple[Path, ...]


def children(node: object) -> tuple[object, ...]:
    """A condition's or operand's direct sub-nodes, in the order they appear in the text.

    Every walk over a tree (paths, function calls, update operands) is this plus what it
    does at each node; paths and literals have no children.
    """
    if isinstance(node, FunctionCall):
        return node.args
    if isinstance(node, (And, Or, Compare, Arithmetic)):
        return (node.left, node.right)
    if isinstance(node, Not):
        return (node.operand,)
    if isinstance(node, Between):
        return (node.operand, node.low, node.high)
    if isinstance(node, In):
        return (node.operand, *node.options)
    return ()
