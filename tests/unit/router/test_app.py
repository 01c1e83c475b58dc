"""DynamoApp, the front door: target, then SigV4, then JSON, then the operation.

A MemoryControlStore behind a real TableCache, a real credentials file, requests
signed by botocore. Every error answer is checked for DynamoDB's shape: a JSON body
with __type and message, and x-amz-crc32 equal to the CRC32 of the body.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
from botocore.credentials import Credentials  # type: ignore[import-untyped]

from partita.control.model import NodeRecord
from partita.control.store import MemoryControlStore
from partita.router import app as app_module
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import Credential, CredentialStore, save
from partita.router.http_server import HttpRequest, HttpResponse
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache

ADMIN = Credential("AKIAADMIN00000000000", "a" * 40, name="admin", tables=("*",))
LIMITED = Credential("AKIALIMITED000000000", "b" * 40, name="orders-service", tables=("Orders",))
UNKNOWN = Credential("AKIAUNKNOWN000000000", "c" * 40)

CREATE_ORDERS = {
    "TableName": "Orders",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "BillingMode": "PAY_PER_REQUEST",
}


@pytest.fixture
async def app(tmp_path: Path) -> DynamoApp:
    path = tmp_path / "credentials.json"
    save(path, [ADMIN, LIMITED])
    store = MemoryControlStore()
    await store.register_node(NodeRecord("n1", "a", "127.0.0.1:1", "127.0.0.1:2"), ttl=10)
    ctx = RouterContext(TableCache(store), store, StorageClient(), RouterSettings(account_id="123456789012"))
    return DynamoApp(ctx, CredentialStore(path))


def signed(
    operation: str,
    body: bytes | dict[str, Any],
    credential: Credential = ADMIN,
    target_prefix: str = "DynamoDB_20120810.",
) -> HttpRequest:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    aws = AWSRequest(
        method="POST",
        url="http://localhost:8000/",
        data=data,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target_prefix + operation},
    )
    SigV4Auth(
        Credentials(credential.access_key_id, credential.secret_access_key), "dynamodb", "us-east-1"
    ).add_auth(aws)
    headers = {"host": "localhost:8000"}
    for name, value in aws.headers.items():
        headers[name.lower()] = value.decode() if isinstance(value, bytes) else str(value)
    return HttpRequest("POST", "/", "", headers, data)


def unsigned(operation: str, body: bytes = b"{}") -> HttpRequest:
    headers = {
        "host": "localhost:8000",
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "DynamoDB_20120810." + operation,
    }
    return HttpRequest("POST", "/", "", headers, body)


def header(response: HttpResponse, name: bytes) -> bytes | None:
    for line in response.headers.split(b"\r\n"):
        key, _, value = line.partition(b": ")
        if key.lower() == name.lower():
            return value
    return None


def error_of(response: HttpResponse) -> tuple[str, str]:
    """(error type after '#', message) of a well-formed DynamoDB error answer. The
    service framework's SerializationException spells its text "Message", every other
    error "message"."""
    assert response.status >= 400
    body = orjson.loads(response.body)
    namespace, _, code = body["__type"].partition("#")
    assert namespace and code
    key = "Message" if code == "SerializationException" else "message"
    # An error without text (UnknownOperationException, unparseable JSON) has no
    # message member at all, as DynamoDB answers them.
    assert set(body) <= {"__type", key}
    assert isinstance(body.get(key, ""), str)
    assert header(response, b"x-amz-crc32") == str(zlib.crc32(response.body)).encode()
    assert header(response, b"content-type") == b"application/x-amz-json-1.0"
    return code, str(body.get(key, ""))


async def test_an_unsigned_request_for_an_unknown_target_is_an_authentication_error(app: DynamoApp) -> None:
    # DynamoDB authenticates before it looks at the operation.
    response = await app(unsigned("FlyToTheMoon"))
    assert response.status == 400
    assert error_of(response)[0] == "MissingAuthenticationTokenException"


async def test_an_unknown_key_for_an_unknown_target_is_unrecognized_client(app: DynamoApp) -> None:
    response = await app(signed("FlyToTheMoon", {}, credential=UNKNOWN))
    assert error_of(response)[0] == "UnrecognizedClientException"


async def test_a_signed_request_for_an_unknown_target_is_unknown_operation(app: DynamoApp) -> None:
    response = await app(signed("FlyToTheMoon", {}))
    assert error_of(response)[0] == "UnknownOperationException"


async def test_a_target_without_the_dynamodb_prefix_is_unknown(app: DynamoApp) -> None:
    response = await app(signed("ListTables", {}, target_prefix="DynamoDB_20991231."))
    assert error_of(response)[0] == "UnknownOperationException"


async def test_a_request_without_target_is_unknown_operation(app: DynamoApp) -> None:
    request = signed("", {}, target_prefix="")
    assert error_of(await app(request))[0] == "UnknownOperationException"


async def test_methods_other_than_post_and_get_are_unknown_operations(app: DynamoApp) -> None:
    request = signed("ListTables", {})
    request.method = "PUT"
    assert error_of(await app(request))[0] == "UnknownOperationException"


async def test_a_request_without_authentication_is_refused(app: DynamoApp) -> None:
    response = await app(unsigned("ListTables"))
    assert response.status == 400
    assert error_of(response) == (
        "MissingAuthenticationTokenException",
        "Request is missing Authentication Token",
    )


async def test_an_unknown_access_key_is_unrecognized(app: DynamoApp) -> None:
    response = await app(signed("ListTables", {}, credential=UNKNOWN))
    assert error_of(response)[0] == "UnrecognizedClientException"


async def test_a_body_altered_after_signing_fails_the_signature(app: DynamoApp) -> None:
    request = signed("ListTables", {})
    request.body = b'{"Limit": 5}'
    assert error_of(await app(request))[0] == "InvalidSignatureException"


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"])
async def test_a_body_that_is_not_a_json_object_is_a_serialization_error(app: DynamoApp, body: bytes) -> None:
    response = await app(signed("ListTables", body))
    assert response.status == 400
    assert error_of(response)[0] == "SerializationException"


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe"])
async def test_a_body_that_is_not_json_is_a_serialization_error_without_a_message(
    app: DynamoApp, body: bytes
) -> None:
    response = await app(signed("ListTables", body))
    assert orjson.loads(response.body) == {"__type": "com.amazon.coral.service#SerializationException"}


async def test_an_empty_body_is_an_empty_request(app: DynamoApp) -> None:
    response = await app(signed("ListTables", b""))
    assert response.status == 200
    assert orjson.loads(response.body) == {"TableNames": []}


async def test_a_table_outside_the_credentials_permissions_is_access_denied(app: DynamoApp) -> None:
    response = await app(signed("DescribeTable", {"TableName": "Payroll"}, credential=LIMITED))
    assert response.status == 400
    code, message = error_of(response)
    assert code == "AccessDeniedException"
    assert message == (
        "User: orders-service is not authorized to perform: dynamodb:DescribeTable "
        "on resource: arn:aws:dynamodb:us-east-1:123456789012:table/Payroll"
    )
    assert orjson.loads(response.body)["__type"] == "com.amazon.coral.service#AccessDeniedException"


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("ExecuteStatement", {"Statement": 'SELECT * FROM "Payroll"'}),
        # An attribute named FROM must not pass for the table.
        (
            "ExecuteStatement",
            {"Statement": 'SELECT a.from, from FROM "Payroll" WHERE pk = ?', "Parameters": [{"S": "x"}]},
        ),
        ("ExecuteStatement", {"Statement": "UPDATE Payroll SET salary = 1 WHERE pk = 'me'"}),
        (
            "BatchExecuteStatement",
            {
                "Statements": [
                    {"Statement": "SELECT * FROM Orders WHERE pk = 'a'"},
                    {"Statement": "SELECT * FROM Payroll WHERE pk = 'b'"},
                ]
            },
        ),
        # A transaction's actions each name a table.
        (
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": "Orders", "Item": {"pk": {"S": "a"}}}},
                    {"Update": {"TableName": "Payroll", "Key": {"pk": {"S": "me"}}, "UpdateExpression": "SET s = :s",
                                "ExpressionAttributeValues": {":s": {"N": "1"}}}},
                ]
            },
        ),
        (
            "TransactGetItems",
            {"TransactItems": [{"Get": {"TableName": "Payroll", "Key": {"pk": {"S": "me"}}}}]},
        ),
        # A backup, a restore, an import or an export of a table outside them.
        ("CreateBackup", {"TableName": "Payroll", "BackupName": "nightly"}),
        (
            "RestoreTableFromBackup",
            {"TargetTableName": "Payroll",
             "BackupArn": "arn:aws:dynamodb:us-east-1:123456789012:table/Orders/backup/01700000000000-abcdef12"},
        ),
        (
            "ImportTable",
            {"S3BucketSource": {"S3Bucket": "bucket"}, "InputFormat": "DYNAMODB_JSON",
             "TableCreationParameters": {**CREATE_ORDERS, "TableName": "Payroll"}},
        ),
        ("ExportTableToPointInTime", {"TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/Payroll",
                                      "S3Bucket": "bucket"}),
    ],
)  # fmt: skip
async def test_a_statement_or_transaction_on_a_table_outside_the_permissions_is_access_denied(
    app: DynamoApp, operation: str, body: dict[str, Any]
) -> None:
    code, message = error_of(await app(signed(operation, body, credential=LIMITED)))
    assert code == "AccessDeniedException"
    assert message.endswith(
        f"dynamodb:{operation} on resource: arn:aws:dynamodb:us-east-1:123456789012:table/Payroll"
    )


async def test_a_permitted_table_reaches_the_operation(app: DynamoApp) -> None:
    response = await app(signed("DescribeTable", {"TableName": "Orders"}, credential=LIMITED))
    assert error_of(response) == (
        "ResourceNotFoundException",
        "Requested resource not found: Table: Orders not found",
    )


async def test_a_validation_failure_is_rendered_with_dynamodbs_message(app: DynamoApp) -> None:
    response = await app(signed("DescribeTable", {"TableName": "ab"}))
    assert error_of(response) == (
        "ValidationException",
        "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3",
    )


async def test_an_unexpected_failure_is_a_500_internal_server_error(
    app: DynamoApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(ctx: RouterContext, body: Any) -> dict[str, Any]:
        raise RuntimeError("bug")

    monkeypatch.setitem(app_module.OPERATIONS, "ListTables", broken)
    response = await app(signed("ListTables", {}))
    assert response.status == 500
    assert error_of(response) == ("InternalServerError", "Internal server error")


async def test_create_describe_and_list_a_table_through_the_front_door(app: DynamoApp) -> None:
    created = await app(signed("CreateTable", CREATE_ORDERS))
    assert created.status == 200, created.body
    assert header(created, b"x-amz-crc32") == str(zlib.crc32(created.body)).encode()
    description = orjson.loads(created.body)["TableDescription"]
    assert description["TableName"] == "Orders"
    assert description["TableStatus"] == "CREATING"

    described = await app(signed("DescribeTable", {"TableName": "Orders"}, credential=LIMITED))
    assert orjson.loads(described.body)["Table"]["TableName"] == "Orders"

    listed = await app(signed("ListTables", {}, credential=LIMITED))
    assert orjson.loads(listed.body) == {"TableNames": ["Orders"]}

    again = await app(signed("CreateTable", CREATE_ORDERS))
    assert error_of(again) == ("ResourceInUseException", "Table already exists: Orders")


async def test_item_operations_on_a_table_still_creating_are_resource_not_found(app: DynamoApp) -> None:
    await app(signed("CreateTable", CREATE_ORDERS))
    response = await app(signed("PutItem", {"TableName": "Orders", "Item": {"pk": {"S": "a"}}}))
    assert error_of(response) == ("ResourceNotFoundException", "Requested resource not found")


async def test_every_answer_has_its_own_request_id(app: DynamoApp) -> None:
    ids = {header(await app(signed("ListTables", {})), b"x-amzn-RequestId") for _ in range(5)}
    ids.add(header(await app(unsigned("Nope")), b"x-amzn-RequestId"))
    assert all(re.fullmatch(rb"[A-Z0-9]{52}", i) for i in ids), ids  # DynamoDB's shape
    assert None not in ids
    assert len(ids) == 6


async def test_the_health_check_answers_get_on_the_root_path(app: DynamoApp) -> None:
    response = await app(HttpRequest("GET", "/", "", {"host": "db.local:8000"}, b""))
    assert (response.status, response.body.strip()) == (200, b"healthy: db.local:8000")


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/abc"), ("GET", "/health"), ("PUT", "/"), ("DELETE", "/"), ("HEAD", "/x")]
)
async def test_other_paths_and_methods_are_not_found_with_a_json_error(
    app: DynamoApp, method: str, path: str
) -> None:
    response = await app(HttpRequest(method, path, "", {"host": "db.local:8000"}, b""))
    assert response.status == 404
    assert error_of(response)[0] == "UnknownOperationException"


async def test_describe_endpoints_answers_the_configured_address(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    save(path, [ADMIN])
    settings = RouterSettings(endpoint_address="db.example:8000")
    store = MemoryControlStore()
    app = DynamoApp(RouterContext(TableCache(store), store, StorageClient(), settings), CredentialStore(path))
    response = await app(signed("DescribeEndpoints", {}))
    assert response.status == 200
    assert orjson.loads(response.body) == {
        "Endpoints": [{"Address": "db.example:8000", "CachePeriodInMinutes": 1440}]
    }


def test_a_wildcard_listen_address_is_advertised_as_the_machines_name() -> None:
    import socket

    from partita.router.context import endpoint_address

    assert endpoint_address("127.0.0.1", 8000) == "127.0.0.1:8000"
    assert endpoint_address("0.0.0.0", 8000) == f"{socket.getfqdn()}:8000"


async def test_a_wrongly_typed_member_is_caught_before_the_operation_runs(app: DynamoApp) -> None:
    response = await app(signed("CreateTable", {**CREATE_ORDERS, "BillingMode": [[["PAY_PER_REQUEST"]]]}))
    assert error_of(response) == ("SerializationException", "Start of list found where not expected")
    assert app.ctx.tables.get("Orders") is None


async def test_constraint_violations_are_reported_together_before_the_operation_runs(app: DynamoApp) -> None:
    body = {
        **CREATE_ORDERS,
        "BillingMode": "FREE",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "PRIMARY"}],
    }
    code, message = error_of(await app(signed("CreateTable", body)))
    assert code == "ValidationException"
    assert message.startswith("2 validation errors detected: ")
