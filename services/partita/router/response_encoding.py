"""Compressed answers (`Accept-Encoding`), as DynamoDB gives them.

What DynamoDB does, as recorded by Alternator's tests against it
(`test_compressed_response.py`): an answer of more than 4 KB is compressed with gzip or
deflate (a zlib stream) when the request's Accept-Encoding allows one; smaller answers
never are. Choosing the coding follows DynamoDB's reading of the header, quirks and all:
- elements are split at commas, each a coding (any case) and optional `;` parameters;
  codings other than gzip, deflate and `*` are ignored, `identity` included;
- an element's quality is the value after the first `q=` in its parameters (so `nq=0`
  counts, `q =0` does not), a number up to the next `;`; one that does not parse counts
  as 1, one above 1 as 1, and 0 or less excludes the coding;
- a coding listed twice takes its highest quality; `*` stands for the codings not listed;
- the highest quality wins; on a tie a listed coding beats one `*` stands for, an
  earlier listed one a later one, and gzip deflate.
DynamoDB reads only the first of several Accept-Encoding headers (the signature covers
them all, joined), and so does the router (`http_server.FIRST_ACCEPT_ENCODING`).
"""

from __future__ import annotations

import re
import zlib

# Answers above this many bytes are compressed when the client accepts it.
THRESHOLD_BYTES = 4096
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_LEVEL = 6
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def chosen_encoding(accept_encoding: str | None) -> str | None:
    """ "gzip", "deflate" or None (send the answer as it is)."""
    if not accept_encoding:
        return None
    listed: dict[str, float] = {}  # in the order first listed
    wildcard: float | None = None
    for element in accept_encoding.split(","):
        coding, has_params, params = element.partition(";")
        coding = coding.strip().lower()
        quality = _quality(params) if has_params else 1.0
        if coding in _WBITS:
            listed[coding] = max(quality, listed.get(coding, quality))
        elif coding == "*":
            wildcard = quality if wildcard is None else max(wildcard, quality)
    ranked = [(q, 1, -i, coding) for i, (coding, q) in enumerate(listed.items())]
    if wildcard is not None:
        ranked += [(wildcard, 0, -i, coding) for i, coding in enumerate(_WBITS) if coding not in listed]
    best = max((r for r in ranked if r[0] > 0), default=None)
    return best[3] if best is not None else None


def _quality(params: str) -> float:
    at = params.find("q=")
    if at < 0:
        return 1.0
    text = params[at + 2 :].split(";", 1)[0].strip()
    if _NUMBER.fullmatch(text) is None:
        return 1.0
    return min(float(text), 1.0)


def compressed(body: bytes, encoding: str) -> bytes:
    """`body` in `encoding` ("gzip" or "deflate", as `chosen_encoding` names them)."""
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS[encoding])
    return packer.compress(body) + packer.flush()
