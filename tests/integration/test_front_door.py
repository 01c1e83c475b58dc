"""Authentication, credentials management and malformed input against the real router."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-front-door")]


def _post(cluster: Cluster, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    return cluster.post(body, headers, timeout=10)


def _signed(cluster: Cluster, target: str, body: bytes, **kwargs: Any) -> dict[str, str]:
    return cluster.signed_headers(target, body, **kwargs)


def _type(body: dict[str, Any]) -> str:
    return str(body["__type"]).split("#")[1]


def test_missing_authentication_token(cluster: Cluster) -> None:
    status, body = _post(
        cluster,
        b"{}",
        {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0"},
    )
    assert status == 400
    assert _type(body) == "MissingAuthenticationTokenException"
    assert body["message"] == "Request is missing Authentication Token"


def test_incomplete_signature(cluster: Cluster) -> None:
    status, body = _post(
        cluster,
        b"{}",
        {
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "Authorization": "AWS4-HMAC-SHA256 Credential=x",
            "X-Amz-Date": "20260101T000000Z",
        },
    )
    assert (status, _type(body)) == (400, "IncompleteSignatureException")


def test_wrong_secret_is_invalid_signature(cluster: Cluster) -> None:
    body = b"{}"
    status, out = _post(cluster, body, _signed(cluster, "ListTables", body, secret="x" * 40))
    assert (status, _type(out)) == (400, "InvalidSignatureException")


def test_expired_signature_is_invalid_signature(cluster: Cluster) -> None:
    body = b"{}"
    status, out = _post(cluster, body, _signed(cluster, "ListTables", body, amz_date="20200101T000000Z"))
    assert (status, _type(out)) == (400, "InvalidSignatureException")
    assert out["message"].startswith("Signature expired: 20200101T000000Z is now earlier than")


def test_unknown_access_key_is_unrecognized_client(cluster: Cluster) -> None:
    ddb = cluster.client(aws_access_key_id="AKIAUNKNOWNUNKNOWN00", aws_secret_access_key="s" * 40)
    with pytest.raises(ClientError) as err:
        ddb.list_tables()
    assert err.value.response["Error"]["Code"] == "UnrecognizedClientException"


def test_unknown_operation(cluster: Cluster) -> None:
    body = b"{}"
    status, out = _post(cluster, body, _signed(cluster, "FlyToTheMoon", body))
    assert (status, _type(out)) == (400, "UnknownOperationException")


@pytest.mark.parametrize("payload", [b"{", b"[]", b"\xff\xfe", b'{"TableName": 5}', b"null", b'"str"'])
def test_malformed_json_is_serialization_exception(cluster: Cluster, payload: bytes) -> None:
    status, out = _post(cluster, payload, _signed(cluster, "DescribeTable", payload))
    assert status == 400
    assert _type(out) in ("SerializationException", "ValidationException")


def test_shape_errors_use_dynamodb_wording(cluster: Cluster) -> None:
    body = json.dumps({"TableName": "a b", "KeySchema": [], "AttributeDefinitions": []}).encode()
    status, out = _post(cluster, body, _signed(cluster, "CreateTable", body))
    assert status == 400
    assert out["__type"] == "com.amazon.coral.validate#ValidationException"
    assert out["message"].startswith("2 validation errors detected: ")
    assert "Member must have length greater than or equal to 1" in out["message"]
    assert (
        "Value 'a b' at 'tableName' failed to satisfy constraint: Member must satisfy regular "
        "expression pattern: [a-zA-Z0-9_.-]+" in out["message"]
    )


def test_credentials_added_and_removed_take_effect_without_restart(cluster: Cluster) -> None:
    def cli(*args: str) -> Any:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "partita.cli.main",
                "credentials",
                *args,
                "--data-dir",
                str(cluster.data_dir),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout

    added = json.loads(cli("add", "--name", "team-b", "--json"))
    key, secret = added["access_key_id"], added["secret_access_key"]
    ddb = cluster.client(aws_access_key_id=key, aws_secret_access_key=secret)
    deadline = time.monotonic() + 5
    while True:  # the router re-reads the file at most once a second
        try:
            ddb.list_tables()
            break
        except ClientError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    cli("remove", key)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            ddb.list_tables()
        except ClientError as err:
            assert err.response["Error"]["Code"] == "UnrecognizedClientException"
            break
        time.sleep(0.2)
    else:
        pytest.fail("removed key still accepted")


def test_table_permissions_are_enforced(cluster: Cluster) -> None:
    allowed = f"perm-{uuid.uuid4().hex[:6]}"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "partita.cli.main",
            "credentials",
            "add",
            "--name",
            "scoped",
            "--tables",
            allowed,
            "--json",
            "--data-dir",
            str(cluster.data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    added = json.loads(out.stdout)
    admin = cluster.client()
    for name in (allowed, allowed + "-other"):
        admin.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        wait_active(admin, name)
    scoped = cluster.client(
        aws_access_key_id=added["access_key_id"], aws_secret_access_key=added["secret_access_key"]
    )
    time.sleep(1.2)  # credentials file reload interval
    scoped.put_item(TableName=allowed, Item={"pk": {"S": "ok"}})
    with pytest.raises(ClientError) as err:
        scoped.put_item(TableName=allowed + "-other", Item={"pk": {"S": "no"}})
    assert err.value.response["Error"]["Code"] == "AccessDeniedException"
    assert "Item" not in admin.get_item(TableName=allowed + "-other", Key={"pk": {"S": "no"}})


def test_router_survives_garbage_connections(cluster: Cluster) -> None:
    import socket

    for junk in (
        b"\x00\x01\x02garbage\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
        b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", cluster.ports["router"]), timeout=5) as s:
            s.sendall(junk)
            with contextlib.suppress(OSError):
                s.recv(1024)
    assert cluster.health().startswith("healthy:")
    assert cluster.client().list_tables()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_table_permissions_cover_batches_and_tags(cluster: Cluster) -> None:
    allowed = f"permb-{uuid.uuid4().hex[:6]}"
    other = allowed + "-other"
    out = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", "credentials", "add", "--name", "scoped-batch", "--tables",
         allowed, "--json", "--data-dir", str(cluster.data_dir)],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    added = json.loads(out.stdout)
    admin = cluster.client()
    for name in (allowed, other):
        admin.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        wait_active(admin, name)
    admin.put_item(TableName=other, Item={"pk": {"S": "secret"}})
    scoped = cluster.client(
        aws_access_key_id=added["access_key_id"], aws_secret_access_key=added["secret_access_key"]
    )
    time.sleep(1.2)  # credentials file reload interval
    scoped.batch_write_item(RequestItems={allowed: [{"PutRequest": {"Item": {"pk": {"S": "ok"}}}}]})
    denied = [
        lambda: scoped.batch_get_item(RequestItems={other: {"Keys": [{"pk": {"S": "secret"}}]}}),
        lambda: scoped.batch_write_item(
            RequestItems={
                allowed: [{"PutRequest": {"Item": {"pk": {"S": "mixed"}}}}],
                other: [{"DeleteRequest": {"Key": {"pk": {"S": "secret"}}}}],
            }
        ),
        lambda: scoped.list_tags_of_resource(
            ResourceArn=admin.describe_table(TableName=other)["Table"]["TableArn"]
        ),
    ]
    for call in denied:
        with pytest.raises(ClientError) as err:
            call()
        assert err.value.response["Error"]["Code"] == "AccessDeniedException"
    # The refused mixed batch wrote nothing, and the other table's item is intact.
    assert "Item" not in admin.get_item(TableName=allowed, Key={"pk": {"S": "mixed"}}, ConsistentRead=True)
    assert "Item" in admin.get_item(TableName=other, Key={"pk": {"S": "secret"}}, ConsistentRead=True)
