"""Which coding an answer is compressed with, from the request's Accept-Encoding, as
DynamoDB reads the header (the cases Alternator's tests recorded against DynamoDB)."""

from __future__ import annotations

import gzip
import zlib

import pytest

from partita.router.response_encoding import chosen_encoding, compressed


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("identity", None),
        ("br", None),
        ("zstd", None),
        ("compress", None),
        ("x-gzip", None),
        ("gzip", "gzip"),
        ("deflate", "deflate"),
        ("gzip, deflate", "gzip"),
        ("br, identity, deflate, gzip", "deflate"),  # the first listed of equal quality
        ("GZIP, identity", "gzip"),
        ("dog, gzip ,, cat", "gzip"),
        ("gzip;q=0.8, deflate;q=0.5", "gzip"),
        ("br, gzip;q=0, deflate; q = 0.5 , identity;q=0", "deflate"),
        ("*", "gzip"),
        ("*, deflate;q=0.5", "gzip"),
        ("*, deflate", "deflate"),  # listed beats what * stands for
        ("*, identity", "gzip"),
        ("*, gzip;q=0.5", "deflate"),
        ("gzip ;q=0", None),
        ("identity;q=0", None),
        ("*;q=0", None),
        ("*;q=0.5,identity", "gzip"),
        ("gzip;q=0.5,identity;q=0.8", "gzip"),
        ("br;q=0.8,identity;q=0.5,*;q=0", None),
        ('"gzip"', None),
        ("gzip br", None),
        ("gzip:q=1", None),
        ("deflate;q=0.5, gzip;q=31", "gzip"),  # above 1 counts as 1
        ("gzip;q=31,deflate;q=51", "gzip"),
        ("deflate;q=0.5, gzip;q=0.2", "deflate"),
        ("deflate;q=0.5, gzip;q=1;q=0.2", "gzip"),  # the first q= counts
        ("deflate;q=0.5,gzip;q=0.", "deflate"),
        ("deflate;q=0.5,gzip;q=0.x", "gzip"),  # does not parse: 1
        ("deflate;q=0.5,gzip;q=0. x", "gzip"),
        ("deflate;q=-0.5,gzip;q=0.2", "gzip"),
        ("gzip;q= 0;q=1", None),
        ("gzip;q =0;q=1", "gzip"),  # "q =" is no q=
        ("gzip; q=0;q=1", None),
        ("gzip;nq=0;q=1", None),  # "nq=0" holds a q=
        ("gzip;q=0, gzip;q=1, gzip;q=0", "gzip"),  # listed twice: the highest
        ("br,identity;q=0.5,gzip;q=0.0001", "gzip"),
    ],
)
def test_the_coding_is_chosen_as_dynamodb_reads_accept_encoding(
    header: str | None, expected: str | None
) -> None:
    assert chosen_encoding(header) == expected


def test_compressed_answers_decode_with_the_standard_codecs() -> None:
    body = b'{"Item":{"x":{"S":"' + b"x" * 10_000 + b'"}}}'
    assert gzip.decompress(compressed(body, "gzip")) == body
    assert zlib.decompress(compressed(body, "deflate")) == body
