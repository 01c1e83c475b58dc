"""PartiQL statements parsed into their syntax tree, parameters bound in order, and
malformed statements refused in DynamoDB's words."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from partita.api.expressions import ast, printer
from partita.api.partiql import syntax as s
from partita.api.partiql.parser import PARAMETER_COUNT, head, parse
from partita.common.errors import DynamoError

MALFORMED = "Statement wasn't well formed, can't be processed: "


def _shown(node: Any) -> str:
    """A resolved condition or update as expression text, each value written as its
    JSON after a colon (`a = :{"N":"1"}`)."""
    return printer.to_text(_raw(node))


def _raw(node: Any) -> Any:
    if isinstance(node, ast.Literal):
        return ast.ValueRef(":" + orjson.dumps(node.value).decode())
    if isinstance(node, ast.Update):
        return ast.Update(tuple(_raw(a) for a in node.actions))
    if isinstance(node, ast.UpdateAction):
        return ast.UpdateAction(node.clause, node.path, None if node.value is None else _raw(node.value))
    if isinstance(node, (ast.Path, ast.ValueRef)):
        return node
    if isinstance(node, ast.FunctionCall):
        return ast.FunctionCall(node.name, tuple(_raw(a) for a in node.args))
    if isinstance(node, ast.In):
        return ast.In(_raw(node.operand), tuple(_raw(o) for o in node.options))
    if isinstance(node, ast.Between):
        return ast.Between(_raw(node.operand), _raw(node.low), _raw(node.high))
    if isinstance(node, ast.Not):
        return ast.Not(_raw(node.operand))
    if isinstance(node, (ast.Compare, ast.Arithmetic)):
        return type(node)(node.op, _raw(node.left), _raw(node.right))
    return type(node)(_raw(node.left), _raw(node.right))


def _path(*elements: str | int) -> ast.Path:
    return ast.Path(tuple(elements))


def test_a_select_has_its_projection_table_index_condition_and_order() -> None:
    got = parse(
        'select a.b, "c d"[2] FROM "Music"."byYear" WHERE Year >= ? ORDER BY Artist DESC', [{"N": "1"}]
    )
    assert isinstance(got, s.Select) and got.where is not None
    assert (got.projection, got.source, got.order_by) == (
        (_path("a", "b"), _path("c d", 2)),
        s.TableRef("Music", "byYear"),
        ((_path("Artist"), True),),
    )
    assert _shown(got.where) == 'Year >= :{"N":"1"}'


def test_and_binds_tighter_than_or_and_not_tighter_than_and() -> None:
    got = parse("SELECT * FROM t WHERE a = 1 OR NOT b = 2 AND c = 3")
    assert isinstance(got, s.Select)
    assert isinstance(got.where, ast.Or) and isinstance(got.where.right, ast.And)
    assert isinstance(got.where.right.left, ast.Not)
    assert _shown(got.where) == 'a = :{"N":"1"} OR NOT b = :{"N":"2"} AND c = :{"N":"3"}'


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'it''s'", {"S": "it's"}),
        ("-1.5e3", {"N": "-1.5e3"}),
        ("TRUE", {"BOOL": True}),
        ("null", {"NULL": True}),
        ("{'a': [1, 'x'], 'b': {}}", {"M": {"a": {"L": [{"N": "1"}, {"S": "x"}]}, "b": {"M": {}}}}),
        ("<<'a', 'b'>>", {"SS": ["a", "b"]}),
        ("<<1, 2>>", {"NS": ["1", "2"]}),
    ],
)
def test_literals_are_attribute_values(text: str, value: dict[str, object]) -> None:
    got = parse(f"INSERT INTO t VALUE {{'v': {text}}}")
    assert got == s.Insert(s.TableRef("t"), {"v": value})


def test_parameters_bind_in_order_and_must_all_be_used() -> None:
    got = parse("UPDATE t SET a = ?, b = b + ? WHERE pk = ?", [{"S": "x"}, {"N": "2"}, {"S": "k"}])
    assert isinstance(got, s.Update)
    assert _shown(ast.Update(got.actions)) == 'SET a = :{"S":"x"}, b = b + :{"N":"2"}'
    assert _shown(got.where) == 'pk = :{"S":"k"}'
    for parameters in ([{"S": "x"}], [{"S": "x"}] * 4):
        with pytest.raises(DynamoError) as err:
            parse("UPDATE t SET a = ?, b = b + ? WHERE pk = ?", parameters)
        assert err.value.message == PARAMETER_COUNT


def test_update_takes_set_functions_remove_and_returning() -> None:
    got = parse(
        "UPDATE t SET s = set_add(s, <<'x'>>) SET l = list_append(l, [1]) REMOVE old "
        "SET d = set_delete(d, <<2>>) WHERE pk = 'k' RETURNING MODIFIED OLD *"
    )
    assert isinstance(got, s.Update)
    assert [(a.clause, a.path) for a in got.actions] == [
        ("ADD", _path("s")),
        ("SET", _path("l")),
        ("REMOVE", _path("old")),
        ("DELETE", _path("d")),
    ]
    assert _shown(ast.Update(got.actions[1:2])) == 'SET l = list_append(l, :{"L":[{"N":"1"}]})'
    assert got.returning == "UPDATED_OLD"


def test_conditions_take_in_between_is_and_functions() -> None:
    got = parse(
        "SELECT * FROM t WHERE a IN [1, 2] AND b BETWEEN 'x' AND 'y' AND c IS NOT MISSING "
        "AND begins_with(d, 'p') AND size(e) > 3 AND attribute_exists(f) AND g IS NOT BOOLEAN"
    )
    assert isinstance(got, s.Select) and got.where is not None
    assert _shown(got.where) == (
        'a IN (:{"N":"1"}, :{"N":"2"}) AND b BETWEEN :{"S":"x"} AND :{"S":"y"} AND attribute_exists(c) '
        'AND begins_with(d, :{"S":"p"}) AND size(e) > :{"N":"3"} AND attribute_exists(f) '
        'AND NOT attribute_type(g, :{"S":"BOOL"})'
    )


@pytest.mark.parametrize(
    ("statement", "detail"),
    [
        ("CREATE TABLE t", "Expected data manipulation"),
        ("", "Expected data manipulation"),
        ("SELECT * FROM t WHERE", "Unexpected end of statement"),
        ("UPDATE t WHERE pk = 1", "Unexpected token WHERE"),
        ("INSERT INTO t VALUE {'s': <<1, 'a'>>}", "A set holds"),
    ],
)
def test_malformed_statements_are_refused(statement: str, detail: str) -> None:
    with pytest.raises(DynamoError) as err:
        parse(statement)
    assert err.value.code == "ValidationException"
    assert err.value.message.startswith(MALFORMED + detail)


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        # DynamoDB's own texts (recorded against it; `docs/partiql.md`).
        ("SELECT * FROM t extra", MALFORMED + "Unexpected token after expression"),
        ("SELECT * FROM t WHERE a = 'open", MALFORMED),
        ('SELECT * FROM "open', MALFORMED),
        ("SELECT * FROM t WHERE a # 1", MALFORMED),
        ("SELECT * FROM t /* open", MALFORMED),
        (
            "INSERT INTO t VALUE 'x'",
            "Unsupported format in item expression. "
            "Please use struct format {...} to express item values for insert statement.",
        ),
        ("INSERT INTO t VALUE {'pk': 1} RETURNING ALL OLD *", "RETURNING is not supported in INSERT"),
        (
            "DELETE FROM t WHERE pk = 1 RETURNING ALL OLD",
            "Expected '*' after ( MODIFIED | ALL ) ( NEW | OLD ) in RETURNING clause",
        ),
    ],
)
def test_refusals_in_dynamodbs_words(statement: str, message: str) -> None:
    with pytest.raises(DynamoError) as err:
        parse(statement)
    assert (err.value.code, err.value.message) == ("ValidationException", message)


def test_comments_and_a_final_semicolon_are_allowed() -> None:
    got = parse("SELECT /* all */ * FROM t -- the table\n WHERE pk = 1;")
    assert isinstance(got, s.Select) and got.where is not None
    assert (got.projection, got.source) == (None, s.TableRef("t"))
    assert _shown(got.where) == 'pk = :{"N":"1"}'


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ('SELECT * FROM "Music"', ("read", "Music")),
        ("delete from t where pk = 1", ("write", "t")),
        ("INSERT INTO \"a.b\" VALUE {'pk': 1}", ("write", "a.b")),
        ("UPDATE t SET a = 1 WHERE pk = 1", ("write", "t")),
        ("SELECT * FROM", None),
        ("GRANT x", None),
        ("SELECT 'open", None),
    ],
)
def test_the_head_names_the_kind_of_work_and_the_table(
    statement: str, expected: tuple[str, str] | None
) -> None:
    assert head(statement) == expected
