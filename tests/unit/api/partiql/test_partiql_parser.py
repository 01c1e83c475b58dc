"""PartiQL statements parsed into their syntax tree, parameters bound in order, and
malformed statements refused in DynamoDB's words."""

from __future__ import annotations

import pytest

from partita.api.partiql import syntax as s
from partita.api.partiql.parser import PARAMETER_COUNT, head, parse
from partita.common.errors import DynamoError

MALFORMED = "Statement wasn't well formed, can't be processed: "


def _path(*elements: str | int) -> s.Path:
    return s.Path(tuple(elements))


def test_a_select_has_its_projection_table_index_condition_and_order() -> None:
    got = parse(
        'select a.b, "c d"[2] FROM "Music"."byYear" WHERE Year >= ? ORDER BY Artist DESC', [{"N": "1"}]
    )
    assert got == s.Select(
        (_path("a", "b"), _path("c d", 2)),
        s.TableRef("Music", "byYear"),
        s.Comparison(">=", _path("Year"), s.Value({"N": "1"})),
        ((_path("Artist"), True),),
    )


def test_and_binds_tighter_than_or_and_not_tighter_than_and() -> None:
    got = parse("SELECT * FROM t WHERE a = 1 OR NOT b = 2 AND c = 3")
    assert isinstance(got, s.Select)
    one, two, three = (s.Value({"N": n}) for n in "123")
    assert got.where == s.Or(
        s.Comparison("=", _path("a"), one),
        s.And(s.Not(s.Comparison("=", _path("b"), two)), s.Comparison("=", _path("c"), three)),
    )


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
    assert got == s.Insert(s.TableRef("t"), s.Value({"M": {"v": value}}))


def test_parameters_bind_in_order_and_must_all_be_used() -> None:
    got = parse("UPDATE t SET a = ?, b = b + ? WHERE pk = ?", [{"S": "x"}, {"N": "2"}, {"S": "k"}])
    assert got == s.Update(
        s.TableRef("t"),
        (
            s.Assign(_path("a"), "value", (s.Value({"S": "x"}),)),
            s.Assign(_path("b"), "+", (_path("b"), s.Value({"N": "2"}))),
        ),
        s.Comparison("=", _path("pk"), s.Value({"S": "k"})),
        None,
    )
    for parameters in ([{"S": "x"}], [{"S": "x"}] * 4):
        with pytest.raises(DynamoError) as err:
            parse("UPDATE t SET a = ?, b = b + ? WHERE pk = ?", parameters)
        assert err.value.message == PARAMETER_COUNT


def test_update_takes_set_functions_remove_and_returning() -> None:
    got = parse("UPDATE t SET s = set_add(s, <<'x'>>) REMOVE old WHERE pk = 'k' RETURNING MODIFIED OLD *")
    assert isinstance(got, s.Update)
    assert got.actions == (
        s.Assign(_path("s"), "set_add", (_path("s"), s.Value({"SS": ["x"]}))),
        s.Remove(_path("old")),
    )
    assert got.returning == "UPDATED_OLD"


def test_conditions_take_in_between_is_and_functions() -> None:
    got = parse(
        "SELECT * FROM t WHERE a IN [1, 2] AND b BETWEEN 'x' AND 'y' AND c IS NOT MISSING "
        "AND begins_with(d, 'p') AND size(e) > 3 AND attribute_exists(f)"
    )
    assert isinstance(got, s.Select) and got.where is not None
    terms = []
    node = got.where
    while isinstance(node, s.And):
        terms.insert(0, node.right)
        node = node.left
    terms.insert(0, node)
    assert terms == [
        s.In(_path("a"), (s.Value({"N": "1"}), s.Value({"N": "2"}))),
        s.Between(_path("b"), s.Value({"S": "x"}), s.Value({"S": "y"})),
        s.Is(_path("c"), "MISSING", True),
        s.Function("begins_with", (_path("d"), s.Value({"S": "p"}))),
        s.Comparison(">", s.Size(_path("e")), s.Value({"N": "3"})),
        s.Function("attribute_exists", (_path("f"),)),
    ]


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
    assert got == s.Select(None, s.TableRef("t"), s.Comparison("=", _path("pk"), s.Value({"N": "1"})), ())


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
