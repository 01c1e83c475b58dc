"""Compressed request bodies, as the AWS SDKs send them (`Content-Encoding: gzip`, the
SDKs' request compression) and as DynamoDB reads them: gzip (members concatenated too)
and deflate are read; a body that does not decode, an empty one and an unknown coding
are a 500 that writes nothing; a body that decodes past the request size limit is
refused however small it came. (DynamoDB's behaviour as Alternator's tests record it.)
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import orjson
import pytest

from tests.compat.helpers import PYTESTMARK, key

pytestmark = PYTESTMARK


def _put_body(table: str, pk: str, value: str = "v") -> bytes:
    return orjson.dumps({"TableName": table, "Item": {"pk": {"S": pk}, "v": {"S": value}}})


def _post(cluster: Any, body: bytes, encoding: str) -> tuple[int, dict[str, Any]]:
    # The signature covers the bytes sent; the coding header is not part of it (as in
    # Alternator's tests), so one signed request can carry any coding.
    headers = cluster.signed_headers("PutItem", body)
    headers["Content-Encoding"] = encoding
    status, answer = cluster.post(body, headers)
    return int(status), dict(answer)


def _stored(ddb: Any, table: str, pk: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = ddb.get_item(
        TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True
    ).get("Item")
    return item


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        # Two gzip members, one after the other: RFC 1952 allows it.
        ("gzip", lambda body: gzip.compress(body[:10]) + gzip.compress(body[10:])),
    ],
    ids=["gzip", "deflate", "two-gzip-members"],
)
def test_a_compressed_put_item_is_read_and_written(
    cluster: Any, ddb: Any, table_s: str, encoding: str, encode: Any
) -> None:
    pk = key()
    status, answer = _post(cluster, encode(_put_body(table_s, pk, "compressed")), encoding)
    assert status == 200, answer
    assert _stored(ddb, table_s, pk) == {"pk": {"S": pk}, "v": {"S": "compressed"}}


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", lambda body: body),  # not gzip at all
        ("gzip", lambda body: gzip.compress(body)[:-1]),  # its last byte missing
        ("gzip", lambda body: gzip.compress(body) + b"junk"),  # junk after the member
        ("deflate", lambda body: body),
        ("deflate", lambda body: zlib.compress(body[:10]) + zlib.compress(body[10:])),  # two streams
        ("garbage", lambda body: body),  # a coding DynamoDB does not know
    ],
    ids=["plain-as-gzip", "truncated-gzip", "gzip-and-junk", "plain-as-deflate", "two-deflates", "unknown"],
)
def test_a_body_that_does_not_decode_is_a_500_and_writes_nothing(
    cluster: Any, ddb: Any, table_s: str, encoding: str, encode: Any
) -> None:
    pk = key()
    status, answer = _post(cluster, encode(_put_body(table_s, pk)), encoding)
    assert status == 500, answer
    assert answer["__type"].endswith("#InternalServerError")
    assert _stored(ddb, table_s, pk) is None


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_an_empty_body_is_no_compressed_request(cluster: Any, encoding: str) -> None:
    status, _ = _post(cluster, b"", encoding)
    assert status == 500


def test_a_small_body_that_decodes_past_the_request_limit_is_refused(
    cluster: Any, ddb: Any, table_s: str
) -> None:
    pk = key()
    padded = _put_body(table_s, pk)[:-1] + b" " * (20 * 1024 * 1024) + b"}"
    compressed = gzip.compress(padded)
    assert len(compressed) < 100_000
    status, _ = _post(cluster, compressed, "gzip")
    assert status in (413, 500)  # Alternator answers 413, DynamoDB 500
    assert _stored(ddb, table_s, pk) is None


@pytest.mark.partita_only
def test_the_java_sdks_amz_label_is_no_compression(cluster: Any, ddb: Any, table_s: str) -> None:
    pk = key()
    status, answer = _post(cluster, _put_body(table_s, pk), "amz-1.0")
    assert status == 200, answer
    assert _stored(ddb, table_s, pk) is not None


def test_boto3s_request_compression_reaches_the_table(cluster: Any, table_s: str) -> None:
    # botocore compresses an operation's requests only when the service model says the
    # operation takes them (DynamoDB's says none do yet): the model is told so here, as
    # a future SDK would be, with the size threshold lowered so every request qualifies.
    from botocore.config import Config

    client = cluster.client(
        config=Config(request_min_compression_size_bytes=1, retries={"total_max_attempts": 1})
    )
    put = client.meta.service_model.operation_model("PutItem")
    put._operation_model["requestcompression"] = {"encodings": ["gzip"]}
    sent: list[str] = []

    def record(request: Any, **_: Any) -> None:
        coding = request.headers.get("Content-Encoding", "")
        sent.append(coding.decode() if isinstance(coding, bytes) else coding)

    client.meta.events.register("before-send.dynamodb.PutItem", record)
    pk = key()
    client.put_item(TableName=table_s, Item={"pk": {"S": pk}, "v": {"S": "x" * 2000}})
    assert sent == ["gzip"]
    item = client.get_item(TableName=table_s, Key={"pk": {"S": pk}}, ConsistentRead=True)["Item"]
    assert item["v"] == {"S": "x" * 2000}
