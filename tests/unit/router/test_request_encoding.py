"""Decoding a compressed request body: the codings DynamoDB reads, the errors it gives
for those it cannot, and the decoded size bounded while it is decoded."""

from __future__ import annotations

import gzip
import zlib

import pytest

from partita.common.errors import DynamoError
from partita.router.request_encoding import decoded_body

BODY = b'{"TableName": "t", "Item": {"pk": {"S": "a"}}}'


def test_no_coding_or_identity_leaves_the_body_as_it_is() -> None:
    for coding in (None, "", "identity", "amz-1.0"):
        assert decoded_body(BODY, coding, 1 << 20) == BODY


def test_codings_listed_one_after_another_are_undone_in_reverse() -> None:
    both = gzip.compress(zlib.compress(BODY))  # deflate first, then gzip
    assert decoded_body(both, "deflate, gzip", 1 << 20) == BODY
    assert decoded_body(gzip.compress(BODY), "GZIP, identity", 1 << 20) == BODY


def test_a_body_decoding_to_the_limit_passes_and_one_byte_more_is_refused_with_413() -> None:
    big = b"x" * (3 * 1024 * 1024 + 5)  # several of the decoder's pieces
    assert decoded_body(gzip.compress(big), "gzip", len(big)) == big
    with pytest.raises(DynamoError) as refused:
        decoded_body(gzip.compress(big), "gzip", len(big) - 1)
    assert refused.value.status == 413


@pytest.mark.parametrize(
    ("body", "coding"),
    [
        (b"", "gzip"),
        (BODY, "gzip"),
        (gzip.compress(BODY)[:-4], "gzip"),
        (gzip.compress(BODY) + b"\x1f", "gzip"),
        (zlib.compress(BODY) + zlib.compress(BODY), "deflate"),
        (BODY, "br"),
    ],
    # Named, not shown: a gzip header carries the time, and workers collecting in
    # different seconds must see the same test ids.
    ids=["empty", "plain-as-gzip", "truncated", "trailing-byte", "two-deflates", "unknown-coding"],
)
def test_what_does_not_decode_is_an_internal_server_error(body: bytes, coding: str) -> None:
    with pytest.raises(DynamoError) as failed:
        decoded_body(body, coding, 1 << 20)
    assert (failed.value.code, failed.value.status) == ("InternalServerError", 500)
    # DynamoDB's 500, yet the request's fault: logged as a rejection, not a failure.
    assert failed.value.client_fault
