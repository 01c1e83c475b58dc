"""Compressed answers: with an Accept-Encoding that allows gzip or deflate, DynamoDB
compresses answers of more than 4 KB (and never smaller ones); without one it sends
them as they are (DynamoDB's behaviour as Alternator's tests record it). The client
here decompresses before botocore parses, as an SDK that asks for compression does."""

from __future__ import annotations

import gzip
import http.client
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from tests.compat.helpers import PYTESTMARK, create_table, key

pytestmark = PYTESTMARK


@contextmanager
def _accepting(ddb: Any, accept: str | None) -> Iterator[list[dict[str, Any]]]:
    """Requests carry `accept`; each answer's coding and sizes are recorded, and a
    compressed body is decompressed before botocore parses it."""
    seen: list[dict[str, Any]] = []

    def add_header(params: dict[str, Any], **_: Any) -> None:
        if accept is not None:
            params["headers"]["Accept-Encoding"] = accept

    def decompress(response_dict: dict[str, Any], **_: Any) -> None:
        coding = response_dict["headers"].get("Content-Encoding")
        sent = len(response_dict["body"])
        if coding == "gzip":
            response_dict["body"] = gzip.decompress(response_dict["body"])
        elif coding == "deflate":
            response_dict["body"] = zlib.decompress(response_dict["body"])
        seen.append({"coding": coding, "sent": sent, "size": len(response_dict["body"])})

    events = ddb.meta.events
    events.register("before-call", add_header)
    events.register("before-parse", decompress)
    try:
        yield seen
    finally:
        events.unregister("before-call", add_header)
        events.unregister("before-parse", decompress)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_an_answer_over_4_kb_comes_compressed_when_accepted(ddb: Any, table_s: str, coding: str) -> None:
    k = {"pk": {"S": key()}}
    big = "x" * 2048
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": big}, "b": {"S": big}, "c": {"S": big}})
    with _accepting(ddb, coding) as seen:
        got = ddb.get_item(TableName=table_s, Key=k, ProjectionExpression="a, b, c")["Item"]
        assert got["a"]["S"] == got["b"]["S"] == got["c"]["S"] == big
        assert seen[-1]["coding"] == coding and seen[-1]["size"] > 30 * seen[-1]["sent"]
        # One attribute: under 4 KB, sent as it is.
        assert ddb.get_item(TableName=table_s, Key=k, ProjectionExpression="a")["Item"]["a"]["S"] == big
        assert seen[-1]["coding"] is None


@pytest.mark.parametrize("accept", [None, "identity", "br", "gzip;q=0"])
def test_an_answer_is_sent_as_it_is_unless_a_coding_is_accepted(
    ddb: Any, table_s: str, accept: str | None
) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "y" * 8000}})
    with _accepting(ddb, accept) as seen:
        assert ddb.get_item(TableName=table_s, Key=k)["Item"]["a"]["S"] == "y" * 8000
        assert seen[-1]["coding"] is None


def test_a_large_answer_comes_compressed_whole(ddb: Any) -> None:
    # Past 64 KB the router compresses off its event loop: the answer is the same.
    name = create_table(ddb, [("pk", "S")], prefix="gz")
    values = {f"item-{i}": "".join(chr(65 + (i * 7 + j * 13) % 26) for j in range(30_000)) for i in range(4)}
    for pk, value in values.items():
        ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "v": {"S": value}})
    with _accepting(ddb, "gzip") as seen:
        items = ddb.scan(TableName=name, ConsistentRead=True)["Items"]
    assert {i["pk"]["S"]: i["v"]["S"] for i in items} == values
    assert seen[-1]["coding"] == "gzip" and seen[-1]["size"] > 120_000


@pytest.mark.parametrize(
    ("accept_headers", "coding"),
    [(["gzip", "identity"], "gzip"), (["identity", "gzip"], None), (["", "gzip"], None)],
    ids=["gzip-first", "identity-first", "empty-first"],
)
def test_of_several_accept_encoding_headers_the_first_decides(
    cluster: Any, ddb: Any, table_s: str, accept_headers: list[str], coding: str | None
) -> None:
    # DynamoDB's reading, as Alternator's tests record it (a client sending two such
    # headers needs raw HTTP: the SDKs send one).
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "z" * 8000}})
    body = orjson.dumps({"TableName": table_s, "Key": k})
    conn = http.client.HTTPConnection(urlsplit(cluster.endpoint).netloc, timeout=30)
    try:
        conn.putrequest("POST", "/", skip_host=True, skip_accept_encoding=True)
        for name, value in cluster.signed_headers("GetItem", body).items():
            conn.putheader(name, value)
        for value in accept_headers:
            conn.putheader("Accept-Encoding", value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        payload = response.read()
        assert response.status == 200
        assert response.getheader("Content-Encoding") == coding
    finally:
        conn.close()
    item = orjson.loads(gzip.decompress(payload) if coding == "gzip" else payload)["Item"]
    assert item["a"]["S"] == "z" * 8000
