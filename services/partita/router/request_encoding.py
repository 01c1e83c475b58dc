"""Compressed request bodies (`Content-Encoding`): the AWS SDKs' request compression
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-compression.html; botocore's
`request_min_compression_size_bytes`) sends a gzip'd body with its headers in the clear.

What DynamoDB does, as recorded by Alternator's tests against it: `gzip` (several
members concatenated, as RFC 1952 allows) and `deflate` (a zlib stream, RFC 1950: one
only) are read; a body that does not decode, an empty one, or an encoding it does not
know is an InternalServerError (500); a body that decodes past the request size limit is
refused however small it came. The signature covers the bytes sent, so the body is
decoded after authentication.
"""

from __future__ import annotations

import zlib

from partita.common import errors
from partita.common.errors import DynamoError

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_ZLIB_WBITS = zlib.MAX_WBITS
# Codings that leave the body as it is. The AWS SDK for Java 1.x labels its JSON bodies
# `amz-1.0`, which DynamoDB accepts.
_UNCODED = frozenset({"", "identity", "amz-1.0"})
# Decoded in pieces so a bomb is stopped at the limit, not after it filled memory.
_CHUNK = 1024 * 1024


def decoded_body(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body as the client meant it. `content_encoding`: the header's value (codings
    applied in the order listed, so undone in reverse); `limit`: the largest decoded
    body accepted."""
    if not content_encoding:
        return body
    for coding in reversed([c.strip().lower() for c in content_encoding.split(",")]):
        if coding in _UNCODED:
            continue
        if coding in ("gzip", "x-gzip"):
            body = _inflate(body, _GZIP_WBITS, limit, members=True)
        elif coding == "deflate":
            body = _inflate(body, _ZLIB_WBITS, limit, members=False)
        else:
            raise errors.undecodable_body()
    return body


def too_large() -> DynamoError:
    return DynamoError(
        "SerializationException", "Request size exceeded", namespace=errors.SERVICE_NS, status=413
    )


def _inflate(data: bytes, wbits: int, limit: int, members: bool) -> bytes:
    """Every stream of `data` decoded (gzip: one member after another; zlib: exactly
    one). Anything that is not a whole stream, junk after the last one included, is an
    InternalServerError."""
    if not data:
        raise errors.undecodable_body()
    out: list[bytes] = []
    size = 0
    while data:
        stream = zlib.decompressobj(wbits)
        pending = data
        try:
            while True:
                piece = stream.decompress(pending, _CHUNK)
                size += len(piece)
                if size > limit:
                    raise too_large()
                out.append(piece)
                pending = stream.unconsumed_tail
                # Output held inside the stream still comes with no input left; a call
                # that gives nothing and has nothing left to read is the end of the data.
                if stream.eof or (not piece and not pending):
                    break
        except zlib.error:
            raise errors.undecodable_body() from None
        if not stream.eof:
            raise errors.undecodable_body()  # truncated
        data = stream.unused_data
        if data and not members:
            raise errors.undecodable_body()
    return b"".join(out)
