"""A shard's stream records, read and trimmed on the partition that holds them (pure
planning over the engine's committed state; the trim is a write through the log).

STREAM_READ's body (JSON), for a shard of a DynamoDB stream: {"prefix": base64 shard
prefix (keys.stream_shard_prefix), "after": [log index, position] (records after it;
[0, 0] from the first), "limit": int, "last": bool (only the shard's newest record:
where LATEST starts), "budget": bytes of records after which to stop (GetRecords'
1 MB), "since": epoch seconds (records written before it are passed over: where
AT_TIMESTAMP starts)}. Its answer's value is a JSON array of [log index, position,
stored record], in log order. For a point-in-time recovery history: {"history": {"ms",
"since", "after", "budget"}} (`_plan_history_read`).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.keys import STREAM_POSITION
from partita.control.model import DEFAULT_RECOVERY_DAYS, SECONDS_PER_DAY, STREAM_RETENTION_SECONDS
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import Plan

# Past every (log index, position) a shard key can end with.
_PAST_EVERY_POSITION = b"\xff" * STREAM_POSITION.size


def shard_bounds(prefix: bytes) -> tuple[bytes, bytes]:
    """[lo, hi) of every record of the shard whose keys start with `prefix`."""
    return prefix, prefix + _PAST_EVERY_POSITION


def plan_stream_read(engine: Engine, request: pb.Request) -> Plan:
    body: dict[str, Any] = orjson.loads(request.body)
    if "history" in body:
        return _plan_history_read(engine, request, body["history"])
    prefix = base64.b64decode(body["prefix"])
    index, position = body.get("after") or (0, 0)
    limit = max(1, int(body.get("limit") or 1))
    lo, hi = shard_bounds(prefix)
    if index or position:
        lo = prefix + STREAM_POSITION.pack(int(index), int(position)) + b"\x00"
    budget = int(body.get("budget") or 1 << 62)
    since = body.get("since")
    out: list[bytes] = []
    size = 0
    for key, value in engine.scan(lo, hi, reverse=bool(body.get("last"))):
        if since is not None and _time(value) < since:
            continue
        at_index, at_position = STREAM_POSITION.unpack_from(key, len(prefix))
        out.append(b"[%d,%d,%s]" % (at_index, at_position, value))
        size += len(value)
        if body.get("last") or len(out) >= limit or size >= budget:
            break
    return Plan(pb.Response(id=request.id, status=pb.OK, value=b"[" + b",".join(out) + b"]"))


def _plan_history_read(engine: Engine, request: pb.Request, body: dict[str, Any]) -> Plan:
    """A point-in-time recovery history's records stored at the partition's first hash,
    every shard's (its own and its split ancestors'), written after `since`: a page of
    them from after the key `after`, ending once `budget` bytes of records were passed.
    The answer: {"next": the key to go on after, or null at the end, "changes": [[log
    index, position, stored record], ...]} (each shard's in log order)."""
    stream_ms = int(body["ms"])
    prefix = keys.stream_time_prefix(request.table_id, request.key_hash, stream_ms)
    hi = keys.stream_time_prefix(request.table_id, request.key_hash, stream_ms + 1)
    lo = base64.b64decode(body["after"]) + b"\x00" if body.get("after") else prefix
    since = float(body["since"])
    budget = int(body.get("budget") or 1 << 20)
    out: list[bytes] = []
    passed = 0
    last: bytes | None = None
    for key, value in engine.scan(lo, hi):
        passed += len(key) + len(value)
        if _time(value) > since:
            at_index, at_position = STREAM_POSITION.unpack_from(key, len(keys.shard_prefix_of(key)))
            out.append(b"[%d,%d,%s]" % (at_index, at_position, value))
        if passed >= budget:
            last = key
            break
    after = orjson.dumps(base64.b64encode(last).decode()) if last is not None else b"null"
    value = b'{"next":' + after + b',"changes":[' + b",".join(out) + b"]}"
    return Plan(pb.Response(id=request.id, status=pb.OK, value=value))


def plan_stream_trim(engine: Engine, request: pb.Request) -> Plan:
    """STREAM_TRIM: the partition's stream records written before `cutoff` go, shard by
    shard (a range delete from the shard's first record to its first one kept), as one
    log entry. Records are in log order, so their times rise (up to the routers' clock
    differences: a record a little out of order waits for the next pass).

    A point-in-time recovery history's shard keeps its records for the recovery period
    its newest record names (`r`, days, before `now`), not the stream's 24 hours."""
    body = orjson.loads(request.body)
    stream_cutoff = float(body["cutoff"])
    now = float(body.get("now", stream_cutoff + STREAM_RETENTION_SECONDS))
    area_lo, area_hi = keys.stream_area(request.table_id, request.key_hash)
    effects: list[Effect] = []
    lo = area_lo
    while lo < area_hi:
        first = next(engine.scan(lo, area_hi), None)
        if first is None:
            break
        shard_prefix = keys.shard_prefix_of(first[0])
        shard_lo, shard_hi = shard_bounds(shard_prefix)
        cutoff = stream_cutoff
        if keys.is_history(keys.stream_time_of(shard_prefix)):
            newest = next(engine.scan(shard_lo, shard_hi, reverse=True))
            cutoff = now - float(orjson.loads(newest[1]).get("r", DEFAULT_RECOVERY_DAYS)) * SECONDS_PER_DAY
        kept = next(
            (key for key, value in engine.scan(shard_lo, shard_hi) if _time(value) >= cutoff), shard_hi
        )
        if kept > first[0]:
            effects.append(Effect(Kind.DELETE_RANGE, shard_lo, kept))
        lo = shard_hi
    return Plan(pb.Response(id=request.id, status=pb.OK), effects or None)


def _time(stored: bytes) -> float:
    return float(orjson.loads(stored)["t"])
