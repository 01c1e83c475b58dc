"""Parsing: grammar, precedence, DynamoDB's syntax-error messages and text-only checks."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.api.expressions import ast, parser
from partita.api.expressions.parser import parse_condition, parse_projection, parse_update
from partita.api.expressions.printer import to_text
from partita.api.expressions.reserved_words import RESERVED_WORDS, is_reserved
from partita.common.errors import DynamoError

P = ast.Path
V = ast.ValueRef


def message(call: object, *args: str) -> str:
    with pytest.raises(DynamoError) as info:
        call(*args)  # type: ignore[operator]
    assert info.value.code == "ValidationException"
    return info.value.message


# --- grammar --------------------------------------------------------------------------


def test_not_binds_tighter_than_and_which_binds_tighter_than_or() -> None:
    tree = parse_condition("NOT a = :a AND b = :b OR c = :c")
    a = ast.Compare("=", P(("a",)), V(":a"))
    b = ast.Compare("=", P(("b",)), V(":b"))
    c = ast.Compare("=", P(("c",)), V(":c"))
    assert tree == ast.Or(ast.And(ast.Not(a), b), c)


def test_and_and_or_associate_to_the_left() -> None:
    tree = parse_condition("a = :a OR b = :b OR c = :c")
    assert isinstance(tree, ast.Or) and isinstance(tree.left, ast.Or)


def test_parentheses_override_precedence() -> None:
    tree = parse_condition("a = :a AND (b = :b OR c = :c)")
    assert isinstance(tree, ast.And) and isinstance(tree.right, ast.Or)


def test_keywords_are_case_insensitive_but_function_names_are_not() -> None:
    tree = parse_condition("a BeTwEeN :x aNd :y AnD b iN (:z)")
    assert isinstance(tree, ast.And)
    assert message(parse_condition, "BEGINS_WITH(a, :x)") == (
        "Invalid ConditionExpression: Invalid function name; function: BEGINS_WITH"
    )


def test_nested_paths_with_names_indexes_and_placeholders() -> None:
    tree = parse_condition("a.#b[3].c[0][1] = :v")
    assert isinstance(tree, ast.Compare)
    assert tree.left == P(("a", "#b", 3, "c", 0, 1))


def test_parenthesised_operands_are_allowed() -> None:
    assert parse_condition("(a) = (:v)") == ast.Compare("=", P(("a",)), V(":v"))
    assert parse_condition("(a)between(:l)and(:h)") == ast.Between(P(("a",)), V(":l"), V(":h"))


def test_in_takes_a_parenthesised_list() -> None:
    tree = parse_condition("a IN (:x, :y, b)")
    assert tree == ast.In(P(("a",)), (V(":x"), V(":y"), P(("b",))))


def test_size_is_an_operand_and_boolean_functions_are_conditions() -> None:
    tree = parse_condition("size(a) > :n AND attribute_exists(b)")
    assert tree == ast.And(
        ast.Compare(">", ast.FunctionCall("size", (P(("a",)),)), V(":n")),
        ast.FunctionCall("attribute_exists", (P(("b",)),)),
    )


def test_update_clauses_in_any_order_and_case() -> None:
    tree = parse_update("remove x set a = :v, b = list_append(b, :l) add n :one delete s :s")
    assert [a.clause for a in tree.actions] == ["REMOVE", "SET", "SET", "ADD", "DELETE"]


def test_set_arithmetic_and_functions() -> None:
    tree = parse_update("SET a = if_not_exists(a, :zero) + :one, b = (c - :d)")
    first, second = tree.actions
    assert first.value == ast.Arithmetic(
        "+", ast.FunctionCall("if_not_exists", (P(("a",)), V(":zero"))), V(":one")
    )
    assert second.value == ast.Arithmetic("-", P(("c",)), V(":d"))


def test_projection_is_a_list_of_paths() -> None:
    assert parse_projection("a, b.c[2], #d") == ast.Projection((P(("a",)), P(("b", "c", 2)), P(("#d",))))


def test_whitespace_is_ignored() -> None:
    assert parse_update("  set   b=:val1  ") == parse_update("SET b = :val1")


# --- syntax errors: the token and the text around it ------------------------------------


@pytest.mark.parametrize(
    ("expression", "token", "near"),
    [
        ("a b", "b", "a b"),  # token, its predecessor and successor
        ("a,", ",", "a,"),
        ("!!!", "!", "!!"),
        ("a[-1] = :v", "-", "[-1"),
        ("contains (themes, :theme", "<EOF>", ":theme"),
        ("attribute_type()", ")", "()"),
        ("a > 4", "4", "> 4"),
        ("ü > a", "ü", "ü >"),
        ("a = :v AND", "<EOF>", "AND"),
        ("b[:a] > a", ":a", "[:a]"),
        ("size(a).b > a", ".", ").b"),
    ],
)
def test_condition_syntax_error_names_token_and_neighbours(expression: str, token: str, near: str) -> None:
    assert message(parse_condition, expression) == (
        f'Invalid ConditionExpression: Syntax error; token: "{token}", near: "{near}"'
    )


@pytest.mark.parametrize(
    ("expression", "token", "near"),
    [
        ("SET _123 = :v", "_", "SET _123"),  # names must start with a letter
        ("SET path = VALUE 1", "1", "VALUE 1"),
        ("set a", "<EOF>", "a"),
        ("set a=set", "set", "=set"),
        ("remove a = b", "=", "a = b"),
        ("set a = b + c + d", "+", "c + d"),
        ("SET :a = :b", ":a", "SET :a ="),
        ("SET a[:x] = :v", ":x", "[:x]"),
        ("SET c = if_not_exists(c, :a+:b)", "+", ":a+:b"),
        ("HELLO b = :v", "HELLO", "HELLO b"),
        ("SET # = :v", "#", "SET # ="),
    ],
)
def test_update_syntax_error_names_token_and_neighbours(expression: str, token: str, near: str) -> None:
    assert message(parse_update, expression) == (
        f'Invalid UpdateExpression: Syntax error; token: "{token}", near: "{near}"'
    )


@pytest.mark.parametrize(
    ("expression", "token", "near"),
    [("!!!", "!", "!!"), ("a b", "b", "a b"), ("a,", "<EOF>", ",")],
)
def test_projection_syntax_error_names_token_and_neighbours(expression: str, token: str, near: str) -> None:
    # These three are DynamoDB's own answers, as recorded by another emulator's tests.
    assert message(parse_projection, expression) == (
        f'Invalid ProjectionExpression: Syntax error; token: "{token}", near: "{near}"'
    )


def test_expression_kind_appears_in_the_message() -> None:
    assert message(parse_condition, "a b", "FilterExpression").startswith("Invalid FilterExpression:")
    assert message(parse_projection, "a..b").startswith("Invalid ProjectionExpression: Syntax error;")


# --- limits -----------------------------------------------------------------------------


def test_empty_expression_is_rejected() -> None:
    assert message(parse_update, "") == "Invalid UpdateExpression: The expression can not be empty;"
    assert message(parse_condition, "  ") == "Invalid ConditionExpression: The expression can not be empty;"


def test_expression_size_limit_is_4096_bytes_with_size_only_for_conditions() -> None:
    at_limit = "a" + "z" * 4095
    parse_projection(at_limit)
    over = "a" + "z" * 4096
    assert message(parse_projection, over) == (
        "Invalid ProjectionExpression: Expression size has exceeded the maximum allowed size;"
    )
    condition = f"attribute_exists({over})"
    assert message(parse_condition, condition) == (
        "Invalid ConditionExpression: Expression size has exceeded the maximum allowed size; "
        f"expression size: {len(condition)}"
    )


def test_path_nesting_limit_is_32_levels() -> None:
    parse_projection(".".join(["a"] * 32))
    assert message(parse_projection, ".".join(["a"] * 33)) == (
        "Invalid ProjectionExpression: The document path has too many nesting levels; nesting levels: 33"
    )


def test_in_accepts_100_operands_and_rejects_101() -> None:
    parse_condition("a IN (" + ", ".join(f":v{i}" for i in range(100)) + ")")
    assert message(parse_condition, "a IN (" + ", ".join(f":v{i}" for i in range(101)) + ")") == (
        "Invalid ConditionExpression: The IN operator is provided with too many operands; "
        "number of operands: 101"
    )


def test_more_than_300_operators_is_rejected() -> None:
    parse_condition(" AND ".join(["a = :v"] * 150))  # 150 comparisons + 149 ANDs
    assert message(parse_condition, " AND ".join(["a = :v"] * 151)).endswith("operator count: 301")


# --- text-only checks ------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "((a = :v))",
        "a=a and a > ((views))",
        "a=a AND ((a=a AND a=a)) AND a=a",
        "((c=:c) AND ((p=:p)))",
        "a > whatever((:things), ((a)))",
    ],
)
def test_redundant_parentheses_are_rejected_before_other_checks(expression: str) -> None:
    assert message(parse_condition, expression) == (
        "Invalid ConditionExpression: The expression has redundant parentheses;"
    )


def test_single_parentheses_around_each_level_are_fine() -> None:
    parse_condition("((a = :a) OR (b = :b))")
    parse_condition("((c=:c) AND (p=:p))")


@pytest.mark.parametrize(
    ("expression", "function"),
    [
        ("a=a and whatever((:things)) > a", "whatever"),
        ("attRIbute_exIsts((views), #a)", "attRIbute_exIsts"),  # before the reserved word
    ],
)
def test_unknown_condition_function(expression: str, function: str) -> None:
    assert message(parse_condition, expression) == (
        f"Invalid ConditionExpression: Invalid function name; function: {function}"
    )


@pytest.mark.parametrize(
    ("expression", "function"),
    [
        ("if_not_exists(a, :v) = :v", "if_not_exists"),
        ("list_append(a, :v) = :v", "list_append"),
        ("size(if_not_exists(a, :v)) > :v", "if_not_exists"),
    ],
)
def test_update_functions_in_a_condition_are_misused_not_unknown(expression: str, function: str) -> None:
    assert message(parse_condition, expression) == (
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; "
        f"function: {function}"
    )


def test_a_list_index_beyond_32_bits_is_out_of_the_allowable_range() -> None:
    assert message(parse_projection, "a[99999999999999]") == (
        "Invalid ProjectionExpression: List index is not within the allowable range; index: [99999999999999]"
    )
    assert message(parse_projection, "a[2147483648]") == (
        "Invalid ProjectionExpression: List index is not within the allowable range; index: [2147483648]"
    )
    assert parse_projection("a[2147483647]") is not None


@pytest.mark.parametrize(
    ("expression", "function"),
    [
        ("a=a and attribute_exists((views), (#a)) > b", "attribute_exists"),
        ("attribute_not_exists(things) > b", "attribute_not_exists"),
        ("begins_with(things, a) > b", "begins_with"),
        ("size(contains(a, b)) > a", "contains"),
        ("size(things)", "size"),
        ("a = :v AND size(b)", "size"),
        ("a between b and attribute_exists(things)", "attribute_exists"),
        ("a in (b, attribute_exists(things))", "attribute_exists"),
    ],
)
def test_function_used_where_not_allowed(expression: str, function: str) -> None:
    assert message(parse_condition, expression) == (
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; "
        f"function: {function}"
    )


def test_reserved_word_used_bare_is_rejected_anywhere_in_a_path() -> None:
    assert message(parse_condition, "status = :v") == (
        "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status"
    )
    assert message(parse_condition, ":a < abOrT", "FilterExpression") == (
        "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: abOrT"
    )
    assert message(parse_projection, "a.b.#c, d.Size") == (
        "Invalid ProjectionExpression: Attribute name is a reserved keyword; reserved keyword: Size"
    )
    parse_condition("#status = :v")


def test_update_checks_reserved_words_before_function_names_and_sections() -> None:
    assert message(parse_update, " set #c = :c set abOrt = true ") == (
        "Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: abOrt"
    )
    assert message(parse_update, "set #c = if_not_exist(:c) set c = d") == (
        "Invalid UpdateExpression: Invalid function name; function: if_not_exist"
    )


@pytest.mark.parametrize(
    ("expression", "section"),
    [
        ("set a = #c set c = :d", "SET"),
        ("remove #d set a = b remove e", "REMOVE"),
        ("add #d :e set a = b add e :f", "ADD"),
        ("delete #d :e set a = b delete #e :f", "DELETE"),
    ],
)
def test_each_update_section_at_most_once(expression: str, section: str) -> None:
    assert message(parse_update, expression) == (
        f'Invalid UpdateExpression: The "{section}" section can only be used once in an update expression;'
    )


def test_condition_functions_are_unknown_in_updates_and_list_append_cannot_nest() -> None:
    assert message(parse_update, "SET a = size(b)") == (
        "Invalid UpdateExpression: Invalid function name; function: size"
    )
    assert message(parse_update, "SET a = list_append(list_append(:a, :b), :c)") == (
        "Invalid UpdateExpression: The function is not allowed to be used this way in an expression; "
        "function: list_append"
    )
    parse_update("SET a = if_not_exists(b, if_not_exists(c, :v))")


def test_reserved_word_list_is_complete_and_case_insensitive() -> None:
    assert len(RESERVED_WORDS) == 573
    assert is_reserved("status") and is_reserved("ZONE") and is_reserved("abort")
    assert not is_reserved("name1") and not is_reserved("contains")


# --- round trip ----------------------------------------------------------------------------

_names = st.sampled_from(["a", "b", "c1", "x_y", "#n", "#m"])
_paths = st.builds(
    lambda head, rest: P((head, *rest)),
    _names,
    st.lists(st.one_of(_names, st.integers(0, 20)), max_size=3),
)
_values = st.sampled_from([":v", ":w", ":x1"]).map(V)
_scalar_operands = st.one_of(_paths, _values)
_operands = st.one_of(_scalar_operands, st.builds(lambda p: ast.FunctionCall("size", (p,)), _paths))
_leaves = st.one_of(
    st.builds(ast.Compare, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _operands, _operands),
    st.builds(ast.Between, _operands, _operands, _operands),
    st.builds(ast.In, _operands, st.lists(_operands, min_size=1, max_size=4).map(tuple)),
    st.builds(lambda p: ast.FunctionCall("attribute_exists", (p,)), _paths),
    st.builds(lambda p, v: ast.FunctionCall("begins_with", (p, v)), _paths, _values),
)
_conditions = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.builds(ast.And, inner, inner), st.builds(ast.Or, inner, inner), st.builds(ast.Not, inner)
    ),
    max_leaves=8,
)


@given(_conditions)
def test_printing_then_parsing_a_condition_gives_the_same_tree(tree: ast.Condition) -> None:
    assert parse_condition(to_text(tree)) == tree


_set_values = st.one_of(
    _scalar_operands,
    st.builds(ast.Arithmetic, st.sampled_from(["+", "-"]), _scalar_operands, _scalar_operands),
    st.builds(lambda p, v: ast.FunctionCall("if_not_exists", (p, v)), _paths, _values),
    st.builds(lambda a, b: ast.FunctionCall("list_append", (a, b)), _scalar_operands, _scalar_operands),
)


@st.composite
def _updates(draw: st.DrawFn) -> ast.Update:
    clauses = draw(st.permutations(["SET", "REMOVE", "ADD", "DELETE"]))
    count = draw(st.integers(1, 4))
    actions: list[ast.UpdateAction] = []
    for clause in clauses[:count]:
        for _ in range(draw(st.integers(1, 3))):
            path = draw(_paths)
            if clause == "SET":
                actions.append(ast.UpdateAction(clause, path, draw(_set_values)))
            elif clause == "REMOVE":
                actions.append(ast.UpdateAction(clause, path))
            else:
                actions.append(ast.UpdateAction(clause, path, draw(_values)))
    return ast.Update(tuple(actions))


@given(_updates())
def test_printing_then_parsing_an_update_gives_the_same_tree(tree: ast.Update) -> None:
    assert parse_update(to_text(tree)) == tree


@given(st.lists(_paths, min_size=1, max_size=5))
def test_printing_then_parsing_a_projection_gives_the_same_tree(paths: list[ast.Path]) -> None:
    tree = ast.Projection(tuple(paths))
    assert parse_projection(to_text(tree)) == tree


# --- nesting is bounded before parsing ---------------------------------------------


@pytest.mark.parametrize("depth", [244, 1000])
@pytest.mark.parametrize(
    ("parse", "kind", "inner"),
    [
        (parser.parse_condition, "ConditionExpression", "a = :v"),
        (parser.parse_condition, "FilterExpression", "a = :v"),
        (parser.parse_condition, "KeyConditionExpression", "pk = :v"),
        (parser.parse_update, "UpdateExpression", None),
    ],
)
def test_deeply_nested_parentheses_get_a_validation_error_not_a_recursion_error(
    parse: Any, kind: str, inner: str | None, depth: int
) -> None:
    text = (
        "SET a = " + "(" * depth + ":v" + ")" * depth if inner is None else "(" * depth + inner + ")" * depth
    )
    with pytest.raises(DynamoError) as info:
        parse(text, kind)
    assert info.value.code == "ValidationException"
    assert info.value.message == (
        f"Invalid {kind}: The expression contains too many nested parentheses; maximum nesting depth: 150"
    )


def test_dynamodbs_recorded_149_levels_of_or_parse_and_deeper_is_too_many_operators() -> None:
    # Alternator's test_deeply_nested_expression_2, recorded against DynamoDB.
    def chain(depth: int) -> str:
        return "a<b " + "or (a<b " * depth + ")" * depth

    assert parser.parse_condition(chain(149)) is not None
    for depth in (150, 454):
        with pytest.raises(DynamoError) as info:
            parser.parse_condition(chain(depth))
        assert info.value.message == (
            "Invalid ConditionExpression: The expression contains too many operators; operator count: 301"
        )


def test_nesting_up_to_the_bound_parses() -> None:
    depth = parser.MAX_PAREN_DEPTH
    text = "(" * (depth - 1) + "(a = :v) AND b = :w" + ")" * (depth - 1)
    # Redundant pairs are DynamoDB's own error, decided after the parse succeeded.
    with pytest.raises(DynamoError) as info:
        parser.parse_condition(text)
    assert "redundant parentheses" in info.value.message


def test_a_long_chain_of_not_is_stopped_by_the_operator_limit() -> None:
    with pytest.raises(DynamoError) as info:
        parser.parse_condition("NOT " * 1000 + "a = :v")
    assert "too many operators" in info.value.message


def test_nested_function_calls_in_an_update_are_bounded_too() -> None:
    with pytest.raises(DynamoError) as info:
        parser.parse_update("SET a = " + "list_append(" * 244 + ":v, :w" + ")" * 244)
    assert "too many nested parentheses" in info.value.message
