"""Point-in-time recovery history records on a real engine: written beside a write's
stream record under a stream time of their own, carried by a transaction's lock, read
back across a partition's shards after a time in pages, and trimmed after the recovery
period their newest record names."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.control.model import SECONDS_PER_DAY
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import plan_delete, plan_put, plan_update
from partita.storage.stream_reads import plan_stream_read, plan_stream_trim
from partita.storage.transactions import plan_prepare, plan_resolve

TABLE = 7
START = 0
STREAM_MS = 1000
HISTORY_MS = keys.history_stream_ms(2000)
STREAM = {"view": "NEW_IMAGE", "keys": ["pk"], "at": 50.0, "ms": STREAM_MS}
HISTORY = {"view": "OLD_IMAGE", "keys": ["pk"], "at": 50.0, "ms": HISTORY_MS, "r": 2}


def _key(pk: str) -> bytes:
    raw = pk.encode()
    return keys.item_key(TABLE, keys.key_hash("S", raw), raw, None)


def _placed(effects: list[Effect], partition: str = "p0") -> list[Effect]:
    """What the data plane does: a record's key becomes its shard's prefix (the stream
    time its planner gave, this partition)."""
    out = []
    for e in effects:
        if e.kind is Kind.STREAM_RECORD:
            ms = keys.STREAM_TIME.unpack(e.key)[0]
            e = Effect(e.kind, keys.stream_shard_prefix(TABLE, START, ms, partition), e.value)
        out.append(e)
    return out


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


async def _put(engine: Engine, pk: str, value: str, at: float = 50.0, partition: str = "p0") -> None:
    item = orjson.dumps({"pk": {"S": pk}, "v": {"S": value}})
    body = orjson.dumps({"history": {**HISTORY, "at": at}})
    plan = plan_put(engine, pb.Request(id=1, op=pb.PUT, key=_key(pk), value=item, body=body))
    assert plan.effects is not None
    await engine.commit(_placed(plan.effects, partition), "g")


def _history(engine: Engine, since: float, after: str | None = None, budget: int = 1 << 20) -> dict[str, Any]:
    body = {"history": {"ms": HISTORY_MS, "since": since, "after": after, "budget": budget}}
    request = pb.Request(id=1, op=pb.STREAM_READ, table_id=TABLE, key_hash=START, body=orjson.dumps(body))
    page: dict[str, Any] = orjson.loads(plan_stream_read(engine, request).response.value)
    return page


def _shard(engine: Engine, stream_ms: int) -> list[dict[str, Any]]:
    prefix = keys.stream_shard_prefix(TABLE, START, stream_ms, "p0")
    body = {"prefix": base64.b64encode(prefix).decode(), "after": [0, 0], "limit": 100}
    plan = plan_stream_read(engine, pb.Request(id=1, op=pb.STREAM_READ, body=orjson.dumps(body)))
    return [r[2] for r in orjson.loads(plan.response.value)]


async def test_a_write_keeps_the_item_before_it_in_its_own_history_beside_its_stream_record(
    engine: Engine,
) -> None:
    await _put(engine, "a", "one")
    both = orjson.dumps({"stream": STREAM, "history": HISTORY, "return": "NONE"})
    update = {"update": "SET v = :v", "values": {":v": {"S": "two"}}, "key": {"pk": {"S": "a"}}}
    body = orjson.dumps({**orjson.loads(both), **update})
    plan = plan_update(engine, pb.Request(id=1, op=pb.UPDATE, key=_key("a"), body=body))
    assert plan.effects is not None
    await engine.commit(_placed(plan.effects), "g")
    deleted = plan_delete(engine, pb.Request(id=1, op=pb.DELETE, key=_key("a"), body=both))
    assert deleted.effects is not None
    await engine.commit(_placed(deleted.effects), "g")

    history = _shard(engine, HISTORY_MS)
    assert [r["e"] for r in history] == ["INSERT", "MODIFY", "REMOVE"]
    # Each keeps the item as it was before its write, and its retention.
    assert [r.get("o", {}).get("v") for r in history] == [None, {"S": "one"}, {"S": "two"}]
    assert all(r["r"] == 2 and "n" not in r for r in history)
    # The stream's own records are untouched by the history: its view, its shard.
    assert [r["e"] for r in _shard(engine, STREAM_MS)] == ["MODIFY", "REMOVE"]
    assert "o" not in _shard(engine, STREAM_MS)[0]


async def test_a_history_read_returns_every_shard_at_the_hash_written_after_a_time_in_pages(
    engine: Engine,
) -> None:
    await _put(engine, "a", "1", at=10.0, partition="parent")  # a split parent's shard, same first hash
    await _put(engine, "b", "1", at=20.0, partition="parent")
    await _put(engine, "a", "2", at=30.0)
    await _put(engine, "c", "1", at=40.0)
    page = _history(engine, since=15.0)
    assert page["next"] is None
    assert sorted((r["t"], r["k"]["pk"]["S"]) for _, _, r in page["changes"]) == [
        (20.0, "b"),
        (30.0, "a"),
        (40.0, "c"),
    ]
    # A small budget ends each page early; following `next` reads the rest once.
    seen: list[float] = []
    after = None
    for _ in range(10):
        page = _history(engine, since=0.0, after=after, budget=1)
        seen.extend(r["t"] for _, _, r in page["changes"])
        after = page["next"]
        if after is None:
            break
    assert sorted(seen) == [10.0, 20.0, 30.0, 40.0]


async def test_a_transactions_lock_carries_both_records_to_its_commit(engine: Engine) -> None:
    await _put(engine, "t", "old")
    item = {"pk": {"S": "t"}, "v": {"S": "new"}}
    action = {
        "op": "put",
        "key": base64.b64encode(_key("t")).decode(),
        "value": base64.b64encode(orjson.dumps(item)).decode(),
        "options": {"stream": STREAM, "history": HISTORY},
    }
    prepared = plan_prepare(
        engine, pb.Request(id=1, op=pb.TX_PREPARE, body=orjson.dumps({"tx": "x", "actions": [action]}))
    )
    assert prepared.effects is not None
    await engine.commit(prepared.effects, "g")
    resolve = {"tx": "x", "commit": True, "keys": [action["key"]]}
    resolved = plan_resolve(engine, pb.Request(id=2, op=pb.TX_RESOLVE, body=orjson.dumps(resolve)))
    assert resolved.effects is not None
    await engine.commit(_placed(resolved.effects), "g")
    assert [(r["e"], r["n"]) for r in _shard(engine, STREAM_MS)] == [("MODIFY", item)]
    assert [r["o"]["v"] for r in _shard(engine, HISTORY_MS)[1:]] == [{"S": "old"}]


async def test_a_trim_keeps_a_history_for_its_recovery_period_not_the_streams_day(engine: Engine) -> None:
    day = SECONDS_PER_DAY
    now = 10 * day
    for i, at in enumerate((now - 3 * day, now - 1.5 * day, now - 0.5 * day)):
        await _put(engine, f"k{i}", "v", at=at)
    body = {"cutoff": now - day, "now": now}  # the stream's 24 hours; this history keeps 2 days
    trim = pb.Request(id=1, op=pb.STREAM_TRIM, table_id=TABLE, key_hash=START, body=orjson.dumps(body))
    plan = plan_stream_trim(engine, trim)
    assert plan.effects is not None
    await engine.commit(plan.effects, "g")
    assert [r["t"] for r in _shard(engine, HISTORY_MS)] == [now - 1.5 * day, now - 0.5 * day]
    assert plan_stream_trim(engine, trim).effects is None
