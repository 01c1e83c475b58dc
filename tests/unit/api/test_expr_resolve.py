"""The resolve pass: placeholders, unused/undefined reporting, operand checks, check order."""

from __future__ import annotations

from typing import Any

import pytest

from partita.api.expressions import ast, resolve_request
from partita.api.expressions.resolve import check_attribute_maps
from partita.common.errors import DynamoError

S = {"S": "x"}
N = {"N": "1"}


def fails(**request: Any) -> str:
    with pytest.raises(DynamoError) as info:
        resolve_request(**request)
    assert info.value.code == "ValidationException"
    return info.value.message


# --- substitution ------------------------------------------------------------------------


def test_names_and_values_are_substituted() -> None:
    r = resolve_request(condition="#a.#b[2] = :v", names={"#a": "x.y", "#b": "z"}, values={":v": S})
    assert isinstance(r.condition, ast.Compare)
    assert r.condition.left == ast.Path(("x.y", "z", 2))
    assert isinstance(r.condition.right, ast.Literal) and r.condition.right.value is S


def test_a_name_standing_for_a_reserved_word_is_fine() -> None:
    resolve_request(update="SET #s = :v", names={"#s": "status"}, values={":v": S})


def test_raw_trees_are_unchanged_by_resolution() -> None:
    first = resolve_request(condition="a = :v", values={":v": S})
    second = resolve_request(condition="a = :v", values={":v": N})
    assert isinstance(first.condition, ast.Compare) and isinstance(second.condition, ast.Compare)
    assert first.condition.right.value is S  # type: ignore[union-attr]
    assert second.condition.right.value is N  # type: ignore[union-attr]


# --- undefined and unused -----------------------------------------------------------------


def test_undefined_name_and_value() -> None:
    assert fails(condition="#a = :v", values={":v": S}) == (
        "Invalid ConditionExpression: An expression attribute name used in the document path is not "
        "defined; attribute name: #a"
    )
    assert fails(update="SET a = :v") == (
        "Invalid UpdateExpression: An expression attribute value used in expression is not defined; "
        "attribute value: :v"
    )


def test_unused_names_and_values_are_judged_over_all_expressions_of_a_request() -> None:
    resolve_request(
        update="SET #a = :v",
        condition="#b = :w",
        names={"#a": "a", "#b": "b"},
        values={":v": S, ":w": S},
    )
    assert fails(update="SET a = :v", condition="b = :v", values={":v": S, ":c": S, ":a": S}) == (
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:c, :a}"
    )
    assert fails(projection="a", names={"#a": "a", "#b": "b"}) == (
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a, #b}"
    )


def test_unused_names_are_reported_before_unused_values() -> None:
    message = fails(update="SET #a = :v", names={"#a": "a", "#b": "b"}, values={":v": S, ":w": S})
    assert message == "Value provided in ExpressionAttributeNames unused in expressions: keys: {#b}"


def test_syntax_errors_of_any_expression_come_before_undefined_names() -> None:
    message = fails(update="SET #x = :v", condition="a b", values={":v": S})
    assert message.startswith("Invalid ConditionExpression: Syntax error")


def test_update_is_checked_before_condition_and_filter_before_projection() -> None:
    assert fails(update="SET a = :u", condition="b = :c").startswith("Invalid UpdateExpression")
    assert fails(filter="a = :f", projection="#p").startswith("Invalid FilterExpression")


def test_per_leaf_order_reports_the_first_faulty_condition() -> None:
    # The distinct-operand error of the first leaf wins over the undefined value later.
    message = fails(condition="a = a AND #a = b AND :views > a", names={"#a": "a"})
    assert message == (
        "Invalid ConditionExpression: The first operand must be distinct from the remaining operands "
        "for this operator or function; operator: =, first operand: [a]"
    )


# --- attribute maps -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "values", "expected"),
    [
        ({}, None, "ExpressionAttributeNames must not be empty"),
        (None, {}, "ExpressionAttributeValues must not be empty"),
        ({"a": "a"}, None, 'ExpressionAttributeNames contains invalid key: Syntax error; key: "a"'),
        ({"#": "a"}, None, 'ExpressionAttributeNames contains invalid key: Syntax error; key: "#"'),
        ({"#a-b": "a"}, None, 'ExpressionAttributeNames contains invalid key: Syntax error; key: "#a-b"'),
        (
            {"#a": ""},
            None,
            "ExpressionAttributeNames contains invalid value: Empty attribute name for key #a",
        ),
        (None, {"b": S}, 'ExpressionAttributeValues contains invalid key: Syntax error; key: "b"'),
        (
            {"#" + "a" * 255: "x"},
            None,
            "ExpressionAttributeNames contains invalid key: The expression attribute map contains a key "
            "that is too long; size of key: 256",
        ),
        (
            None,
            {":" + "a" * 255: S},
            "ExpressionAttributeValues contains invalid key: The expression attribute map contains a key "
            "that is too long;",
        ),
        (
            None,
            {":v": {}},
            "ExpressionAttributeValues contains invalid value: Supplied AttributeValue is empty, must "
            "contain exactly one of the supported datatypes for key :v",
        ),
    ],
)
def test_attribute_map_keys_are_checked(
    names: dict[str, str] | None, values: dict[str, Any] | None, expected: str
) -> None:
    with pytest.raises(DynamoError) as info:
        check_attribute_maps(names, values)
    assert info.value.message == expected


def test_placeholder_keys_of_255_bytes_are_accepted() -> None:
    check_attribute_maps({"#" + "a" * 254: "x", "#_1": "y"}, {":" + "a" * 254: S, ":0": S})


# --- condition operand checks ------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "values", "expected"),
    [
        ("attribute_exists(a, b)", {}, "number of operands: 2"),
        ("begins_with(a)", {}, "operator or function: begins_with, number of operands: 1"),
        ("size(a, b) > c", {}, "operator or function: size, number of operands: 2"),
    ],
)
def test_function_operand_count(expression: str, values: dict[str, Any], expected: str) -> None:
    message = fails(filter=expression, values=values or None)
    assert message.startswith(
        "Invalid FilterExpression: Incorrect number of operands for operator or function;"
    )
    assert message.endswith(expected)


@pytest.mark.parametrize(
    ("expression", "value", "function", "type_name"),
    [
        ("attribute_type(a, :a)", {"N": "1"}, "attribute_type", "N"),
        ("attribute_type(a, size(b))", None, "attribute_type", "N"),
        ("begins_with(a, :a)", {"BOOL": True}, "begins_with", "BOOL"),
        ("begins_with(:a, a)", {"L": []}, "begins_with", "L"),
        ("size(size(a)) > :a", {"N": "1"}, "size", "N"),
        ("size(:a) > a", {"NULL": True}, "size", "NULL"),
        ("a < :a", {"BOOL": True}, "<", "BOOL"),
        (":a >= a", {"SS": ["x"]}, ">=", "SS"),
        ("a BETWEEN :a AND :a", {"M": {}}, "BETWEEN", "M"),
    ],
)
def test_operand_types_known_before_evaluation_are_checked(
    expression: str, value: dict[str, Any] | None, function: str, type_name: str
) -> None:
    message = fails(filter=expression, values={":a": value} if value else None)
    assert message == (
        "Invalid FilterExpression: Incorrect operand type for operator or function; "
        f"operator or function: {function}, operand type: {type_name}"
    )


def test_attribute_type_needs_a_known_type_name() -> None:
    assert fails(condition="attribute_type(a, :t)", values={":t": {"S": "X"}}) == (
        "Invalid ConditionExpression: Invalid attribute type name found; type: X, "
        "valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"
    )
    resolve_request(condition="attribute_type(a, :t)", values={":t": {"S": "SS"}})


def test_attribute_exists_needs_a_path() -> None:
    assert fails(condition="attribute_exists(:a) and a = b", values={":a": S}) == (
        "Invalid ConditionExpression: Operator or function requires a document path; "
        "operator or function: attribute_exists"
    )


def test_equality_accepts_any_type_and_paths_are_never_type_checked() -> None:
    resolve_request(condition="a = :v AND b <> :v AND c > d", values={":v": {"BOOL": True}})


def test_between_bounds_must_share_a_type_and_be_ordered() -> None:
    assert fails(key_condition="a between :b and :a", values={":a": {"S": "a"}, ":b": {"N": "1"}}) == (
        "Invalid KeyConditionExpression: The BETWEEN operator requires same data type for lower and upper "
        "bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:a}"
    )
    assert fails(key_condition="a between :b and :a", values={":a": {"S": "a"}, ":b": {"S": "b"}}) == (
        "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or "
        "equal to lower bound; lower bound operand: AttributeValue: {S:b}, upper bound operand: "
        "AttributeValue: {S:a}"
    )


@pytest.mark.parametrize(
    ("expression", "operator", "path"),
    [
        ("#a <> a", "<>", "[a]"),
        ("contains(ab.bc[1].a, ab.bc[1].#a)", "contains", "[ab, bc, [1], a]"),
        ("begins_with(ab.bc[1].a, ab.bc[1].#a)", "begins_with", "[ab, bc, [1], a]"),
    ],
)
def test_operands_must_be_distinct_paths(expression: str, operator: str, path: str) -> None:
    assert fails(filter=expression, names={"#a": "a"}) == (
        "Invalid FilterExpression: The first operand must be distinct from the remaining operands for "
        f"this operator or function; operator: {operator}, first operand: {path}"
    )


def test_equal_values_need_not_be_distinct() -> None:
    resolve_request(condition=":a = :a", values={":a": S})


# --- update checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "one", "two"),
    [
        ("set d[1] = a, d.b = a, c[1].a = a, #c = if_not_exists(a, a)", "[c, [1], a]", "[c]"),
        ("set c.b.#c = a, c = a, #d = a", "[c, b, c]", "[c]"),
        ("set a = b remove a, #c, #d", "[a]", "[a]"),
        ("set #c[3].#d = a, #c[3] = a", "[c, [3], [3]]", "[c, [3]]"),
        ("remove c, #c.a, #d", "[c]", "[c, a]"),
    ],
)
def test_overlapping_update_paths_are_reported_in_preference_to_conflicts(
    expression: str, one: str, two: str
) -> None:
    assert fails(update=expression, names={"#c": "c", "#d": "[3]"}) == (
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one "
        f"of these paths; path one: {one}, path two: {two}"
    )


def test_map_and_list_steps_on_one_path_conflict() -> None:
    assert fails(update="remove a.#c set a[1] = #d", names={"#c": "c", "#d": "[3]"}) == (
        "Invalid UpdateExpression: Two document paths conflict with each other; must remove or rewrite one "
        "of these paths; path one: [a, c], path two: [a, [1]]"
    )


@pytest.mark.parametrize(
    ("expression", "value", "operator", "type_name"),
    [
        ("delete a.b :a", {"S": "a"}, "DELETE", "STRING"),
        ("add a.b :a", {"NULL": True}, "ADD", "NULL"),
        ("add a.b :a", {"BOOL": False}, "ADD", "BOOLEAN"),
        ("delete a.b :a", {"B": "YQ=="}, "DELETE", "BINARY"),
        ("add a.b :a", {"M": {}}, "ADD", "MAP"),
        ("delete a.b :a", {"L": []}, "DELETE", "LIST"),
        ("delete a.b :a", {"N": "1"}, "DELETE", "NUMBER"),
    ],
)
def test_add_and_delete_operand_types(
    expression: str, value: dict[str, Any], operator: str, type_name: str
) -> None:
    assert fails(update=expression, values={":a": value}) == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; "
        f"operator: {operator}, operand type: {type_name}"
    )


def test_add_accepts_numbers_and_sets_delete_accepts_sets() -> None:
    resolve_request(update="ADD a :n, b :s DELETE c :s", values={":n": N, ":s": {"NS": ["1"]}})


@pytest.mark.parametrize(
    ("expression", "function", "type_name"),
    [
        ("set a = list_append(:s, a)", "list_append", "S"),
        ("set a = a + :s", "+", "S"),
        ("set a = :b - a", "-", "BOOL"),
    ],
)
def test_set_function_operand_types(expression: str, function: str, type_name: str) -> None:
    assert fails(update=expression, values={":s": S, ":b": {"BOOL": True}}) == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; "
        f"operator or function: {function}, operand type: {type_name}"
    )


def test_if_not_exists_needs_a_path_and_two_operands() -> None:
    assert fails(update="set a = if_not_exists(:a, c)", values={":a": S}) == (
        "Invalid UpdateExpression: Operator or function requires a document path; "
        "operator or function: if_not_exists"
    )
    assert fails(update="set a = if_not_exists(c)") == (
        "Invalid UpdateExpression: Incorrect number of operands for operator or function; "
        "operator or function: if_not_exists, number of operands: 1"
    )


def test_projection_paths_may_not_overlap() -> None:
    assert fails(projection="a, a.b") == (
        "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite "
        "one of these paths; path one: [a], path two: [a, b]"
    )
