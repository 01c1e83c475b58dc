"""KeyConditionExpression: what a Query may ask of the key, as a structured range.

DynamoDB parses a key condition with the general condition grammar and then narrows
it in two steps, which this module mirrors:

* `check_shape` - independent of the table (DynamoDB checks it before it even looks the
  table up): only `=`, `<`, `<=`, `>`, `>=`, BETWEEN and begins_with, joined by AND,
  each comparing one top-level attribute with values, one condition per attribute, at
  most eight conditions (two for a table's key, checked by `plan`);
* `plan` - against the key schema: an equality on the partition key and optionally one
  condition on the sort key, with values of the schema's types. The result is a
  `KeyCondition` the storage layer turns into a range scan.
* `plan_multi` - against a global index's multi-attribute key (DynamoDB's since November
  2025): an equality on every HASH attribute, and conditions on a leading run of the
  RANGE attributes, equalities but for the last. The result is a `MultiKeyCondition`.

Messages are DynamoDB's as recorded by dynalite's tests (note that several carry no
"Invalid KeyConditionExpression:" prefix).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from partita.api.expressions import ast
from partita.api.values import AttributeValue, Item, b64_bytes, ordered, value_type, values_equal
from partita.common import errors

# Operator seen from the other side: `:v < sk` is `sk > :v`.
_MIRRORED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True, slots=True)
class KeyCondition:
    """A Query's key condition: partition key equality and an optional sort-key condition.

    `sort_op` is one of "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with" (None when
    only the partition key is constrained); `sort_values` holds one value, or two for
    BETWEEN (low, high).
    """

    partition_key: str
    partition_value: AttributeValue
    sort_key: str | None = None
    sort_op: str | None = None
    sort_values: tuple[AttributeValue, ...] = ()

    def sort_matches(self, value: AttributeValue | None) -> bool:
        """Whether a sort-key value satisfies the sort condition (True if there is none)."""
        op = self.sort_op
        if op is None:
            return True
        if value is None:
            return False
        bound = self.sort_values[0]
        if op == "begins_with":
            if "S" in value and "S" in bound:
                return bool(value["S"].startswith(bound["S"]))
            if "B" in value and "B" in bound:
                return b64_bytes(value["B"]).startswith(b64_bytes(bound["B"]))
            return False
        if op != "BETWEEN":
            return ordered(value, op, bound)
        return ordered(value, ">=", bound) and ordered(value, "<=", self.sort_values[1])

    def matches(self, item: Item) -> bool:
        """Whether an item's key attributes satisfy the whole key condition."""
        partition = item.get(self.partition_key)
        if partition is None or not values_equal(partition, self.partition_value):
            return False
        if self.sort_key is None:
            return True
        return self.sort_matches(item.get(self.sort_key))


def check_shape(condition: ast.Condition) -> None:
    """The table-independent restrictions on a resolved key condition."""
    for operator in _operators(condition):
        raise errors.validation(f"Invalid operator used in KeyConditionExpression: {operator}")
    seen: set[str] = set()
    leaves = list(_leaves(condition))
    for leaf in leaves:
        name = _key_attribute(leaf)
        if name in seen:
            raise errors.validation("KeyConditionExpressions must only contain one condition per key")
        seen.add(name)
    if len(leaves) > MAX_CONDITIONS:
        raise errors.validation(_TOO_MANY)


# A multi-attribute global index key has up to four HASH and four RANGE attributes, so
# a key condition may have up to eight terms; a table's or single-attribute index's key,
# two (checked when the key schema is known).
MAX_CONDITIONS = 8
_TOO_MANY = "Conditions can be of length 1 or 2 only"


def plan(
    condition: ast.Condition,
    partition_key: str,
    sort_key: str | None = None,
    key_types: Mapping[str, str] | None = None,
) -> KeyCondition:
    """Match a resolved, shape-checked key condition to the key schema.

    `key_types` maps key attribute names to their declared types ("S", "N", "B"); when
    given, values of another type are rejected as DynamoDB does.
    """
    by_key: dict[str, ast.Condition] = {}
    for leaf in _leaves(condition):
        by_key[_key_attribute(leaf)] = leaf
    if len(by_key) > 2:
        raise errors.validation(_TOO_MANY)
    partition = by_key.pop(partition_key, None)
    if partition is None:
        raise errors.validation(f"Query condition missed key schema element: {partition_key}")
    for name in by_key:
        if name != sort_key:
            if sort_key is None:
                raise errors.validation("Query key condition not supported")
            raise errors.validation(f"Query condition missed key schema element: {sort_key}")
    if not (isinstance(partition, ast.Compare) and partition.op == "="):
        raise errors.validation("Query key condition not supported")
    partition_value = _values(partition)[0]
    _check_type(partition_value, partition_key, key_types)
    sort = by_key.get(sort_key) if sort_key is not None else None
    if sort is None:
        return KeyCondition(partition_key, partition_value)
    values = _values(sort)
    for value in values:
        _check_type(value, sort_key, key_types)  # type: ignore[arg-type]  # sort is not None
    return KeyCondition(partition_key, partition_value, sort_key, _sort_op(sort), values)


def _sort_op(leaf: ast.Condition) -> str:
    """A sort key condition's operator, as seen from the key (`:v < sk` is `sk > :v`)."""
    if isinstance(leaf, ast.Compare):
        return leaf.op if isinstance(leaf.left, ast.Path) else _MIRRORED[leaf.op]
    return "BETWEEN" if isinstance(leaf, ast.Between) else "begins_with"


def _check_type(value: AttributeValue, key: str, key_types: Mapping[str, str] | None) -> None:
    if key_types is not None and key in key_types and value_type(value) != key_types[key]:
        raise errors.validation(
            "One or more parameter values were invalid: Condition parameter type does not match schema type"
        )


def _operators(node: ast.Condition) -> Iterator[str]:
    """Operators a key condition may not use, outermost first."""
    if isinstance(node, ast.Or):
        yield "OR"
    elif isinstance(node, ast.Not):
        yield "NOT"
    elif isinstance(node, ast.In):
        yield "IN"
    elif isinstance(node, ast.Compare) and node.op == "<>":
        yield "<>"
    elif isinstance(node, ast.FunctionCall) and node.name != "begins_with":
        yield node.name
    elif isinstance(node, ast.And):
        yield from _operators(node.left)
        yield from _operators(node.right)


def _leaves(node: ast.Condition) -> Iterator[ast.Condition]:
    if isinstance(node, ast.And):
        yield from _leaves(node.left)
        yield from _leaves(node.right)
    else:
        yield node


def _operands(leaf: ast.Condition) -> tuple[ast.Operand, ...]:
    if isinstance(leaf, ast.Compare):
        return (leaf.left, leaf.right)
    if isinstance(leaf, ast.Between):
        return (leaf.operand, leaf.low, leaf.high)
    assert isinstance(leaf, ast.FunctionCall)
    return leaf.args


# DynamoDB's words as captured in October 2025 (moto's AWS-verified
# test_query_unused_attribute_name), the expression's name given twice; dynalite's older
# recordings lack the first "Invalid KeyConditionExpression: ".
_INVALID_CONDITION = "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: "


def _key_attribute(leaf: ast.Condition) -> str:
    """The one top-level attribute a leaf condition constrains, checking its shape."""
    operands = _operands(leaf)
    if isinstance(leaf, (ast.Between, ast.FunctionCall)) and not isinstance(operands[0], ast.Path):
        operator = "BETWEEN" if isinstance(leaf, ast.Between) else "begins_with"
        raise errors.validation(
            f"{_INVALID_CONDITION}{operator} operator must have the key attribute as its first operand"
        )
    key: ast.Path | None = None
    for operand in operands:
        if isinstance(operand, ast.FunctionCall):
            raise errors.validation("KeyConditionExpressions cannot contain nested operations")
        if isinstance(operand, ast.Path):
            if key is not None:
                raise errors.validation(f"{_INVALID_CONDITION}Multiple attribute names used in one condition")
            if len(operand.elements) > 1:
                raise errors.validation("KeyConditionExpressions cannot have conditions on nested attributes")
            key = operand
    if key is None:
        raise errors.validation(f"{_INVALID_CONDITION}No key attribute specified")
    name = key.elements[0]
    assert isinstance(name, str)
    return name


def _values(leaf: ast.Condition) -> tuple[AttributeValue, ...]:
    return tuple(o.value for o in _operands(leaf) if isinstance(o, ast.Literal))


@dataclass(frozen=True, slots=True)
class MultiKeyCondition:
    """A Query's key condition on a multi-attribute index key: equalities on `equal`'s
    attributes (every HASH one, then a leading run of the RANGE ones), and maybe one
    more condition, `last`, on the next RANGE attribute."""

    equal: tuple[tuple[str, AttributeValue], ...]
    last: KeyCondition | None = None

    def matches(self, item: Item) -> bool:
        for name, value in self.equal:
            present = item.get(name)
            if present is None or not values_equal(present, value):
                return False
        return self.last is None or self.last.sort_matches(item.get(self.last.sort_key or ""))


# Not found recorded word for word; ScyllaDB Alternator's test_gsi_composite_keys.py and
# moto's test_dynamodb_multi_attribute_gsi.py (both run against DynamoDB) check that
# they are ValidationExceptions naming HASH or RANGE, "equality" and the attribute.
_NOT_SUPPORTED = "Query key condition not supported: "


def plan_multi(
    condition: ast.Condition, hash_keys: Sequence[tuple[str, str]], range_keys: Sequence[tuple[str, str]]
) -> MultiKeyCondition:
    """Match a resolved, shape-checked key condition to a multi-attribute key; the keys
    are (name, type) in the key schema's order."""
    by_key: dict[str, ast.Condition] = {}
    for leaf in _leaves(condition):
        by_key[_key_attribute(leaf)] = leaf
    types = dict((*hash_keys, *range_keys))
    for name in by_key:
        if name not in types:
            raise errors.validation(f"{_NOT_SUPPORTED}{name} is not a key attribute of the index")
    equal: list[tuple[str, AttributeValue]] = []
    for name, _ in hash_keys:
        given = by_key.get(name)
        if not (isinstance(given, ast.Compare) and given.op == "="):
            raise errors.validation(
                f"{_NOT_SUPPORTED}every HASH key attribute must have an equality condition, and {name} has none"
            )
        equal.append((name, _typed(_values(given)[0], name, types)))
    named = [name for name, _ in range_keys if name in by_key]
    leading = [name for name, _ in range_keys][: len(named)]
    if named != leading:
        missing = next(name for name in leading if name not in by_key)
        raise errors.validation(
            f"{_NOT_SUPPORTED}a condition on a RANGE key attribute needs an equality condition on every "
            f"RANGE key attribute before it, and {missing} has none"
        )
    for name in named[:-1]:
        leaf = by_key[name]
        if not (isinstance(leaf, ast.Compare) and leaf.op == "="):
            raise errors.validation(
                f"{_NOT_SUPPORTED}only the last RANGE key attribute with a condition may have a condition "
                f"other than equality, and {name} is not the last"
            )
        equal.append((name, _typed(_values(leaf)[0], name, types)))
    if not named:
        return MultiKeyCondition(tuple(equal))
    name = named[-1]
    leaf = by_key[name]
    values = tuple(_typed(v, name, types) for v in _values(leaf))
    op = _sort_op(leaf)
    if op == "begins_with" and types[name] == "N":
        raise errors.validation(
            "Invalid KeyConditionExpression: Incorrect operand type for operator or function; "
            "operator or function: begins_with, operand type: N"
        )
    return MultiKeyCondition(tuple(equal), KeyCondition("", {}, name, op, values))


def _typed(value: AttributeValue, name: str, types: Mapping[str, str]) -> AttributeValue:
    _check_type(value, name, types)
    return value
