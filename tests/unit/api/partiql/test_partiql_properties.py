"""Whatever PartiQL statement arrives, parsing and planning it either succeed or refuse
it with a DynamoError: never another exception, which a client would see as a 500.
Statements are drawn from a small grammar of SELECT, INSERT, UPDATE and DELETE with
conditions of every kind, so most of them parse and reach the planner."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from partita.api.partiql import syntax
from partita.api.partiql.parser import parse
from partita.api.partiql.plan import KeySchema, batch_get, plan
from partita.common.errors import DynamoError

NAMES = st.sampled_from(["pk", "sk", "a", "b", '"pk"', "a.b", "a[0]", "a[1].c", '"x y"'])
VALUES = st.sampled_from(
    ["'k'", "1", "-2.5", "?", "true", "null", "missing", "[1,'a']", "{'a':1}", "<<'a','b'>>", "<<1,2>>", "[]"]
)
COMPARE = st.sampled_from(["=", "<>", "<", ">", "<=", ">="])
SOURCES = st.sampled_from(['"t"', "t", '"t"."i"'])
PARAMETERS = st.none() | st.lists(
    st.sampled_from([{"S": "k"}, {"N": "1"}, {"NULL": True}, {"L": []}, {"SS": ["a"]}, {"N": "abc"}, {}]),
    max_size=3,
)
KEYS = [KeySchema("pk", None), KeySchema("pk", "sk")]


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 8 if depth < 3 else 5))
    name, value = draw(NAMES), draw(VALUES)
    if kind <= 2:
        return f"{name} {draw(COMPARE)} {value}"
    if kind == 3:
        return f"{name} BETWEEN {value} AND {draw(VALUES)}"
    if kind == 4:
        return f"{name} IN [{value}, {draw(VALUES)}]"
    if kind == 5:
        return f"{name} IS {draw(st.sampled_from(['MISSING', 'NOT MISSING', 'NULL', 'NOT NULL', 'STRING']))}"
    if kind == 6:
        return f"{draw(st.sampled_from(['begins_with', 'contains', 'attribute_type']))}({name}, {value})"
    if kind == 7:
        return f"NOT ({draw(conditions(depth + 1))})"
    joiner = draw(st.sampled_from(["AND", "OR"]))
    return f"({draw(conditions(depth + 1))}) {joiner} ({draw(conditions(depth + 1))})"


@st.composite
def statements(draw: st.DrawFn) -> str:
    where = draw(st.just("") | conditions().map(lambda c: " WHERE " + c))
    source = draw(SOURCES)
    match draw(st.integers(0, 3)):
        case 0:
            projection = draw(st.sampled_from(["*", "a", "a, b", "a.b, sk"]))
            order = draw(st.sampled_from(["", " ORDER BY sk", " ORDER BY pk DESC", " ORDER BY a"]))
            return f"SELECT {projection} FROM {source}{where}{order}"
        case 1:
            item = draw(st.sampled_from(["{'pk': 1}", "{'pk': ?}", "{'pk': 'k', 'sk': 1}", "?"]))
            return f"INSERT INTO {source} VALUE {item}"
        case 2:
            change = draw(st.sampled_from(["SET a = 1", "SET a = a + 1", "REMOVE a", "SET pk = 1"]))
            returning = draw(st.sampled_from(["", " RETURNING ALL OLD *", " RETURNING MODIFIED NEW *"]))
            return f"UPDATE {source} {change}{where}{returning}"
        case _:
            return f"DELETE FROM {source}{where}"


@settings(max_examples=400, deadline=None)
@given(text=statements(), parameters=PARAMETERS)
def test_a_statement_is_planned_or_refused_with_a_dynamodb_error(text: str, parameters: Any) -> None:
    try:
        statement = parse(text, parameters)
    except DynamoError:
        return
    for key in KEYS:
        try:
            plan(statement, key)
            if isinstance(statement, syntax.Select):
                batch_get(statement, key)
        except DynamoError:
            pass


def test_partition_values_of_no_key_type_do_not_break_the_order_by() -> None:
    # Once a TypeError (a 500): a boolean among the IN values, sorted for ORDER BY pk.
    statement = parse("SELECT * FROM t WHERE pk IN ['k', true, 2] ORDER BY pk DESC", None)
    queried = plan(statement, KeySchema("pk", None)).requests
    assert [q["ExpressionAttributeValues"][":v0"] for q in queried] == [
        {"BOOL": True},
        {"S": "k"},
        {"N": "2"},
    ]
