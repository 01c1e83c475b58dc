"""The legacy (pre-expression) parameters, validated and translated into expressions.

Older clients still send Expected, AttributeUpdates, KeyConditions, QueryFilter,
ScanFilter, AttributesToGet and ConditionalOperator. Rather than keep a second
evaluator, each is checked with the legacy API's own messages and rewritten as the
equivalent expression over generated placeholders (`#l0`, `:l0`, ...); from then on a
legacy request is evaluated exactly like a modern one.

Semantics that differ from the obvious translation, as observed on DynamoDB (mostly
through ScyllaDB Alternator's tests, which run against DynamoDB too):
- NOT_CONTAINS on a missing attribute is false (so: exists AND NOT contains), while NE
  on a missing attribute is true (as `<>` is);
- `Exists: true` means nothing without `Value`; `Exists: false` is attribute_not_exists;
- ADD of a list appends to the list (the expression ADD has no list form), creating it
  when absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from partita.api.expressions.key_condition import MAX_CONDITIONS
from partita.api.item import check_value
from partita.api.values import AttributeValue, compare, value_type
from partita.common import errors

_INVALID = "One or more parameter values were invalid: "

COMPARISON_OPERATORS = [
    "IN", "NULL", "BETWEEN", "LT", "NOT_CONTAINS", "EQ", "GT", "NOT_NULL", "NE", "LE", "BEGINS_WITH", "GE",
    "CONTAINS",
]  # fmt: skip
# How many values each operator takes: an exact count, or (minimum, None) for "at least".
_ARITY: dict[str, tuple[int, int | None]] = {
    "NULL": (0, 0),
    "NOT_NULL": (0, 0),
    "EQ": (1, 1),
    "NE": (1, 1),
    "LE": (1, 1),
    "LT": (1, 1),
    "GE": (1, 1),
    "GT": (1, 1),
    "CONTAINS": (1, 1),
    "NOT_CONTAINS": (1, 1),
    "BEGINS_WITH": (1, 1),
    "IN": (1, None),
    "BETWEEN": (2, 2),
}
# The value types each operator accepts (DynamoDB refuses the rest before evaluating).
_TYPES: dict[str, frozenset[str]] = {
    "EQ": frozenset({"S", "N", "B", "SS", "NS", "BS", "BOOL", "NULL", "L", "M"}),
    "NE": frozenset({"S", "N", "B", "SS", "NS", "BS", "BOOL", "NULL", "L", "M"}),
    "LE": frozenset({"S", "N", "B"}),
    "LT": frozenset({"S", "N", "B"}),
    "GE": frozenset({"S", "N", "B"}),
    "GT": frozenset({"S", "N", "B"}),
    "CONTAINS": frozenset({"S", "N", "B"}),
    "NOT_CONTAINS": frozenset({"S", "N", "B"}),
    "BEGINS_WITH": frozenset({"S", "B"}),
    "IN": frozenset({"S", "N", "B"}),
    "BETWEEN": frozenset({"S", "N", "B"}),
}
_COMPARATORS = {"EQ": "=", "NE": "<>", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}
# Key conditions can only use operators a range scan can serve.
_KEY_OPERATORS = frozenset({"EQ", "LE", "LT", "GE", "GT", "BEGINS_WITH", "BETWEEN"})


@dataclass
class Placeholders:
    """Generated ExpressionAttributeNames/Values shared by every translated parameter."""

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, AttributeValue] = field(default_factory=dict)
    _by_name: dict[str, str] = field(default_factory=dict)

    def name(self, attribute: str) -> str:
        if not attribute:
            # Named in the legacy parameter's own terms, never through a generated "#l0".
            raise errors.validation(_INVALID + "Empty attribute name")
        placeholder = self._by_name.get(attribute)
        if placeholder is None:
            placeholder = _fresh("#l", self.names)
            self.names[placeholder] = attribute
            self._by_name[attribute] = placeholder
        return placeholder

    def value(self, av: AttributeValue) -> str:
        placeholder = _fresh(":l", self.values)
        self.values[placeholder] = av
        return placeholder


def _fresh(prefix: str, taken: Mapping[str, Any]) -> str:
    # The maps may already hold a request's own placeholders (KeyConditions next to a
    # FilterExpression): never reuse one of those.
    n = len(taken)
    while f"{prefix}{n}" in taken:
        n += 1
    return f"{prefix}{n}"


# --- shape ---------------------------------------------------------------------------------


def _map(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise errors.serialization(f"Unexpected value type in payload: expected {what}")
    return value


def _value_list(value: Any) -> list[AttributeValue] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise errors.serialization("Unexpected value type in payload: expected a list")
    return [check_value(av) for av in value]


def _operator(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise errors.serialization("Unexpected value type in payload: expected a string")
    if value not in COMPARISON_OPERATORS:
        raise errors.constraint_violations(
            [
                f"Value '{value}' at '{where}' failed to satisfy constraint: "
                f"Member must satisfy enum value set: [{', '.join(COMPARISON_OPERATORS)}]"
            ]
        )
    return value


def conditional_operator(body: Mapping[str, Any], legacy_param: str) -> str | None:
    """ConditionalOperator, which only means something next to a legacy condition map."""
    value = body.get("ConditionalOperator")
    if value is None:
        return None
    if not isinstance(value, str):
        raise errors.serialization("Unexpected value type in payload: expected a string")
    if value not in ("AND", "OR"):
        raise errors.constraint_violations(
            [
                f"Value '{value}' at 'conditionalOperator' failed to satisfy constraint: "
                "Member must satisfy enum value set: [OR, AND]"
            ]
        )
    if not body.get(legacy_param):
        raise errors.validation(
            _INVALID + f"ConditionalOperator can only be used when {legacy_param} is present"
        )
    return value


# --- value checks shared by Expected and Condition maps ------------------------------------------


def _check_values(operator: str, values: list[AttributeValue]) -> None:
    low, high = _ARITY[operator]
    if len(values) < low or (high is not None and len(values) > high):
        raise errors.validation(
            _INVALID + f"Invalid number of argument(s) for the {operator} ComparisonOperator"
        )
    if not values:
        return
    first = value_type(values[0])
    if any(value_type(v) != first for v in values):
        raise errors.validation(_INVALID + "AttributeValues inside AttributeValueList must be of same type")
    allowed = _TYPES.get(operator)
    if allowed is not None:
        for v in values:
            if value_type(v) not in allowed:
                raise errors.validation(
                    _INVALID
                    + f"ComparisonOperator {operator} is not valid for {value_type(v)} AttributeValue type"
                )
    if operator == "BETWEEN":
        order = compare(values[0], values[1])
        if order is not None and order > 0:
            raise errors.validation(
                "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"
            )


def _comparison(operator: str, path: str, values: list[AttributeValue], ph: Placeholders) -> str:
    if operator in _COMPARATORS:
        return f"{path} {_COMPARATORS[operator]} {ph.value(values[0])}"
    if operator == "NOT_NULL":
        return f"attribute_exists({path})"
    if operator == "NULL":
        return f"attribute_not_exists({path})"
    if operator == "CONTAINS":
        return f"contains({path}, {ph.value(values[0])})"
    if operator == "NOT_CONTAINS":
        return f"(attribute_exists({path}) AND NOT contains({path}, {ph.value(values[0])}))"
    if operator == "BEGINS_WITH":
        return f"begins_with({path}, {ph.value(values[0])})"
    if operator == "IN":
        return f"{path} IN ({', '.join(ph.value(v) for v in values)})"
    return f"{path} BETWEEN {ph.value(values[0])} AND {ph.value(values[1])}"


def _join(parts: list[str], operator: str | None) -> str | None:
    if not parts:
        return None
    return f" {operator or 'AND'} ".join(parts)


# --- Expected ------------------------------------------------------------------------------------


def expected(raw: Any, operator: str | None, ph: Placeholders) -> str | None:
    """Expected (+ ConditionalOperator) as a ConditionExpression; None when empty."""
    conditions = _map(raw, "a map")
    parts: list[str] = []
    for attribute, condition in conditions.items():
        condition = _map(condition, "an ExpectedAttributeValue structure")
        comparison = _operator(
            condition.get("ComparisonOperator"), f"expected.{attribute}.member.comparisonOperator"
        )
        exists = condition.get("Exists")
        if exists is not None and not isinstance(exists, bool):
            raise errors.serialization("Unexpected value type in payload: expected a boolean")
        value = condition.get("Value")
        value_list = _value_list(condition.get("AttributeValueList"))
        single = check_value(value) if value is not None else None
        where = f"for Attribute: {attribute}"
        if value_list is not None and single is not None:
            raise errors.validation(
                _INVALID + f"Value and AttributeValueList cannot be used together {where}"
            )
        path = ph.name(attribute)
        if comparison is not None:
            if exists is not None:
                raise errors.validation(
                    _INVALID + f"Exists and ComparisonOperator cannot be used together {where}"
                )
            if comparison not in ("NULL", "NOT_NULL") and value_list is None and single is None:
                raise errors.validation(
                    _INVALID
                    + f"Value or AttributeValueList must be used with ComparisonOperator: {comparison} {where}"
                )
            values = value_list if value_list is not None else ([single] if single is not None else [])
            _check_values(comparison, values)
            parts.append(_comparison(comparison, path, values, ph))
        elif value_list is not None:
            raise errors.validation(
                _INVALID + f"AttributeValueList can only be used with a ComparisonOperator {where}"
            )
        elif exists is None or exists:
            if single is None:
                shown = "null" if exists is None else "true"
                raise errors.validation(_INVALID + f"Value must be provided when Exists is {shown} {where}")
            parts.append(f"{path} = {ph.value(single)}")
        else:
            if single is not None:
                raise errors.validation(_INVALID + f"Value cannot be used when Exists is false {where}")
            parts.append(f"attribute_not_exists({path})")
    return _join(parts, operator)


# --- Condition maps: QueryFilter, ScanFilter, KeyConditions --------------------------------------


def _conditions(raw: Any, param: str) -> list[tuple[str, str, list[AttributeValue]]]:
    conditions = _map(raw, "a map")
    where_param = param[0].lower() + param[1:]
    out = []
    for attribute, condition in conditions.items():
        condition = _map(condition, "a Condition structure")
        comparison = _operator(
            condition.get("ComparisonOperator"), f"{where_param}.{attribute}.member.comparisonOperator"
        )
        if comparison is None:
            raise errors.constraint_violations(
                [
                    f"Value null at '{where_param}.{attribute}.member.comparisonOperator' "
                    "failed to satisfy constraint: Member must not be null"
                ]
            )
        values = _value_list(condition.get("AttributeValueList")) or []
        _check_values(comparison, values)
        out.append((attribute, comparison, values))
    return out


def filter_conditions(raw: Any, operator: str | None, param: str, ph: Placeholders) -> str | None:
    """QueryFilter or ScanFilter (+ ConditionalOperator) as a FilterExpression."""
    parts = [_comparison(op, ph.name(attr), values, ph) for attr, op, values in _conditions(raw, param)]
    return _join(parts, operator)


UNINDEXABLE = "Attempted conditional constraint is not an indexable operation"


def key_conditions(raw: Any, ph: Placeholders) -> str:
    """KeyConditions as a KeyConditionExpression (the key schema is checked later). A
    condition whose operator no key can be read by (NULL, CONTAINS, IN...) stands in it
    as a placeholder equality: DynamoDB reports it only once the table, the start key
    and a missing key attribute have been checked (`unindexable`, and
    `query.QueryRequest.key_condition`), as dynalite's recorded tests order them."""
    conditions = _conditions(raw, "KeyConditions")
    # Up to eight for a multi-attribute index key; a table's takes two (key_condition.plan).
    if not 1 <= len(conditions) <= MAX_CONDITIONS:
        raise errors.validation("Conditions can be of length 1 or 2 only")
    parts = []
    for attribute, operator, values in conditions:
        if not indexable(operator):
            parts.append(f"{ph.name(attribute)} = {ph.value({'NULL': True})}")
            continue
        parts.append(_comparison(operator, ph.name(attribute), values, ph))
    return " AND ".join(parts)


def key_operators(raw: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(attribute, ComparisonOperator) of (already checked) KeyConditions."""
    return tuple((name, str(c.get("ComparisonOperator"))) for name, c in raw.items())


def indexable(operator: str) -> bool:
    """Whether a key can be read by a legacy ComparisonOperator."""
    return operator in _KEY_OPERATORS


# --- AttributesToGet and AttributeUpdates ------------------------------------------------------------


def projection(attributes: list[str], ph: Placeholders) -> str:
    """AttributesToGet as a ProjectionExpression."""
    return ", ".join(ph.name(a) for a in attributes)


def attribute_updates(raw: Any, ph: Placeholders) -> tuple[str | None, frozenset[str]]:
    """AttributeUpdates as an UpdateExpression, and the attribute names it touches.

    An empty map updates nothing (the item is still created with its key).
    """
    updates = _map(raw, "a map")
    clauses: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
    for attribute, update in updates.items():
        update = _map(update, "an AttributeValueUpdate structure")
        action = update.get("Action")
        if action is not None and not isinstance(action, str):
            raise errors.serialization("Unexpected value type in payload: expected a string")
        if action is not None and action not in ("ADD", "PUT", "DELETE"):
            raise errors.constraint_violations(
                [
                    f"Value '{action}' at 'attributeUpdates.{attribute}.member.action' failed to satisfy "
                    "constraint: Member must satisfy enum value set: [ADD, PUT, DELETE]"
                ]
            )
        raw_value = update.get("Value")
        value = check_value(raw_value) if raw_value is not None else None
        action = action or "PUT"
        if value is None and action != "DELETE":
            raise errors.validation(
                _INVALID + "Only DELETE action is allowed when no attribute value is specified"
            )
        path = ph.name(attribute)
        if action == "PUT":
            assert value is not None
            clauses["SET"].append(f"{path} = {ph.value(value)}")
        elif action == "DELETE":
            if value is None:
                clauses["REMOVE"].append(path)
                continue
            kind = value_type(value)
            if kind not in ("SS", "NS", "BS"):
                raise errors.validation(
                    _INVALID + f"DELETE action with value is not supported for the type {kind}"
                )
            clauses["DELETE"].append(f"{path} {ph.value(value)}")
        else:
            assert value is not None
            kind = value_type(value)
            if kind not in ("L", "SS", "NS", "BS", "N"):
                raise errors.validation(_INVALID + f"ADD action is not supported for the type {kind}")
            if kind == "L":
                empty = ph.value({"L": []})
                clauses["SET"].append(
                    f"{path} = list_append(if_not_exists({path}, {empty}), {ph.value(value)})"
                )
            else:
                clauses["ADD"].append(f"{path} {ph.value(value)}")
    text = " ".join(f"{clause} {', '.join(parts)}" for clause, parts in clauses.items() if parts)
    return (text or None), frozenset(updates)
