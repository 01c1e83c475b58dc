"""The HTTP front door as DynamoDB answers it, in raw HTTP where the SDK would hide it.

Authentication comes before the operation is looked up; the health check answers GET
on `/` only; Coral's deserialization stage gives SerializationException (with the
framework's `Message` key) for wrongly typed members however deep; and the inputs
that used to reach a 500 get DynamoDB's 400 answers.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from partita.common.sigv4 import sign_request
from tests.compat.helpers import PYTESTMARK, error_type, key, raw_call

pytestmark = PYTESTMARK

UNKNOWN_OPERATION = "FlyToTheMoon"


def _post_unsigned(cluster: Any, operation: str, body: bytes = b"{}") -> tuple[int, dict[str, Any]]:
    headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": f"DynamoDB_20120810.{operation}",
    }
    status, answer = cluster.post(body, headers)
    return int(status), dict(answer)


def _signed_with(cluster: Any, operation: str, body: bytes, access_key: str, secret: str) -> dict[str, str]:
    host = urlsplit(cluster.endpoint).netloc
    headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": f"DynamoDB_20120810.{operation}",
        "Host": host,
    }
    headers.update(
        sign_request(
            method="POST", host=host, path="/", query="", headers=headers, body=body,
            access_key=access_key, secret_key=secret, region="us-east-1",
            amz_date=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        )
    )  # fmt: skip
    return headers


def message_of(answer: dict[str, Any]) -> str:
    """Coral's framework errors spell their text "Message", DynamoDB's own "message"."""
    return str(answer.get("message", answer.get("Message", "")))


# --- authentication before dispatch ------------------------------------------------------


def test_an_unsigned_request_for_an_unknown_operation_is_missing_authentication(cluster: Any) -> None:
    status, answer = _post_unsigned(cluster, UNKNOWN_OPERATION)
    assert status == 400
    assert error_type(answer) == "MissingAuthenticationTokenException"
    assert message_of(answer) == "Request is missing Authentication Token"


def test_an_unknown_key_for_an_unknown_operation_is_unrecognized_client(cluster: Any) -> None:
    headers = _signed_with(cluster, UNKNOWN_OPERATION, b"{}", "AKIANOSUCHKEY0000000", "x" * 40)
    status, answer = cluster.post(b"{}", headers)
    assert status == 400
    assert error_type(answer) == "UnrecognizedClientException"


def test_an_expired_signature_for_an_unknown_operation_names_the_dates(cluster: Any) -> None:
    stale = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - 20 * 60))
    headers = cluster.signed_headers(UNKNOWN_OPERATION, b"{}", amz_date=stale)
    status, answer = cluster.post(b"{}", headers)
    assert status == 400
    assert error_type(answer) == "InvalidSignatureException"
    assert message_of(answer).startswith(f"Signature expired: {stale} is now earlier than ")


def test_a_signature_from_too_far_in_the_future_for_an_unknown_operation_names_the_dates(
    cluster: Any,
) -> None:
    future = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() + 20 * 60))
    headers = cluster.signed_headers(UNKNOWN_OPERATION, b"{}", amz_date=future)
    status, answer = cluster.post(b"{}", headers)
    assert (status, error_type(answer)) == (400, "InvalidSignatureException")
    assert message_of(answer).startswith(f"Signature not yet current: {future} is still later than ")


def test_a_wrong_secret_for_an_unknown_operation_is_an_invalid_signature(cluster: Any) -> None:
    headers = cluster.signed_headers(UNKNOWN_OPERATION, b"{}", secret="y" * 40)
    status, answer = cluster.post(b"{}", headers)
    assert (status, error_type(answer)) == (400, "InvalidSignatureException")


def test_a_signed_request_for_an_unknown_operation_is_unknown_operation(cluster: Any) -> None:
    status, answer = raw_call(cluster, UNKNOWN_OPERATION, b"{}")
    assert (status, error_type(answer)) == (400, "UnknownOperationException")


# --- the health check and other methods and paths --------------------------------------


def test_the_health_check_answers_get_on_the_root(cluster: Any) -> None:
    host = urlsplit(cluster.endpoint).netloc
    assert cluster.health().strip() == f"healthy: {host}"


@pytest.mark.parametrize(("method", "path"), [("GET", "/abc"), ("GET", "/health"), ("GET", "/index.htm")])
def test_get_on_another_path_is_a_client_error(cluster: Any, method: str, path: str) -> None:
    status, _, _ = cluster.request(method, path, b"", {})
    assert 400 <= status <= 404


@pytest.mark.partita_only
@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/abc"), ("PUT", "/"), ("DELETE", "/"), ("PATCH", "/x")]
)
def test_other_methods_and_paths_get_404_with_a_json_error(cluster: Any, method: str, path: str) -> None:
    status, body, headers = cluster.request(method, path, b"", {})
    assert status == 404
    assert headers["content-type"] == "application/x-amz-json-1.0"
    assert json.loads(body)["__type"].endswith("#UnknownOperationException")


@pytest.mark.partita_only
def test_a_body_over_the_request_limit_is_413_before_it_is_read(cluster: Any) -> None:
    parts = urlsplit(cluster.endpoint)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-amz-json-1.0\r\n"
            b"X-Amz-Target: DynamoDB_20120810.PutItem\r\nContent-Length: %d\r\n\r\n"
            % (parts.netloc.encode(), 64 * 1024 * 1024)
        )
        answer = _read_all(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body)["__type"] == "com.amazon.coral.service#SerializationException"


@pytest.mark.partita_only
def test_a_nul_byte_in_a_header_gets_a_json_error_body_an_sdk_can_parse(cluster: Any) -> None:
    parts = urlsplit(cluster.endpoint)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: h\r\nX-Amz-Target: DynamoDB_20120810.Get\x00Item\r\n"
            b"Content-Length: 2\r\n\r\n{}"
        )
        answer = _read_all(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"Content-Type: application/x-amz-json-1.0" in head
    assert set(json.loads(body)) == {"__type", "Message"}


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    for _ in range(1000):  # bounded: the server closes after answering
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


# --- Coral's deserialization stage -------------------------------------------------------

LIST = "Start of list found where not expected"
MAP = "Start of structure or map found where not expected."


@pytest.mark.parametrize(
    ("operation", "body", "message"),
    [
        ("GetItem", {"TableName": 5, "Key": {}}, "NUMBER_VALUE cannot be converted to String"),
        ("GetItem", {"TableName": "t", "Key": {"pk": {"S": 1}}}, "NUMBER_VALUE cannot be converted to String"),
        ("GetItem", {"TableName": "t", "Key": {}, "ConsistentRead": "yes"}, "STRING_VALUE cannot be converted to Boolean"),
        ("PutItem", {"TableName": "t", "Item": {}, "Expected": {"a": {"Exists": "no"}}}, "STRING_VALUE cannot be converted to Boolean"),
        ("Scan", {"TableName": "t", "ExclusiveStartKey": {"pk": {"N": 5}}}, "NUMBER_VALUE cannot be converted to String"),
        ("Scan", {"TableName": "t", "Limit": "5"}, "STRING_VALUE cannot be converted to Integer"),
        ("Query", {"TableName": "t", "KeyConditions": "x"}, "Expected map or null"),
        ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": {"a": {"L": [{"M": {"b": {"SS": [1]}}}]}}}}]}},
         "NUMBER_VALUE cannot be converted to String"),
        ("CreateTable", {"TableName": "t", "BillingMode": ["PAY_PER_REQUEST"]}, LIST),
        ("CreateTable", {"TableName": "t", "Tags": [{"Key": None, "Value": {"a": 1}}]}, MAP),
        ("TagResource", {"ResourceArn": "arn", "Tags": [{"Key": 5, "Value": "v"}]}, "NUMBER_VALUE cannot be converted to String"),
    ],
)  # fmt: skip
def test_a_wrongly_typed_member_is_a_serialization_exception_with_corals_message(
    cluster: Any, operation: str, body: dict[str, Any], message: str
) -> None:
    status, answer = raw_call(cluster, operation, orjson.dumps(body))
    assert status == 400
    assert answer["__type"] == "com.amazon.coral.service#SerializationException"
    assert answer["Message"] == message


def test_a_deeply_nested_value_where_a_string_belongs_is_a_400(cluster: Any) -> None:
    deep = "[" * 1000 + "]" * 1000
    for member in ("BillingMode", "TableName"):
        body = b'{"TableName": "deep-value", "%s": %s}' % (member.encode(), deep.encode())
        status, answer = raw_call(cluster, "CreateTable", body)
        assert status == 400, answer
        assert error_type(answer) == "SerializationException"
    tags = (
        b'{"TableName": "deep-value", "Tags": [{"Key": "k", "Value": %s}]}'
        % ('{"a":' * 900 + "1" + "}" * 900).encode()
    )
    status, answer = raw_call(cluster, "CreateTable", tags)
    assert (status, error_type(answer)) == (400, "SerializationException")


def test_a_document_nested_past_dynamodbs_limit_is_a_validation_error(cluster: Any, table_s: str) -> None:
    value = '{"L": [' * 500 + '{"S": "x"}' + "]}" * 500
    body = ('{"TableName": "' + table_s + '", "Item": {"pk": {"S": "deep"}, "d": ' + value + "}}").encode()
    status, answer = raw_call(cluster, "PutItem", body)
    assert (status, error_type(answer)) == (400, "ValidationException")
    assert (
        message_of(answer)
        == "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


# --- what used to be a 500 ---------------------------------------------------------------


def test_batch_get_item_with_null_in_keys_is_a_validation_error(cluster: Any, table_s: str) -> None:
    body = orjson.dumps({"RequestItems": {table_s: {"Keys": [None]}}})
    status, answer = raw_call(cluster, "BatchGetItem", body)
    assert (status, error_type(answer)) == (400, "ValidationException")


@pytest.mark.parametrize("member", ["ConditionExpression", "FilterExpression", "KeyConditionExpression"])
def test_244_nested_parentheses_in_an_expression_are_a_validation_error(
    cluster: Any, table_s: str, member: str
) -> None:
    operation = {
        "ConditionExpression": "PutItem",
        "FilterExpression": "Scan",
        "KeyConditionExpression": "Query",
    }
    body: dict[str, Any] = {"TableName": table_s, member: "(" * 244 + "pk = :v" + ")" * 244}
    body["ExpressionAttributeValues"] = {":v": {"S": "x"}}
    if member == "ConditionExpression":
        body["Item"] = {"pk": {"S": "nested"}}
    status, answer = raw_call(cluster, operation[member], orjson.dumps(body))
    assert (status, error_type(answer)) == (400, "ValidationException"), answer
    assert message_of(answer).startswith(f"Invalid {member}: ")


def test_a_router_still_serves_after_the_hostile_inputs(cluster: Any, ddb: Any, table_s: str) -> None:
    ddb.put_item(TableName=table_s, Item={"pk": {"S": "after-hostile"}})
    assert ddb.get_item(TableName=table_s, Key={"pk": {"S": "after-hostile"}}, ConsistentRead=True)["Item"]


def test_batch_write_item_with_null_in_a_tables_requests_is_a_validation_error(
    cluster: Any, table_s: str
) -> None:
    body = orjson.dumps({"RequestItems": {table_s: [None]}})
    status, answer = raw_call(cluster, "BatchWriteItem", body)
    assert (status, error_type(answer)) == (400, "ValidationException")


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        (" AND ".join(["a = :v"] * 150), True),  # 299 operators: a tree as tall as the limit allows
        (" OR ".join(["a = :w"] * 149 + ["a = :v"]), True),
        ("NOT " * 299 + "a = :v", False),  # NOT nests by recursion in the parser; odd count: false
        ("NOT " * 298 + "a = :v", True),
    ],
)
def test_conditions_at_the_operator_limit_are_evaluated(
    ddb: Any, table_s: str, condition: str, holds: bool
) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "x"}})
    values = {":v": {"S": "x"}, ":w": {"S": "y"}}
    if "a = :w" not in condition:
        del values[":w"]
    write = {"TableName": table_s, "Item": {**k, "a": {"S": "x"}, "b": {"S": "written"}}}
    if holds:
        ddb.put_item(**write, ConditionExpression=condition, ExpressionAttributeValues=values)
    else:
        with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
            ddb.put_item(**write, ConditionExpression=condition, ExpressionAttributeValues=values)
    got = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]
    assert ("b" in got) is holds


@pytest.mark.parametrize("body", [b"{broken json", b"hi"])
def test_a_body_that_is_not_json_is_a_serialization_exception_without_a_message(
    cluster: Any, body: bytes
) -> None:
    # dynalite's connection tests and Alternator's test_json_parse_error, both recorded
    # against DynamoDB: the answer names no cause and no position.
    status, answer = raw_call(cluster, "PutItem", body)
    assert (status, answer) == (400, {"__type": "com.amazon.coral.service#SerializationException"})


# --- headers every answer carries --------------------------------------------------------


def test_every_answer_carries_dynamodbs_server_and_a_current_date_header(ddb: Any, table_s: str) -> None:
    from email.utils import parsedate_to_datetime

    from botocore.exceptions import ClientError

    ok = ddb.get_item(TableName=table_s, Key={"pk": {"S": key()}})["ResponseMetadata"]["HTTPHeaders"]
    with pytest.raises(ClientError) as refused:
        ddb.describe_table(TableName="compat-no-such-table-for-headers")
    failed = refused.value.response["ResponseMetadata"]["HTTPHeaders"]
    for headers in (ok, failed):
        assert headers["server"] == "Server"
        assert abs(parsedate_to_datetime(headers["date"]).timestamp() - time.time()) < 60


def test_headers_or_a_request_line_past_16_kb_are_a_400_not_a_signature_error(
    cluster: Any, table_s: str
) -> None:
    # DynamoDB's limit on the request line and headers (Alternator's tests record it).
    body = orjson.dumps({"TableName": table_s, "Item": {"pk": {"S": key()}}})
    headers = cluster.signed_headers("PutItem", body)
    status, _ = cluster.post(body, {**headers, "header1": "dog", "header2": "cat"})
    assert status == 200  # short unsigned headers change nothing
    status, _ = cluster.post(body, {**headers, "header1": "x" * 8192, "header2": "y" * 8192})
    assert status == 400
    status, answer, _ = cluster.request("POST", "/" + "x" * 17000, body, headers)
    assert status == 400 and b"InvalidSignatureException" not in answer


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        ("23456", "Base64 encoded length is expected a multiple of 4 bytes but found: 5"),
        ("=+/=", "Invalid last non-pad Base64 character dectected"),
        ("+/+=", "Invalid last non-pad Base64 character dectected"),  # padding bits set
    ],
)
def test_a_blob_that_is_not_base64_is_refused_while_the_request_is_read(
    cluster: Any, blob: str, message: str
) -> None:
    # Before any validation: the request has no TableName, yet the answer is the blob's
    # SerializationException (the AWS Java SDK's Base64 codec's words, typo included).
    for body in ({"Key": {"a": {"B": blob}}}, {"Key": {"a": {"BS": ["AAE=", blob]}}}):
        status, answer = raw_call(cluster, "DeleteItem", orjson.dumps(body))
        assert (status, error_type(answer), message_of(answer)) == (400, "SerializationException", message)


# --- CORS, for browsers ------------------------------------------------------------------

_CORS_HEADERS = (
    "access-control-allow-origin",
    "access-control-expose-headers",
    "access-control-max-age",
    "access-control-allow-methods",
    "access-control-allow-headers",
)


@pytest.mark.parametrize("method", ["OPTIONS", "GET", "POST"])
def test_without_an_origin_no_answer_carries_cors_headers(cluster: Any, method: str) -> None:
    _, _, headers = cluster.request(method, "/", b"", {})
    assert not [h for h in _CORS_HEADERS if h in headers]


@pytest.mark.parametrize("method", ["OPTIONS", "GET", "POST"])
def test_with_an_origin_every_answer_allows_it_and_a_preflight_allows_what_it_asks(
    cluster: Any, method: str
) -> None:
    asked = {
        "Origin": "http://example.com/",
        "Access-Control-Request-Method": "dog",
        "Access-Control-Request-Headers": "cat, meerkat, mouse",
    }
    status, body, headers = cluster.request(method, "/", b"", asked)
    assert headers["access-control-allow-origin"] == "*"
    assert "x-amzn-requestid" in headers["access-control-expose-headers"].lower()
    if method == "OPTIONS":
        assert (status, body) == (200, b"")
        assert headers["access-control-allow-methods"] == "dog"
        assert headers["access-control-allow-headers"] == "cat, meerkat, mouse"
        assert int(headers["access-control-max-age"]) > 0
    else:
        assert not [h for h in _CORS_HEADERS[2:] if h in headers]
