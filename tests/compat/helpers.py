"""Helpers of the compatibility suite: tables, keys, errors, paging."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import wait_active

PYTESTMARK = [pytest.mark.integration, pytest.mark.xdist_group("compat")]


def create_table(ddb: Any, schema: list[tuple[str, str]], *, prefix: str = "compat", **extra: Any) -> str:
    """A new ACTIVE table; `schema` is [(partition key, type), (sort key, type)?]."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    kinds = ["HASH", "RANGE"]
    kwargs: dict[str, Any] = {"BillingMode": "PAY_PER_REQUEST"}
    kwargs.update(extra)
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": a, "KeyType": kinds[i]} for i, (a, _) in enumerate(schema)],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in schema],
        **kwargs,
    )
    wait_active(ddb, name, timeout=30)
    return name


def key() -> str:
    """A fresh partition key value, so tests sharing a table never meet."""
    return uuid.uuid4().hex


def error(call: Any, **kwargs: Any) -> tuple[str, str]:
    """(code, message) of the ClientError `call(**kwargs)` raises."""
    with pytest.raises(ClientError) as err:
        call(**kwargs)
    return err.value.response["Error"]["Code"], err.value.response["Error"]["Message"]


def client_error(call: Any, **kwargs: Any) -> dict[str, Any]:
    """The whole error response of a failing call (for fields beyond code and message)."""
    with pytest.raises(ClientError) as err:
        call(**kwargs)
    response: dict[str, Any] = err.value.response
    return response


def validation(call: Any, **kwargs: Any) -> str:
    """The message of the ValidationException `call(**kwargs)` raises."""
    code, message = error(call, **kwargs)
    assert code == "ValidationException", (code, message)
    return message


def all_pages(call: Any, **kwargs: Any) -> tuple[list[dict[str, Any]], int]:
    """Every item of a Query or Scan followed through LastEvaluatedKey, and the page count."""
    items: list[dict[str, Any]] = []
    pages = 0
    while True:
        out = call(**kwargs)
        pages += 1
        items.extend(out.get("Items", []))
        last = out.get("LastEvaluatedKey")
        if last is None:
            return items, pages
        kwargs["ExclusiveStartKey"] = last


def raw_call(cluster: Any, operation: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """POST a signed request with an arbitrary body (what boto3 would refuse to send)."""
    import http.client
    import json
    import time

    from partita.common.sigv4 import sign_request

    cred = cluster.credentials()
    host = f"127.0.0.1:{cluster.ports['router']}"
    headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": f"DynamoDB_20120810.{operation}",
        "Host": host,
    }
    headers.update(
        sign_request(
            method="POST",
            host=host,
            path="/",
            query="",
            headers=headers,
            body=body,
            access_key=cred["access_key_id"],
            secret_key=cred["secret_access_key"],
            region="us-east-1",
            amz_date=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        )
    )
    conn = http.client.HTTPConnection("127.0.0.1", cluster.ports["router"], timeout=30)
    try:
        conn.request("POST", "/", body=body, headers=headers)
        response = conn.getresponse()
        payload = response.read()
        return response.status, json.loads(payload) if payload else {}
    finally:
        conn.close()


def error_type(body: dict[str, Any]) -> str:
    return str(body.get("__type", "")).split("#")[-1]
