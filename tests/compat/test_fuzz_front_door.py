"""Fuzzing the HTTP front door: malformed and random bodies for every data operation.

Whatever arrives, the router answers 200 or a 400-class DynamoDB error (never a 500,
never a dropped connection), keeps serving, and a refused batch writes nothing.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.compat.helpers import PYTESTMARK, create_table, error_type, raw_call

pytestmark = PYTESTMARK


def fuzz_settings(default_examples: int) -> Any:
    """Hypothesis settings of a fuzzing test: `default_examples` per run, or, for a
    longer hunt, PARTITA_FUZZ_EXAMPLES (PARTITA_FUZZ_EXAMPLES=3000 pytest ...)."""
    return settings(
        max_examples=int(os.environ.get("PARTITA_FUZZ_EXAMPLES", str(default_examples))),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


FUZZ = fuzz_settings(400)
OPERATIONS = [
    "PutItem", "GetItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem",
    "UpdateTable", "TagResource", "UntagResource", "ListTagsOfResource", "DescribeLimits",
    # CreateTable never succeeds here: MEMBERS has no KeySchema/AttributeDefinitions.
    "CreateTable", "DescribeTable", "DescribeEndpoints", "DeleteTable",
    "UpdateTimeToLive", "DescribeTimeToLive",
]  # fmt: skip
MEMBERS = [
    "TableName", "Key", "Item", "ConditionExpression", "UpdateExpression", "KeyConditionExpression",
    "FilterExpression", "ProjectionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues",
    "ReturnValues", "ReturnConsumedCapacity", "ReturnValuesOnConditionCheckFailure", "Limit", "Select",
    "ExclusiveStartKey", "ScanIndexForward", "ConsistentRead", "Segment", "TotalSegments", "RequestItems",
    "Expected", "AttributeUpdates", "KeyConditions", "QueryFilter", "ScanFilter", "AttributesToGet",
    "ConditionalOperator", "BillingMode", "ProvisionedThroughput", "ResourceArn", "Tags", "TagKeys",
    "TimeToLiveSpecification",
]  # fmt: skip
EXPRESSION_BITS = [
    "a",
    "#n",
    ":v",
    "=",
    "<>",
    "<",
    "AND",
    "OR",
    "NOT",
    "(",
    ")",
    ",",
    ".",
    "[0]",
    "SET",
    "REMOVE",
    "ADD",
    "DELETE",
    "size(",
    "attribute_exists(",
    "begins_with(",
    "BETWEEN",
    "IN",
    "+",
    "-",
    "pk",
]


@pytest.fixture(scope="module")
def fuzz_table(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S"), ("sk", "N")], prefix="fuzz")


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
type_tags = st.sampled_from(["S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS", "X", ""])
# Number texts at and far beyond DynamoDB's limits: an exponent far past any context's
# range once became Infinity and reached a 500.
number_texts = st.sampled_from(
    [
        "1e100000000",
        "-1.0e100000000",
        "1e-100000000",
        "9" * 39,
        "1e125",
        "1e-130",
        "NaN",
        " 1",
        "",
        "0e999999999",
    ]
)
attribute_values = st.recursive(
    st.builds(lambda t, v: {t: v}, type_tags, json_values)
    | number_texts.map(lambda v: {"N": v})
    | st.lists(number_texts, max_size=2).map(lambda v: {"NS": v}),
    lambda children: st.builds(lambda t, v: {t: v}, st.sampled_from(["M", "L"]),
                               st.dictionaries(st.text(max_size=4), children, max_size=3) | st.lists(children, max_size=3)),
    max_leaves=6,
)  # fmt: skip
flat_expressions = st.lists(st.sampled_from(EXPRESSION_BITS), max_size=10).map(" ".join)
# Deep parenthesis nesting (a recursive-descent parser's stack) around any expression.
expressions = flat_expressions | st.builds(
    lambda depth, inner: "(" * depth + inner + ")" * depth, st.integers(1, 400), flat_expressions
)
tags = st.lists(
    st.fixed_dictionaries(
        {"Key": json_values | st.text(max_size=130), "Value": json_values | st.text(max_size=4)}
    ),
    max_size=3,
)
# Legacy conditions, each member of which Coral type-checks (Exists is a Boolean, ...).
expected = st.dictionaries(
    st.sampled_from(["a", "pk", ""]),
    st.fixed_dictionaries(
        {},
        optional={
            "Exists": json_values,
            "Value": attribute_values | json_values,
            "ComparisonOperator": st.sampled_from(["EQ", "NULL", "BEGINS_WITH", "XX"]) | json_values,
            "AttributeValueList": st.lists(attribute_values | st.none(), max_size=2) | json_values,
        },
    ),
    max_size=2,
)


ttl_specifications = st.fixed_dictionaries(
    {},
    optional={
        "Enabled": st.booleans() | json_values,
        "AttributeName": st.sampled_from(["ttl", "pk", "", "a" * 256]) | json_values,
    },
)


def request_items(table: str) -> st.SearchStrategy[Any]:
    """Both batches' RequestItems, with nulls and wrong types where keys and requests go."""
    keys = st.lists(
        st.none() | st.dictionaries(st.sampled_from(["pk", "sk"]), attribute_values, max_size=2), max_size=3
    )
    reads = st.fixed_dictionaries({"Keys": keys | json_values}, optional={"ConsistentRead": json_values})
    writes = st.lists(
        st.none()
        | st.fixed_dictionaries({"PutRequest": st.none() | st.fixed_dictionaries({"Item": json_values})})
        | st.fixed_dictionaries({"DeleteRequest": st.fixed_dictionaries({"Key": st.none() | json_values})}),
        max_size=3,
    )
    return st.dictionaries(
        st.sampled_from([table, "no-such-table"]), reads | writes | json_values, max_size=2
    )


def _member_value(name: str, table: str) -> st.SearchStrategy[Any]:
    if name == "TableName":
        return st.sampled_from([table, "no-such-table", "", "x"]) | st.text(max_size=5)
    if name in ("Key", "Item", "ExclusiveStartKey", "ExpressionAttributeValues"):
        return (
            st.dictionaries(st.sampled_from(["pk", "sk", "a", ":v", ":w"]), attribute_values, max_size=3)
            | json_values
        )
    if name.endswith("Expression"):
        return expressions | json_values
    if name == "ExpressionAttributeNames":
        return (
            st.dictionaries(st.sampled_from(["#n", "#m", "n"]), st.text(max_size=3), max_size=2) | json_values
        )
    if name == "Tags":
        return tags | json_values
    if name == "Expected":
        return expected | json_values
    if name == "RequestItems":
        return request_items(table) | json_values
    if name == "TimeToLiveSpecification":
        return ttl_specifications | json_values
    return json_values


def _deep_text(depth: int, leaf: str) -> str:
    """JSON nested `depth` levels, as text: orjson refuses to encode past 254 levels."""
    return '{"a":[' * depth + leaf + "]}" * depth


@st.composite
def bodies(draw: st.DrawFn, table: str) -> bytes:
    kind = draw(st.integers(0, 12))
    if kind == 0:
        return draw(st.binary(max_size=64))
    if kind == 1:
        text = json.dumps(draw(json_values))
        return text[: draw(st.integers(0, len(text)))].encode()  # truncated JSON
    if kind == 2:
        return orjson.dumps(draw(json_values))  # any JSON, usually not an object
    members = draw(st.lists(st.sampled_from(MEMBERS), max_size=6, unique=True))
    body = {name: draw(_member_value(name, table)) for name in members}
    if kind == 3 and members:
        # One member (often where a string belongs) replaced by a value nested deeper
        # than anything legitimate: no check may recurse its way to a 500.
        deep = _deep_text(draw(st.integers(100, 1000)), draw(st.sampled_from(['"x"', "1", "null", "{}"])))
        body[members[0]] = None
        return orjson.dumps(body).replace(b"null", deep.encode(), 1)
    return orjson.dumps(body)


def assert_dynamodb_answer(status: int, body: dict[str, Any]) -> None:
    assert status in (200, 400), (status, body)
    if status == 400:
        assert error_type(body) not in ("", "InternalServerError"), body
        assert isinstance(body.get("message", body.get("Message", "")), str)


@FUZZ
@given(data=st.data())
def test_random_bodies_get_a_dynamodb_answer_never_a_500(
    cluster: Any, fuzz_table: str, data: st.DataObject
) -> None:
    operation = data.draw(st.sampled_from(OPERATIONS))
    # A well-formed DeleteTable would delete the table the later tests write to: it
    # names a table of its own (created by the fuzzer's CreateTables, or missing).
    body = data.draw(bodies("fuzz-doomed" if operation == "DeleteTable" else fuzz_table))
    status, answer = raw_call(cluster, operation, body)
    assert_dynamodb_answer(status, answer)


def test_the_router_still_serves_after_the_fuzzing(cluster: Any, ddb: Any, fuzz_table: str) -> None:
    assert cluster.health().startswith("healthy")
    item = {"pk": {"S": "alive"}, "sk": {"N": "1"}}
    ddb.put_item(TableName=fuzz_table, Item=item)
    assert ddb.get_item(TableName=fuzz_table, Key={"pk": {"S": "alive"}, "sk": {"N": "1"}})["Item"] == item


def test_deeply_nested_json_is_refused_cleanly(cluster: Any, fuzz_table: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    status, answer = raw_call(cluster, "PutItem", f'{{"TableName": "{fuzz_table}", "Item": {deep}}}'.encode())
    assert_dynamodb_answer(status, answer)
    # 400 map levels: valid JSON (orjson encodes only 254 levels, so build the text).
    nested = '{"M":{"m":' * 400 + '{"S":"x"}' + "}}" * 400
    body = f'{{"TableName":"{fuzz_table}","Item":{{"pk":{{"S":"n"}},"sk":{{"N":"1"}},"deep":{nested}}}}}'
    status, answer = raw_call(cluster, "PutItem", body.encode())
    assert (status, answer["message"]) == (
        400,
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit",
    )


# The inputs that once reached a 500, kept as explicit examples of the corpus.
KNOWN_500S = [
    ("BatchGetItem", b'{"RequestItems": {"%(t)s": {"Keys": [null]}}}'),
    ("PutItem", b'{"TableName": "%(t)s", "Item": {"pk": {"S": "a"}, "sk": {"N": "1"}}, "ConditionExpression": "'
     + b"(" * 244 + b"pk = pk" + b")" * 244 + b'"}'),
    ("Query", b'{"TableName": "%(t)s", "KeyConditionExpression": "' + b"(" * 300 + b"pk = :v" + b")" * 300
     + b'", "ExpressionAttributeValues": {":v": {"S": "x"}}}'),
    ("CreateTable", b'{"TableName": "t-deep", "BillingMode": ' + b"[" * 1000 + b"]" * 1000 + b"}"),
    ("TagResource", b'{"ResourceArn": "arn:aws:dynamodb:us-east-1:000000000000:table/%(t)s", "Tags": [{"Key": "k", "Value": '
     + b'{"a":' * 900 + b"1" + b"}" * 900 + b"}]}"),
    ("CreateTable", b'{"TableName": "t-tags", "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],'
     b' "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",'
     b' "Tags": [{"Key": null, "Value": {"a": 1}}]}'),
    ("PutItem", b'{"TableName": "%(t)s", "Item": {"pk": {"S": "a"}, "sk": {"N": "1"}, "n": {"N": "1.0e100000000"}}}'),
    ("UpdateItem", b'{"TableName": "%(t)s", "Key": {"pk": {"S": "a"}, "sk": {"N": "1"}}, "UpdateExpression":'
     b' "SET x = :a + :b", "ExpressionAttributeValues": {":a": {"N": "1.0"}, ":b": {"N": "1.0e100000000"}}}'),
]  # fmt: skip


@pytest.mark.parametrize(("operation", "template"), KNOWN_500S)
def test_inputs_that_once_got_a_500_get_a_400(
    cluster: Any, fuzz_table: str, operation: str, template: bytes
) -> None:
    status, answer = raw_call(cluster, operation, template % {b"t": fuzz_table.encode()})
    assert status == 400, answer
    assert error_type(answer) not in ("", "InternalServerError"), answer


def _model() -> dict[str, Any]:
    from botocore.loaders import Loader

    model: dict[str, Any] = Loader().load_service_model("dynamodb", "service-2")
    return model


MODEL = _model()
# Every operation of the service model, implemented or not (an unknown one is a 400 too),
# but DeleteTable, which would delete the table the later tests write to, and the two
# that reach S3, which is not on 127.0.0.1 here.
MODEL_OPERATIONS = sorted(
    set(MODEL["operations"]) - {"DeleteTable", "ImportTable", "ExportTableToPointInTime"}
)


def from_shape(name: str, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values for a shape of DynamoDB's service model: mostly of the right type (so the
    request reaches the later stages), sometimes any JSON at all (stage a), with enum
    values, lengths and ranges drawn around the model's constraints (stage b)."""
    shape = MODEL["shapes"][name]
    kind = shape["type"]
    wrong = json_values
    if depth > 4:
        return st.none() | wrong
    if kind == "structure":
        members = shape.get("members", {})
        if name == "AttributeValue":
            return attribute_values
        right: st.SearchStrategy[Any] = st.fixed_dictionaries(
            {}, optional={m: from_shape(spec["shape"], depth + 1) for m, spec in members.items()}
        )
    elif kind == "list":
        right = st.lists(from_shape(shape["member"]["shape"], depth + 1) | st.none(), max_size=3)
    elif kind == "map":
        keys = st.sampled_from(["pk", "sk", "a", "#n", ":v", ""]) | st.text(max_size=4)
        right = st.dictionaries(keys, from_shape(shape["value"]["shape"], depth + 1), max_size=3)
    elif kind == "string":
        right = (
            st.sampled_from(shape["enum"])
            if "enum" in shape
            else st.text(max_size=int(shape.get("max", 12)) % 300 + 2)
        )
    elif kind == "boolean":
        right = st.booleans()
    elif kind in ("integer", "long"):
        low, high = shape.get("min", -5), shape.get("max", 10**6)
        right = st.integers(low - 2, min(high, 10**7) + 2)
    else:
        right = json_values
    return st.one_of(right, right, right, wrong)


@FUZZ
@given(data=st.data())
def test_bodies_drawn_from_the_service_model_get_a_dynamodb_answer(
    cluster: Any, fuzz_table: str, data: st.DataObject
) -> None:
    operation = data.draw(st.sampled_from(MODEL_OPERATIONS))
    input_shape = MODEL["operations"][operation].get("input")
    body: Any = data.draw(from_shape(input_shape["shape"])) if input_shape else {}
    if isinstance(body, dict) and "TableName" in body and data.draw(st.booleans()):
        body["TableName"] = fuzz_table  # reach the table-level stages too
    status, answer = raw_call(cluster, operation, orjson.dumps(body))
    assert_dynamodb_answer(status, answer)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Valid puts with fresh keys, plus requests of which at least one is invalid."""
    valid = [
        {"PutRequest": {"Item": {"pk": {"S": uuid.uuid4().hex}, "sk": {"N": str(i)}}}}
        for i in range(draw(st.integers(1, 10)))
    ]
    broken = draw(
        st.lists(
            st.one_of(
                st.builds(lambda v: {"PutRequest": {"Item": {"pk": v, "sk": {"N": "1"}}}}, attribute_values),
                st.builds(
                    lambda v: {"DeleteRequest": {"Key": {"pk": {"S": "x"}, "sk": v}}}, attribute_values
                ),
                st.builds(lambda v: {"PutRequest": {"Item": v}}, json_values),
                st.just({}),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return valid, broken


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=batches(), position=st.integers(0, 10))
def test_a_refused_batch_writes_nothing(
    cluster: Any,
    ddb: Any,
    fuzz_table: str,
    batch: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    position: int,
) -> None:
    valid, broken = batch
    requests = valid[:position] + broken + valid[position:]
    status, answer = raw_call(
        cluster, "BatchWriteItem", orjson.dumps({"RequestItems": {fuzz_table: requests}})
    )
    assert_dynamodb_answer(status, answer)
    keys = [r["PutRequest"]["Item"] for r in valid]
    found = ddb.batch_get_item(RequestItems={fuzz_table: {"Keys": keys, "ConsistentRead": True}})[
        "Responses"
    ][fuzz_table]
    if status == 400:
        assert found == []
    else:
        assert len(found) == len(keys)


def _raw_exchange(cluster: Any, request: bytes) -> bytes:
    parts = urlsplit(cluster.endpoint)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        for _ in range(100):  # bounded: every answer here closes the connection
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.partita_only
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from([b"X-Amz-Target", b"Authorization", b"X-Amz-Date", b"Content-Type", b"X-Custom"]),
    value=st.binary(min_size=1, max_size=40),
    method=st.sampled_from([b"POST", b"GET", b"PUT", b"OPTIONS"]),
)
def test_any_header_bytes_get_an_answer_an_sdk_can_parse(
    cluster: Any, name: bytes, value: bytes, method: bytes
) -> None:
    """Header values with NUL and other control bytes, any method: every answer is a
    DynamoDB JSON error body (or the health check), never plain text or a dropped line."""
    value = value.replace(b"\r", b"").replace(b"\n", b"")  # a line break would end the header
    if not value:
        value = b"\x00"
    answer = _raw_exchange(
        cluster,
        method
        + b" / HTTP/1.1\r\nHost: h\r\n"
        + name
        + b": "
        + value
        + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), answer[:200]
    status = int(head.split()[1])
    if method == b"GET" and status == 200:
        assert body.startswith(b"healthy")
        return
    assert 400 <= status < 500, answer[:300]
    parsed = json.loads(body)
    assert "#" in parsed["__type"] and not parsed["__type"].endswith("#InternalServerError")
