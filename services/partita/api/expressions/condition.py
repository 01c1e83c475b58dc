"""Evaluate a resolved condition (ConditionExpression, FilterExpression) against an item.

DynamoDB's semantics: a comparison whose operands are missing or of different types is
simply false, never an error; `<>` is the negation of `=`, so it is true when an
operand is missing. size() of a type without a size (N, BOOL, NULL) yields nothing,
which makes the enclosing comparison false (and `<>` true).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from partita.api.expressions import ast
from partita.api.expressions.paths import get_value
from partita.api.values import (
    AttributeValue,
    Item,
    b64_bytes,
    ordered,
    set_contains,
    value_type,
    values_equal,
)


def evaluate(condition: ast.Condition, item: Item | None) -> bool:
    """Whether `item` (None: no item) satisfies the resolved `condition`."""
    return _EVALUATORS[type(condition)](condition, item)


def operand_value(node: ast.Operand, item: Item | None) -> AttributeValue | None:
    """The value of a resolved operand for `item`, or None when it has none."""
    kind = type(node)
    if kind is ast.Path:
        return get_value(item, node.elements)  # type: ignore[union-attr]
    if kind is ast.Literal:
        return node.value  # type: ignore[union-attr]
    assert isinstance(node, ast.FunctionCall) and node.name == "size"
    return size_of(operand_value(node.args[0], item))


def size_of(value: AttributeValue | None) -> AttributeValue | None:
    """DynamoDB's size(): string length, bytes of binary, members of sets, lists, maps."""
    if value is None:
        return None
    kind = value_type(value)
    inner = value[kind]
    if kind == "S":
        # DynamoDB counts a string in UTF-16 code units (it is a Java service); for the
        # common ASCII case that is the character count.
        size = len(inner) if inner.isascii() else len(inner.encode("utf-16-le")) // 2
    elif kind == "B":
        size = len(b64_bytes(inner))
    elif kind in ("SS", "NS", "BS", "L", "M"):
        size = len(inner)
    else:
        return None
    return {"N": str(size)}


def _compare(node: ast.Compare, item: Item | None) -> bool:
    left = operand_value(node.left, item)
    right = operand_value(node.right, item)
    op = node.op
    if op == "=":
        return left is not None and right is not None and values_equal(left, right)
    if op == "<>":
        return left is None or right is None or not values_equal(left, right)
    return left is not None and right is not None and ordered(left, op, right)


def _between(node: ast.Between, item: Item | None) -> bool:
    value = operand_value(node.operand, item)
    low = operand_value(node.low, item)
    high = operand_value(node.high, item)
    if value is None or low is None or high is None:
        return False
    return ordered(value, ">=", low) and ordered(value, "<=", high)


def _in(node: ast.In, item: Item | None) -> bool:
    value = operand_value(node.operand, item)
    if value is None:
        return False
    for option in node.options:
        candidate = operand_value(option, item)
        if candidate is not None and values_equal(value, candidate):
            return True
    return False


def _and(node: ast.And, item: Item | None) -> bool:
    return evaluate(node.left, item) and evaluate(node.right, item)


def _or(node: ast.Or, item: Item | None) -> bool:
    return evaluate(node.left, item) or evaluate(node.right, item)


def _not(node: ast.Not, item: Item | None) -> bool:
    return not evaluate(node.operand, item)


def _function(node: ast.FunctionCall, item: Item | None) -> bool:
    name = node.name
    args = node.args
    if name == "attribute_exists":
        return operand_value(args[0], item) is not None
    if name == "attribute_not_exists":
        return operand_value(args[0], item) is None
    first = operand_value(args[0], item)
    second = operand_value(args[1], item)
    if first is None or second is None:
        return False
    if name == "attribute_type":
        return second.get("S") == value_type(first)
    if name == "begins_with":
        return begins_with(first, second)
    if name == "contains":
        return contains(first, second)
    raise AssertionError(f"not a condition function: {name}")


def begins_with(value: AttributeValue, prefix: AttributeValue) -> bool:
    """String prefix of a string, or byte prefix of a binary value."""
    if "S" in value and "S" in prefix:
        return bool(value["S"].startswith(prefix["S"]))
    if "B" in value and "B" in prefix:
        return b64_bytes(value["B"]).startswith(b64_bytes(prefix["B"]))
    return False


def contains(value: AttributeValue, operand: AttributeValue) -> bool:
    """Substring of a string or binary, member of a set, or element of a list."""
    kind = value_type(value)
    if kind == "S":
        return "S" in operand and operand["S"] in value["S"]
    if kind == "B":
        return "B" in operand and b64_bytes(operand["B"]) in b64_bytes(value["B"])
    if kind in ("SS", "NS", "BS"):
        return set_contains(value, operand)
    if kind == "L":
        return any(values_equal(element, operand) for element in value["L"])
    return False


_EVALUATORS: dict[type, Callable[[Any, Item | None], bool]] = {
    ast.Compare: _compare,
    ast.Between: _between,
    ast.In: _in,
    ast.And: _and,
    ast.Or: _or,
    ast.Not: _not,
    ast.FunctionCall: _function,
}
