"""Fuzzing what a request says rather than its shape: PartiQL statements and update and
condition expressions drawn from small grammars, sent to a live cluster over items of
every type. Whatever is drawn, the answer is 200 or a 400-class DynamoDB error, never a
500 (a grammar-driven hunt found an ORDER BY over mixed-type IN values answered with
one). PARTITA_FUZZ_EXAMPLES raises the count for a longer hunt."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.compat.helpers import PYTESTMARK, create_table, raw_call
from tests.compat.test_fuzz_front_door import assert_dynamodb_answer, fuzz_settings
from tests.unit.api.partiql.test_partiql_properties import PARAMETERS, conditions

pytestmark = PYTESTMARK

FUZZ = fuzz_settings(150)
# An item with a value of every type, numbers at the edges of DynamoDB's range.
ITEM = {
    "n": {"N": "99999999999999999999999999999999999999"},
    "s": {"S": "x"},
    "l": {"L": [{"N": "1"}, {"S": "a"}, {"M": {"z": {"N": "2"}}}]},
    "m": {"M": {"a": {"N": "1"}, "b": {"L": []}, "c": {"M": {}}}},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2"]},
    "bs": {"BS": ["YQ=="]},
    "nul": {"NULL": True},
    "bo": {"BOOL": True},
    "b": {"B": "YQ=="},
}
PATHS = st.sampled_from(
    [
        "n",
        "s",
        "l",
        "l[0]",
        "l[2].z",
        "l[5]",
        "m.a",
        "m.b[0]",
        "m.c.d",
        "ss",
        "ns",
        "bs",
        "nul",
        "x",
        "x.y",
        "pk",
        "s[0]",
        "#k",
    ]
)
VALUES = {
    ":num": {"N": "1"},
    ":big": {"N": "9.9999999999999999999999999999999999999E+125"},
    ":tiny": {"N": "1E-130"},
    ":str": {"S": "q"},
    ":lst": {"L": [{"N": "3"}]},
    ":map": {"M": {"k": {"S": "v"}}},
    ":ss": {"SS": ["c"]},
    ":ns": {"NS": ["3"]},
    ":nul": {"NULL": True},
    ":bin": {"B": "Yw=="},
}
PLACEHOLDERS = st.sampled_from(sorted(VALUES))


@st.composite
def operands(draw: st.DrawFn, depth: int = 0) -> str:
    match draw(st.integers(0, 4 if depth < 2 else 1)):
        case 0:
            return draw(PATHS)
        case 1:
            return draw(PLACEHOLDERS)
        case 2:
            return f"if_not_exists({draw(PATHS)}, {draw(operands(depth + 1))})"
        case 3:
            return f"list_append({draw(operands(depth + 1))}, {draw(operands(depth + 1))})"
        case _:
            return (
                f"{draw(operands(depth + 1))} {draw(st.sampled_from(['+', '-']))} {draw(operands(depth + 1))}"
            )


@st.composite
def updates(draw: st.DrawFn) -> str:
    clauses = []
    for keyword in draw(
        st.lists(st.sampled_from(["SET", "REMOVE", "ADD", "DELETE"]), min_size=1, max_size=3, unique=True)
    ):
        if keyword == "SET":
            clauses.append(
                "SET "
                + ", ".join(f"{draw(PATHS)} = {draw(operands())}" for _ in range(draw(st.integers(1, 3))))
            )
        elif keyword == "REMOVE":
            clauses.append("REMOVE " + ", ".join(draw(PATHS) for _ in range(draw(st.integers(1, 2)))))
        else:
            clauses.append(f"{keyword} {draw(PATHS)} {draw(PLACEHOLDERS)}")
    return " ".join(clauses)


@st.composite
def item_conditions(draw: st.DrawFn) -> str:
    match draw(st.integers(0, 4)):
        case 0:
            return f"{draw(operands())} {draw(st.sampled_from(['=', '<>', '<', '>=']))} {draw(operands())}"
        case 1:
            return f"attribute_exists({draw(PATHS)}) OR attribute_not_exists({draw(PATHS)})"
        case 2:
            return f"{draw(st.sampled_from(['begins_with', 'contains', 'attribute_type']))}({draw(PATHS)}, {draw(PLACEHOLDERS)})"
        case 3:
            return f"size({draw(PATHS)}) > {draw(PLACEHOLDERS)}"
        case _:
            return f"{draw(PATHS)} BETWEEN {draw(PLACEHOLDERS)} AND {draw(PLACEHOLDERS)}"


@pytest.fixture(scope="module")
def typed_table(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S"), ("sk", "N")], prefix="fuzz-expr")


@FUZZ
@given(
    update=updates(),
    condition=st.none() | item_conditions(),
    returned=st.sampled_from(["ALL_OLD", "UPDATED_NEW"]),
)
def test_update_expressions_over_every_type_get_a_dynamodb_answer(
    cluster: Any, ddb: Any, typed_table: str, update: str, condition: str | None, returned: str
) -> None:
    key = {"pk": {"S": uuid.uuid4().hex}, "sk": {"N": "1"}}
    ddb.put_item(TableName=typed_table, Item={**key, **ITEM})
    text = f"{update} {condition or ''}"
    body: dict[str, Any] = {
        "TableName": typed_table,
        "Key": key,
        "UpdateExpression": update,
        "ReturnValues": returned,
    }
    if condition:
        body["ConditionExpression"] = condition
        body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    if "#k" in text:
        body["ExpressionAttributeNames"] = {"#k": "m"}
    used = {name: value for name, value in VALUES.items() if name in text}
    if used:
        body["ExpressionAttributeValues"] = used
    assert_dynamodb_answer(*raw_call(cluster, "UpdateItem", orjson.dumps(body)))


@FUZZ
@given(
    kind=st.sampled_from(["SELECT", "UPDATE", "DELETE"]),
    condition=conditions(),
    order=st.sampled_from(["", " ORDER BY sk", " ORDER BY pk DESC"]),
    parameters=PARAMETERS,
    operation=st.sampled_from(["ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"]),
)
def test_partiql_statements_get_a_dynamodb_answer(
    cluster: Any, typed_table: str, kind: str, condition: str, order: str, parameters: Any, operation: str
) -> None:
    source = f'"{typed_table}"'
    statement = {
        "SELECT": f"SELECT * FROM {source} WHERE {condition}{order}",
        "UPDATE": f"UPDATE {source} SET a = 1 WHERE {condition}",
        "DELETE": f"DELETE FROM {source} WHERE {condition}",
    }[kind]
    entry: dict[str, Any] = {"Statement": statement}
    if parameters is not None:
        entry["Parameters"] = parameters
    body: dict[str, Any] = {
        "ExecuteStatement": entry,
        "BatchExecuteStatement": {"Statements": [entry]},
        "ExecuteTransaction": {"TransactStatements": [entry]},
    }[operation]
    assert_dynamodb_answer(*raw_call(cluster, operation, orjson.dumps(body)))
