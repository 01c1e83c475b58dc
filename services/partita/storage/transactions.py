"""A transaction's part on one partition: pure planning over the engine's state.

TransactWriteItems (router/actions/transactions.py) sends each partition its actions in
one TX_PREPARE request. The partition's leader plans every action as the single write
it stands for (`operations.PLANNERS`: conditions, update expressions, sizes, index key
checks), in one synchronous step, so no other write can come between the checks and
their effects:

- if any action fails, nothing is written and the request fails with
  TransactionCanceledException, whose CancellationReasons hold one reason per action
  (`None` for those that would have succeeded);
- if every action holds and the whole transaction is on this partition (`commit`), the
  effects of all its actions are written at once: one log entry, atomic;
- otherwise each action's item is locked: a lock record beside the item
  (`keys.lock_key`) holding the transaction's id and the item's staged new value. The
  lock is written like any item (replicated, durable, carried by snapshots and splits).
  While it stands, a plain write to the item and any transaction's action on it fail
  with TransactionConflict; reads see the item as it was.

TX_RESOLVE then either writes each staged value and drops the lock (commit), or drops
the lock (abort). Resolving is idempotent: a lock of another transaction, or none, is
left alone. The coordinator's decision is kept in the transaction ledger (control
store) so that a coordinator that dies between the two steps is finished by another
(router/transaction_sweeper.py).

Request bodies (JSON):
  TX_PREPARE  {"tx": id, "commit": bool, "at": epoch seconds, "actions": [{"op": "put"|"update"|"delete"|"check",
               "key": base64 storage key, "value": base64 item JSON (put), "size": int (put),
               "options": the single write's storage options}]}
  TX_RESOLVE  {"tx": id, "commit": bool, "keys": [base64 storage keys]}
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api.operations.transactions import canceled
from partita.common import keys
from partita.common.errors import DynamoError
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import ONGOING, PLANNERS, Plan, check_condition_only, check_unlocked

_OPS = {"put": pb.PUT, "update": pb.UPDATE, "delete": pb.DELETE}
_CONDITION_FAILED = "The conditional request failed"


def plan_prepare(engine: Engine, request: pb.Request) -> Plan:
    body: dict[str, Any] = orjson.loads(request.body)
    tx = str(body["tx"])
    reasons: list[dict[str, Any]] = []
    staged: list[tuple[bytes, list[Effect]]] = []
    units = 0.0
    index_units: dict[str, float] = {}
    for action in body["actions"]:
        key = base64.b64decode(action["key"])
        try:
            plan = _plan_action(engine, request.id, key, action)
        except DynamoError as exc:
            reasons.append(cancellation_reason(exc))
            continue
        units += plan.response.capacity_units
        for name, n in plan.response.index_units.items():
            index_units[name] = index_units.get(name, 0.0) + n
        reasons.append({"Code": "None"})
        staged.append((key, plan.effects or []))
    if any(reason["Code"] != "None" for reason in reasons):
        raise canceled(reasons)
    # Transactional writes cost twice, the indexes' entries too.
    response = pb.Response(id=request.id, status=pb.OK, capacity_units=2 * units)
    response.index_units.update({name: 2 * n for name, n in index_units.items()})
    if body.get("commit"):
        effects = [effect for _, planned in staged for effect in planned]
    else:
        at = float(body.get("at", 0.0))
        effects = [
            Effect(Kind.PUT, keys.lock_key(key), _lock_value(tx, at, planned)) for key, planned in staged
        ]
    return Plan(response, effects or None)


def plan_resolve(engine: Engine, request: pb.Request) -> Plan:
    body: dict[str, Any] = orjson.loads(request.body)
    tx = str(body["tx"])
    commit = bool(body.get("commit"))
    effects: list[Effect] = []
    for encoded in body["keys"]:
        key = base64.b64decode(encoded)
        lock = locked_by(engine, key)
        if lock is None or lock["tx"] != tx:
            continue  # resolved already, or never locked by this transaction
        if commit:
            if "put" in lock:
                effects.append(Effect(Kind.PUT, key, lock["put"].encode()))
            elif lock.get("delete") and engine.latest(key) is not None:
                effects.append(Effect(Kind.DELETE, key))
            for name in _LOCKED_RECORDS:  # the write's records, planned when prepared
                if name in lock:
                    stream_time, record = lock[name]
                    effects.append(
                        Effect(Kind.STREAM_RECORD, keys.STREAM_TIME.pack(stream_time), record.encode())
                    )
        effects.append(Effect(Kind.DELETE, keys.lock_key(key)))
    return Plan(pb.Response(id=request.id, status=pb.OK), effects or None)


# The records a lock may hold, under these names (`_lock_value`).
_LOCKED_RECORDS = ("stream", "history")


def locked_by(engine: Engine, key: bytes) -> dict[str, Any] | None:
    """The lock a transaction holds on the item at `key`, if any."""
    stored = engine.latest(keys.lock_key(key))
    if stored is None:
        return None
    lock: dict[str, Any] = orjson.loads(stored)
    return lock


def cancellation_reason(exc: DynamoError) -> dict[str, Any]:
    """An action's CancellationReason, from the error its single write would have had."""
    if exc.code == "ConditionalCheckFailedException":
        reason: dict[str, Any] = {"Code": "ConditionalCheckFailed", "Message": _CONDITION_FAILED}
        if exc.extra and "Item" in exc.extra:
            reason["Item"] = exc.extra["Item"]
        return reason
    if exc.code == "TransactionConflictException":
        return {"Code": "TransactionConflict", "Message": ONGOING}
    if exc.code == "ValidationException":
        return {"Code": "ValidationError", "Message": exc.message}
    if exc.code == "ItemCollectionSizeLimitExceededException":
        return {"Code": "ItemCollectionSizeLimitExceeded", "Message": exc.message}
    if exc.code == "ProvisionedThroughputExceededException":
        return {"Code": "ProvisionedThroughputExceeded", "Message": exc.message}
    return {"Code": exc.code.removesuffix("Exception"), "Message": exc.message}


def _plan_action(engine: Engine, request_id: int, key: bytes, action: dict[str, Any]) -> Plan:
    check_unlocked(engine, key)
    options = action.get("options") or {}
    single = pb.Request(
        id=request_id,
        key=key,
        value=base64.b64decode(action.get("value", "")),
        body=orjson.dumps(options) if options else b"",
        item_size=int(action.get("size", 0)),
    )
    if action["op"] == "check":
        return check_condition_only(engine, single)
    single.op = _OPS[action["op"]]
    return PLANNERS[single.op](engine, single)


def _lock_value(tx: str, at: float, planned: list[Effect]) -> bytes:
    """The lock: its transaction, when the coordinator asked (its clock, epoch
    seconds), and the item's staged value (or its deletion)."""
    lock: dict[str, Any] = {"tx": tx, "at": at}
    # At most one write per action (a put, or a delete of its item), its stream record
    # when the table has a stream, and its history record while it has point-in-time
    # recovery (told apart by their stream times).
    for effect in planned:
        if effect.kind is Kind.STREAM_RECORD:
            stream_time = keys.STREAM_TIME.unpack(effect.key)[0]
            name = "history" if keys.is_history(stream_time) else "stream"
            lock[name] = [stream_time, effect.value.decode()]
        elif effect.kind in (Kind.DELETE, Kind.SERVICE_DELETE):
            lock["delete"] = True
        else:
            lock["put"] = effect.value.decode()
    return orjson.dumps(lock)
