"""Assembling response bodies from parts that are already JSON bytes.

Items travel from the storage node as the JSON the node stores; the router splices
them into its answer instead of decoding and re-encoding every item.
"""

from __future__ import annotations

from typing import Any

import orjson

from partita._proto import storage_pb2 as pb


def body(*fields: tuple[bytes, bytes | None]) -> bytes:
    """`{"Name": <raw JSON>, ...}` of the fields whose value is not None; each field is
    (b'"Name":', raw JSON), its key already in JSON so nothing is encoded per answer."""
    return b"{" + b",".join([key + raw for key, raw in fields if raw is not None]) + b"}"


def encoded(value: Any) -> bytes | None:
    """JSON of a value, or None for None (a field to leave out)."""
    return None if value is None else orjson.dumps(value)


def request_body(options: dict[str, Any]) -> bytes:
    """A storage request's JSON body; empty when there is nothing to say (fast path)."""
    return orjson.dumps(options) if options else b""


def attributes(response: pb.Response) -> bytes | None:
    return response.value if response.value else None
