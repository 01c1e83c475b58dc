"""Stream records on a real engine: placed by the log position of their entry, read after
a position, skipped by item scans, trimmed after the retention period, and carried by a
transaction's lock from its prepare to its commit."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import plan_put, plan_range
from partita.storage.stream_reads import plan_stream_read, plan_stream_trim
from partita.storage.transactions import plan_prepare, plan_resolve

TABLE = 7
START = 0
PREFIX = keys.stream_shard_prefix(TABLE, START, 1000, "p0")
STREAM = {"view": "NEW_IMAGE", "keys": ["pk"], "at": 50.0, "ms": 1000}


def _key(pk: str) -> bytes:
    raw = pk.encode()
    return keys.item_key(TABLE, keys.key_hash("S", raw), raw, None)


def _placed(effects: list[Effect]) -> list[Effect]:
    """What the data plane does: a record's key becomes its shard's prefix."""
    return [Effect(e.kind, PREFIX, e.value) if e.kind is Kind.STREAM_RECORD else e for e in effects]


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


async def _put(engine: Engine, pk: str, value: str, at: float = 50.0) -> None:
    item = orjson.dumps({"pk": {"S": pk}, "v": {"S": value}})
    body = orjson.dumps({"stream": {**STREAM, "at": at}})
    plan = plan_put(engine, pb.Request(id=1, op=pb.PUT, key=_key(pk), value=item, body=body))
    assert plan.effects is not None
    await engine.commit(_placed(plan.effects), "g")


def _read(engine: Engine, after: tuple[int, int] = (0, 0), **extra: Any) -> list[list[Any]]:
    body = {"prefix": base64.b64encode(PREFIX).decode(), "after": list(after), "limit": 100, **extra}
    plan = plan_stream_read(engine, pb.Request(id=1, op=pb.STREAM_READ, body=orjson.dumps(body)))
    read: list[list[Any]] = orjson.loads(plan.response.value)
    return read


async def test_records_are_read_in_log_order_after_a_position(engine: Engine) -> None:
    for i in range(4):
        await _put(engine, f"k{i}", "v")
    await _put(engine, "k0", "v")  # unchanged: no record, but an entry of the log
    read = _read(engine)
    assert [(index, position) for index, position, _ in read] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    assert [r[2]["e"] for r in read] == ["INSERT"] * 4 and read[0][2]["n"]["pk"] == {"S": "k0"}
    assert [r[0] for r in _read(engine, (2, 1))] == [3, 4]
    assert [r[0] for r in _read(engine, (0, 0), limit=2)] == [1, 2]
    assert [r[0] for r in _read(engine, (0, 0), last=True)] == [4]
    assert len(_read(engine, (0, 0), budget=1)) == 1


async def test_item_scans_skip_stream_records(engine: Engine) -> None:
    await _put(engine, "a", "v")
    lo, hi = keys.table_bounds(TABLE)
    body = {"lo": base64.b64encode(lo).decode(), "hi": base64.b64encode(hi).decode(), "key_names": ["pk"]}
    page = plan_range(engine, pb.Request(id=1, op=pb.SCAN, body=orjson.dumps(body)))
    assert orjson.loads(page.response.body)["scanned"] == 1
    assert [item["pk"] for item in orjson.loads(page.response.value)] == [{"S": "a"}]


async def test_a_trim_drops_the_records_before_the_cutoff_and_keeps_the_rest(engine: Engine) -> None:
    for i, at in enumerate((10.0, 20.0, 30.0, 40.0)):
        await _put(engine, f"k{i}", "v", at=at)
    trim = pb.Request(
        id=1, op=pb.STREAM_TRIM, table_id=TABLE, key_hash=START, body=orjson.dumps({"cutoff": 25.0})
    )
    plan = plan_stream_trim(engine, trim)
    assert plan.effects is not None and [e.kind for e in plan.effects] == [Kind.DELETE_RANGE]
    await engine.commit(plan.effects, "g")
    assert [r[2]["t"] for r in _read(engine)] == [30.0, 40.0]
    assert plan_stream_trim(engine, trim).effects is None  # nothing older is left


async def test_a_transactions_lock_carries_the_record_to_its_commit(engine: Engine) -> None:
    item = {"pk": {"S": "t"}, "v": {"S": "new"}}
    action = {
        "op": "put",
        "key": base64.b64encode(_key("t")).decode(),
        "value": base64.b64encode(orjson.dumps(item)).decode(),
        "options": {"stream": STREAM},
    }
    prepared = plan_prepare(
        engine, pb.Request(id=1, op=pb.TX_PREPARE, body=orjson.dumps({"tx": "x", "actions": [action]}))
    )
    assert prepared.effects is not None and [e.kind for e in prepared.effects] == [Kind.PUT]  # the lock only
    await engine.commit(prepared.effects, "g")
    assert _read(engine) == []
    resolve = {"tx": "x", "commit": True, "keys": [action["key"]]}
    resolved = plan_resolve(engine, pb.Request(id=2, op=pb.TX_RESOLVE, body=orjson.dumps(resolve)))
    assert resolved.effects is not None
    await engine.commit(_placed(resolved.effects), "g")
    read = _read(engine)
    assert [(r[2]["e"], r[2]["n"]) for r in read] == [("INSERT", item)]
