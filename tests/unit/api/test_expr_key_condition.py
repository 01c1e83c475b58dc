"""KeyConditionExpression: shape checks, schema matching, and the structured result."""

from __future__ import annotations

from typing import Any

import pytest

from partita.api.expressions import KeyCondition, plan_key_condition, resolve_request
from partita.api.expressions.key_condition import plan_multi
from partita.common.errors import DynamoError

VALUES: dict[str, Any] = {":p": {"S": "pk1"}, ":a": {"N": "1"}, ":b": {"N": "5"}, ":s": {"S": "ab"}}


def resolved(expression: str, values: dict[str, Any] | None = None) -> Any:
    used = {k: v for k, v in (values or VALUES).items() if k in expression}
    return resolve_request(key_condition=expression, values=used or None).key_condition


def shape_error(expression: str, values: dict[str, Any] | None = None) -> str:
    with pytest.raises(DynamoError) as info:
        resolved(expression, values)
    return info.value.message


def plan(expression: str, key_types: dict[str, str] | None = None) -> KeyCondition:
    return plan_key_condition(resolved(expression), "p", "c", key_types or {"p": "S", "c": "N"})


# --- structured result ---------------------------------------------------------------------


def test_partition_key_only() -> None:
    assert plan("p = :p") == KeyCondition("p", {"S": "pk1"})


@pytest.mark.parametrize(
    ("expression", "op", "count"),
    [
        ("p = :p AND c = :a", "=", 1),
        ("p = :p AND c < :a", "<", 1),
        ("p = :p AND c <= :a", "<=", 1),
        ("p = :p AND c > :a", ">", 1),
        ("p = :p AND c >= :a", ">=", 1),
        ("p = :p AND c BETWEEN :a AND :b", "BETWEEN", 2),
        ("c = :a AND p = :p", "=", 1),  # any order
        (":p = p AND :a < c", ">", 1),  # value first mirrors the operator
        ("((c >= :a) AND (p = :p))", ">=", 1),  # one level of parentheses is fine
        ("p = :p AnD c BeTwEeN :a aNd :b", "BETWEEN", 2),
    ],
)
def test_sort_key_conditions(expression: str, op: str, count: int) -> None:
    condition = plan(expression)
    assert (condition.partition_key, condition.sort_key, condition.sort_op) == ("p", "c", op)
    assert len(condition.sort_values) == count


def test_begins_with_on_a_string_sort_key() -> None:
    condition = plan("p = :p AND begins_with(c, :s)", {"p": "S", "c": "S"})
    assert condition.sort_op == "begins_with" and condition.sort_values == ({"S": "ab"},)


def test_sort_matches_applies_the_sort_condition() -> None:
    between = plan("p = :p AND c BETWEEN :a AND :b")
    assert [between.sort_matches({"N": str(x)}) for x in (0, 1, 3, 5, 6)] == [False, True, True, True, False]
    assert not between.sort_matches(None)
    prefix = plan("p = :p AND begins_with(c, :s)", {"p": "S", "c": "S"})
    assert prefix.sort_matches({"S": "abc"}) and not prefix.sort_matches({"S": "b"})
    assert plan(":a < c AND p = :p").matches({"p": {"S": "pk1"}, "c": {"N": "2"}})
    assert not plan(":a < c AND p = :p").matches({"p": {"S": "pk2"}, "c": {"N": "2"}})


# --- table-independent checks ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "operator"),
    [
        ("a > b and size(b) > c or a > c", "OR"),
        ("a in (b, size(c), d)", "IN"),
        ("attribute_exists(a)", "attribute_exists"),
        ("contains(a.d, b)", "contains"),
        ("not a > b", "NOT"),
        ("a <> b", "<>"),
    ],
)
def test_operators_a_key_condition_cannot_use(expression: str, operator: str) -> None:
    assert shape_error(expression) == f"Invalid operator used in KeyConditionExpression: {operator}"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (
            ":a between size(b) and size(a) and b > :b",
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: BETWEEN operator must have the key attribute as "
            "its first operand",
        ),
        (
            "begins_with(:s, b) and a > :b",
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: begins_with operator must have the key attribute "
            "as its first operand",
        ),
        ("size(b) > a AND a.b > b AND b > c", "KeyConditionExpressions cannot contain nested operations"),
        ("a between size(b) and size(a)", "KeyConditionExpressions cannot contain nested operations"),
        (
            "b > a.b",
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: Multiple attribute "
            "names used in one condition",
        ),
        (
            "a between b and size(a)",
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: Multiple attribute "
            "names used in one condition",
        ),
        ("b.d > a AND c.d > e.f", "KeyConditionExpressions cannot have conditions on nested attributes"),
        ("b[0] > a", "KeyConditionExpressions cannot have conditions on nested attributes"),
        (
            ":b > :a AND a < :b",
            "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: No key attribute specified",
        ),
        (
            "b > :a AND b < :a and c = :a and d = :a",
            "KeyConditionExpressions must only contain one condition per key",
        ),
        ("p = :p AND p = :p", "KeyConditionExpressions must only contain one condition per key"),
        (
            " and ".join(f"k{i} = :a" for i in range(9)),  # past a multi-attribute key's eight
            "Conditions can be of length 1 or 2 only",
        ),
    ],
)
def test_shape_errors(expression: str, expected: str) -> None:
    assert shape_error(expression) == expected


def test_general_condition_checks_come_first() -> None:
    assert shape_error("attribute_type(a, b)").startswith(
        "Invalid KeyConditionExpression: Incorrect operand type for operator or function; "
        "operator or function: attribute_type"
    )
    assert shape_error("p=:p AND c!=:c", {":p": {"S": "x"}, ":c": {"N": "1"}}).startswith(
        "Invalid KeyConditionExpression: Syntax error;"
    )
    assert shape_error("p = :p AND begins_with(c, :a)").endswith(
        "operator or function: begins_with, operand type: N"
    )


# --- schema checks ------------------------------------------------------------------------


def test_partition_key_must_be_present_and_compared_for_equality() -> None:
    with pytest.raises(DynamoError, match=r": Query condition missed key schema element: p$"):
        plan("c = :a")
    with pytest.raises(DynamoError, match=r": Query key condition not supported$"):
        plan("p < :p")


def test_a_table_key_takes_two_conditions_at_most() -> None:
    with pytest.raises(DynamoError, match=r": Conditions can be of length 1 or 2 only$"):
        plan("p = :p AND c = :a AND x = :a")


def test_second_condition_must_be_on_the_sort_key() -> None:
    with pytest.raises(DynamoError, match=r": Query condition missed key schema element: c$"):
        plan("p = :p AND x < :a")
    with pytest.raises(DynamoError, match=r": Query key condition not supported$"):
        plan_key_condition(resolved("p = :p AND x < :a"), "p", None, None)


def test_values_must_match_the_key_types() -> None:
    with pytest.raises(DynamoError, match="Condition parameter type does not match schema type"):
        plan("p = :a")
    with pytest.raises(DynamoError, match="Condition parameter type does not match schema type"):
        plan("p = :p AND c = :s")


# --- multi-attribute index keys -------------------------------------------------------------

HASHES = [("h1", "S"), ("h2", "S")]
RANGES = [("r1", "N"), ("r2", "N")]


def test_a_multi_attribute_condition_takes_every_hash_and_a_leading_run_of_ranges() -> None:
    condition = plan_multi(resolved("h1 = :p AND h2 = :s AND r1 = :a AND r2 < :b"), HASHES, RANGES)
    item = {"h1": {"S": "pk1"}, "h2": {"S": "ab"}, "r1": {"N": "1"}, "r2": {"N": "3"}}
    assert condition.matches(item)
    assert not condition.matches({**item, "r2": {"N": "5"}})
    assert not condition.matches({**item, "h2": {"S": "other"}})
    assert plan_multi(resolved("h1 = :p AND h2 = :s"), HASHES, RANGES).matches({**item, "r1": {"N": "9"}})


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("h1 = :p", ("HASH", "equality", "h2")),
        ("h1 = :p AND h2 > :s", ("HASH", "equality", "h2")),
        ("h1 = :p AND h2 = :s AND r2 = :a", ("RANGE", "equality", "r1")),
        ("h1 = :p AND h2 = :s AND r1 < :a AND r2 = :b", ("RANGE", "r1")),
    ],
)
def test_a_multi_attribute_condition_names_what_it_lacks(expression: str, words: tuple[str, ...]) -> None:
    with pytest.raises(DynamoError) as err:
        plan_multi(resolved(expression), HASHES, RANGES)
    assert all(word in err.value.message for word in words), err.value.message
