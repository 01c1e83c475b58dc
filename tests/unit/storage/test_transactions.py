"""A transaction's part on one partition, planned over a real engine: checked and written
at once, or locked and later resolved; and what a lock does to other requests."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.errors import DynamoError
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import plan_get, plan_put, plan_range
from partita.storage.transactions import plan_prepare, plan_resolve

TABLE = 42


def _key(pk: str) -> bytes:
    raw = pk.encode()
    return keys.item_key(TABLE, keys.key_hash("S", raw), raw, None)


def _item(pk: str, v: str) -> bytes:
    return orjson.dumps({"pk": {"S": pk}, "v": {"S": v}})


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    await e.commit([Effect(Kind.PUT, _key("a"), _item("a", "old"))])
    yield e
    await e.close()


def _prepare(tx: str, actions: list[dict[str, Any]], commit: bool = False) -> pb.Request:
    body = {"tx": tx, "commit": commit, "actions": actions}
    return pb.Request(id=1, op=pb.TX_PREPARE, body=orjson.dumps(body))


def _put(pk: str, v: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {
        "op": "put",
        "key": base64.b64encode(_key(pk)).decode(),
        "value": base64.b64encode(_item(pk, v)).decode(),
    }
    if options:
        action["options"] = options
    return action


def _resolve(tx: str, pks: list[str], commit: bool) -> pb.Request:
    body = {"tx": tx, "commit": commit, "keys": [base64.b64encode(_key(pk)).decode() for pk in pks]}
    return pb.Request(id=2, op=pb.TX_RESOLVE, body=orjson.dumps(body))


async def _apply(engine: Engine, effects: list[Effect] | None) -> None:
    assert effects
    await engine.commit(effects)


async def test_a_transaction_wholly_here_is_written_at_once(engine: Engine) -> None:
    plan = plan_prepare(engine, _prepare("t1", [_put("a", "new"), _put("b", "new")], commit=True))
    await _apply(engine, plan.effects)
    assert engine.get(_key("a")) == _item("a", "new") and engine.get(_key("b")) == _item("b", "new")
    assert engine.get(keys.lock_key(_key("a"))) is None


async def test_a_failed_condition_cancels_every_action_with_its_reason(engine: Engine) -> None:
    must_be_new = {"condition": "attribute_not_exists(pk)", "return_old_on_failure": True}
    with pytest.raises(DynamoError) as err:
        plan_prepare(engine, _prepare("t2", [_put("b", "new"), _put("a", "new", must_be_new)]))
    assert err.value.code == "TransactionCanceledException"
    assert err.value.message == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"
    )
    assert err.value.extra == {
        "CancellationReasons": [
            {"Code": "None"},
            {
                "Code": "ConditionalCheckFailed",
                "Message": "The conditional request failed",
                "Item": {"pk": {"S": "a"}, "v": {"S": "old"}},
            },
        ]
    }


async def test_a_prepared_item_is_locked_until_resolved(engine: Engine) -> None:
    plan = plan_prepare(engine, _prepare("t3", [_put("a", "new")]))
    await _apply(engine, plan.effects)
    assert engine.get(_key("a")) == _item("a", "old")  # nothing written yet
    # A plain write, and another transaction, meet the lock.
    with pytest.raises(DynamoError) as err:
        plan_put(engine, pb.Request(id=3, op=pb.PUT, key=_key("a"), value=_item("a", "plain")))
    assert (err.value.code, err.value.message) == (
        "TransactionConflictException",
        "Transaction is ongoing for the item",
    )
    with pytest.raises(DynamoError) as other:
        plan_prepare(engine, _prepare("t4", [_put("a", "other")]))
    assert other.value.extra == {
        "CancellationReasons": [
            {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
        ]
    }
    # A plain read sees the item as it was; a transactional read is refused.
    assert plan_get(engine, pb.Request(id=4, op=pb.GET, key=_key("a"))).response.value == _item("a", "old")
    with pytest.raises(DynamoError):
        plan_get(engine, pb.Request(id=5, op=pb.GET, key=_key("a"), body=b'{"unlocked":true}'))


async def test_resolving_commits_or_aborts_once_and_only_its_own_lock(engine: Engine) -> None:
    await _apply(engine, plan_prepare(engine, _prepare("t5", [_put("a", "new")])).effects)
    assert plan_resolve(engine, _resolve("someone-else", ["a"], commit=True)).effects is None
    await _apply(engine, plan_resolve(engine, _resolve("t5", ["a"], commit=True)).effects)
    assert engine.get(_key("a")) == _item("a", "new")
    assert engine.get(keys.lock_key(_key("a"))) is None
    assert plan_resolve(engine, _resolve("t5", ["a"], commit=True)).effects is None  # again: nothing

    await _apply(engine, plan_prepare(engine, _prepare("t6", [_put("a", "newer")])).effects)
    await _apply(engine, plan_resolve(engine, _resolve("t6", ["a"], commit=False)).effects)
    assert engine.get(_key("a")) == _item("a", "new")
    assert engine.get(keys.lock_key(_key("a"))) is None


async def test_a_scan_never_returns_a_lock_as_an_item(engine: Engine) -> None:
    await _apply(engine, plan_prepare(engine, _prepare("t7", [_put("a", "new"), _put("b", "new")])).effects)
    lo, hi = keys.hash_range_bounds(TABLE, 0, keys.HASH_SPACE)
    body = {"lo": base64.b64encode(lo).decode(), "hi": base64.b64encode(hi).decode()}
    plan = plan_range(engine, pb.Request(id=6, op=pb.SCAN, body=orjson.dumps(body)))
    assert orjson.loads(plan.response.value) == [{"pk": {"S": "a"}, "v": {"S": "old"}}]
