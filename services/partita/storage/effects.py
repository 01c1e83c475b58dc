"""The WAL payload: the effects of one committed write, as bytes.

A record holds what the write *did* (put this value, delete that key, drop that range),
never the request that caused it, so replay after a crash is deterministic and does
not re-run conditions or update expressions. Replication (P3) ships the same records.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass


class Kind(enum.IntEnum):
    PUT = 1
    DELETE = 2
    DELETE_RANGE = 3  # key = begin (inclusive), value = end (exclusive)
    # A delete the service made on its own (Time to Live expiry), not a client: applied
    # as DELETE, kept distinct in the log so Streams can show it as DynamoDB does (a
    # REMOVE record whose userIdentity is the service).
    SERVICE_DELETE = 4
    # A stream record (api/streams.py). The planner's key is the stream's time (8 bytes),
    # the data plane's the shard's whole prefix (keys.stream_shard_prefix); applying
    # puts the value at that prefix + (log index, position in the entry), so the record's
    # place in its shard is fixed by the log, the same on every replica.
    STREAM_RECORD = 5


@dataclass(frozen=True, slots=True)
class Effect:
    kind: Kind
    key: bytes
    value: bytes = b""


_HEADER = struct.Struct(">BII")


def encode_effects(effects: list[Effect]) -> bytes:
    parts = []
    for e in effects:
        parts.append(_HEADER.pack(e.kind, len(e.key), len(e.value)))
        parts.append(e.key)
        parts.append(e.value)
    return b"".join(parts)


def decode_effects(data: bytes) -> list[Effect]:
    out = []
    offset = 0
    view = memoryview(data)
    while offset < len(data):
        if len(data) - offset < _HEADER.size:
            raise ValueError("truncated effects record")
        kind, klen, vlen = _HEADER.unpack_from(data, offset)
        offset += _HEADER.size
        key = bytes(view[offset : offset + klen])
        offset += klen
        value = bytes(view[offset : offset + vlen])
        offset += vlen
        out.append(Effect(Kind(kind), key, value))
    if offset != len(data):
        raise ValueError("truncated effects record")
    return out
