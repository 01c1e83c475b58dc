"""Helpers of the compatibility suite: tables, keys, errors, paging."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import wait_active

PYTESTMARK = [pytest.mark.integration, pytest.mark.xdist_group("compat")]


def create_table(
    ddb: Any,
    schema: list[tuple[str, str]],
    *,
    prefix: str = "compat",
    definitions: list[tuple[str, str]] | None = None,
    **extra: Any,
) -> str:
    """A new ACTIVE table; `schema` is [(partition key, type), (sort key, type)?], and
    `definitions` the other attributes its indexes key on."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    kinds = ["HASH", "RANGE"]
    kwargs: dict[str, Any] = {"BillingMode": "PAY_PER_REQUEST"}
    kwargs.update(extra)
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": a, "KeyType": kinds[i]} for i, (a, _) in enumerate(schema)],
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": t} for a, t in [*schema, *(definitions or [])]
        ],
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
    status, answer = cluster.post(body, cluster.signed_headers(operation, body))
    return int(status), dict(answer)


def error_type(body: dict[str, Any]) -> str:
    return str(body.get("__type", "")).split("#")[-1]
