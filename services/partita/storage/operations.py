"""What a storage node does with one data request: pure planning over the engine's state.

`plan` turns a request into either an immediate response (reads, failed conditions) or
the effects to commit plus the response to send once they are durable. It reads the
engine's newest state (including durable-pending writes) and never awaits, so a
read-modify-write (a condition check, an update expression) is atomic with respect to
every other request on the node: nothing can run between the read and the write. The
apply step is a pure function of the previous item, so a replicated log (P3) may
replay the same plan.

Expressions arrive as texts plus their placeholder maps, already validated and resolved
once by the router; the node resolves them again (parses come from the shared cache)
and evaluates them here, next to the item, so an item never travels for a condition.

Request `body` (JSON) by op; every field is optional:
  GET     projection, names, capacity
  PUT     condition, names, values, return_old, return_old_on_failure, capacity, size
          (size: the new item's DynamoDB size, computed by the router)
  DELETE  condition, names, values, return_old, return_old_on_failure, capacity,
          service (a delete the service makes itself, TTL expiry: logged as SERVICE_DELETE)
  UPDATE  update, condition, names, values, legacy, key (the key attributes, to create
          a missing item), return (NONE/ALL_OLD/UPDATED_OLD/ALL_NEW/UPDATED_NEW),
          return_old_on_failure, capacity
  QUERY/SCAN  lo, hi (base64 storage keys, [lo, hi)), reverse, limit, budget (bytes of
          items to read, DynamoDB's 1 MB page, counted as `values.sizes` counts
          them), filter, projection, names, values, count_only, key_names (attributes
          of LastEvaluatedKey: the partition key's name, then the sort key's)
Response: `value` holds the item (GET), the old item (PUT/DELETE with return_old), the
attributes to return (UPDATE) or the page's items as a JSON array (QUERY/SCAN);
`body` of QUERY/SCAN is {"count", "scanned", "last", "page_bytes"}; `capacity_bytes` is filled when
`capacity` was asked for, and always for QUERY/SCAN (the size of the items read).
`capacity_units` is always filled (metering is always on). It is exact without decoding
items on the common path: an item's stored JSON is never smaller than its DynamoDB size
(every attribute's name and value appear in it, with quotes and type tags around
them), so a stored value no longer than one capacity unit costs exactly one unit.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.expressions import Resolver, apply_update, ast, cache, evaluate, project, project_paths
from partita.api.index_keys import check_index_key_values, index_write_units
from partita.api.item import MAX_DEPTH, MAX_ITEM_BYTES
from partita.api.streams import stored_record
from partita.api.values import Item, item_size, sizes
from partita.common import errors
from partita.common.errors import DynamoError
from partita.common.keys import STREAM_TIME, is_item_key, lock_key
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine

# DynamoDB's words for an update that does not fit, and for legacy AttributeUpdates
# (ADD/DELETE on an attribute of another type) where expressions say "operand".
_UPDATE_TOO_BIG = "Item size to update has exceeded the maximum allowed size"
_BAD_OPERAND = "An operand in the update expression has an incorrect data type"
_LEGACY_MISMATCH = "Type mismatch for attribute to update"


@dataclass(slots=True)
class Plan:
    response: pb.Response
    effects: list[Effect] | None = None  # None: answer now; else commit first
    group: str = ""  # the replication group the effects belong to (set by the data plane)
    # A replicated write: its proposal, committed when this completes (set by the data plane).
    proposal: asyncio.Future[None] | None = None


def error_response(request_id: int, error: DynamoError) -> pb.Response:
    return pb.Response(
        id=request_id,
        status=pb.ERROR,
        error_code=error.code,
        error_message=error.message,
        error_body=orjson.dumps(error.extra) if error.extra else b"",
    )


def _options(request: pb.Request) -> dict[str, Any]:
    if not request.body:
        return {}
    options: dict[str, Any] = orjson.loads(request.body)
    return options


def _load(value: bytes | None) -> Item | None:
    if value is None:
        return None
    item: Item = orjson.loads(value)
    return item


class _Expressions:
    """The request's expressions, resolved against its placeholder maps on demand."""

    __slots__ = ("_resolver", "options")

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self._resolver: Resolver | None = None

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = Resolver(self.options.get("names"), self.options.get("values"))
        return self._resolver

    def condition(self, kind: str = "ConditionExpression", field: str = "condition") -> ast.Condition | None:
        text = self.options.get(field)
        if text is None:
            return None
        return self.resolver.condition(cache.condition(text, kind, not self.options.get("legacy")), kind)

    def update(self) -> ast.Update | None:
        text = self.options.get("update")
        if text is None:
            return None
        return self.resolver.update(cache.update(text, not self.options.get("legacy")))

    def projection(self) -> ast.Projection | None:
        text = self.options.get("projection")
        if text is None:
            return None
        return self.resolver.projection(cache.projection(text, not self.options.get("legacy")))


# What a write to an item a transaction holds gets (TransactionConflictException).
ONGOING = "Transaction is ongoing for the item"


def check_unlocked(engine: Engine, key: bytes) -> None:
    """TransactionConflictException while a transaction holds the item at `key`
    (storage/transactions.py: its lock is stored beside it). The error names the
    transaction and when its coordinator locked the item, for the router alone (it
    clears a lock its ledger no longer knows, router/actions/orphan_locks.py)."""
    stored = engine.latest(lock_key(key))
    if stored is not None:
        lock = orjson.loads(stored)
        raise errors.from_code(
            "TransactionConflictException", ONGOING, {"LockedBy": lock["tx"], "LockedAt": lock.get("at", 0.0)}
        )


def check_condition_only(engine: Engine, request: pb.Request) -> Plan:
    """A transaction's ConditionCheck: the condition on the item, nothing written; it
    costs a write unit, as a failed conditional write does."""
    old = engine.latest(request.key)
    _check_condition(_Expressions(_options(request)), _load(old))
    return Plan(pb.Response(id=request.id, status=pb.OK, capacity_units=_write_charge(old, 0)))


def _check_condition(exprs: _Expressions, old: Item | None) -> None:
    """Raise ConditionalCheckFailedException unless the condition holds for `old`."""
    condition = exprs.condition()
    if condition is not None and not evaluate(condition, old):
        returned = old if exprs.options.get("return_old_on_failure") else None
        raise errors.conditional_check_failed(returned)


# --- metering ----------------------------------------------------------------------------


def _charged_size(stored: bytes | None, unit: int) -> int:
    """A size that costs the same units as the stored item's DynamoDB size: the stored
    length itself when that fits in one unit (the item cannot be larger), else exact."""
    if stored is None:
        return 0
    if len(stored) <= unit:
        return len(stored)
    item = _load(stored)
    assert item is not None
    return item_size(item)


def _read_charge(stored: bytes | None, consistent: bool) -> float:
    return capacity.read_units(_charged_size(stored, capacity.READ_UNIT_BYTES), consistent)


def _write_charge(old: bytes | None, new_size: int) -> float:
    return capacity.write_units(_charged_size(old, capacity.WRITE_UNIT_BYTES), new_size)


# --- point reads and writes --------------------------------------------------------------


def plan_get(engine: Engine, request: pb.Request) -> Plan:
    """A read of the item's committed state, whatever a transaction has staged for it;
    `unlocked` in the body (TransactGetItems) refuses an item a transaction holds."""
    value = engine.get(request.key)
    if value is None:
        if request.body and _options(request).get("unlocked"):
            check_unlocked(engine, request.key)
        return Plan(
            pb.Response(
                id=request.id, status=pb.NOT_FOUND, capacity_units=capacity.read_units(0, request.consistent)
            )
        )
    if not request.body:  # the common case: the stored bytes are the answer
        if len(value) <= capacity.READ_UNIT_BYTES:  # one unit, whatever the exact size
            units = 1.0 if request.consistent else 0.5
        else:
            units = _read_charge(value, request.consistent)
        return Plan(pb.Response(id=request.id, status=pb.OK, value=value, capacity_units=units))
    exprs = _Expressions(_options(request))
    if exprs.options.get("unlocked"):
        check_unlocked(engine, request.key)
    item = _load(value)
    assert item is not None
    response = pb.Response(id=request.id, status=pb.OK, value=value)
    # DynamoDB charges for the whole item, whatever the projection returns.
    size = item_size(item)
    response.capacity_units = capacity.read_units(size, request.consistent)
    if exprs.options.get("capacity"):
        response.capacity_bytes = size
    projection = exprs.projection()
    if projection is not None:
        response.value = orjson.dumps(project(item, projection))
    return Plan(response)


def plan_put(engine: Engine, request: pb.Request) -> Plan:
    check_unlocked(engine, request.key)
    options = _options(request)
    old = engine.latest(request.key)
    # item_size comes from the router; the stored length bounds it for older senders.
    new_size = request.item_size or int(options.get("size", 0)) or len(request.value)
    response = pb.Response(id=request.id, status=pb.OK, capacity_units=_write_charge(old, new_size))
    if not options:
        return Plan(response, [Effect(Kind.PUT, request.key, request.value)])
    exprs = _Expressions(options)
    recorded = _records_changes(options)
    checked = "condition" in options or options.get("capacity")
    old_item = _load(old) if checked or recorded or "index_capacity" in options else None
    if checked:
        _check_condition(exprs, old_item)
        if options.get("capacity"):
            response.capacity_bytes = max(item_size(old_item) if old_item else 0, int(options.get("size", 0)))
    if options.get("return_old") and old is not None:
        response.value = old
    new_item = _load(request.value) if recorded or "index_capacity" in options else None
    _count_index_units(response, options, old_item, new_item)
    effects = [Effect(Kind.PUT, request.key, request.value)]
    if recorded:
        _add_change_records(effects, options, old_item, new_item)
    return Plan(response, effects)


def _count_index_units(
    response: pb.Response, options: dict[str, Any], old: Item | None, new: Item | None
) -> None:
    """The write units each secondary index consumed, when the router sent their specs."""
    specs = options.get("index_capacity")
    if specs:
        response.index_units.update(index_write_units(specs, old, new))


def plan_delete(engine: Engine, request: pb.Request) -> Plan:
    check_unlocked(engine, request.key)
    options = _options(request)
    old = engine.latest(request.key)
    response = pb.Response(id=request.id, status=pb.OK, capacity_units=_write_charge(old, 0))
    recorded = _records_changes(options)
    checked = "condition" in options or options.get("capacity")
    old_item = _load(old) if checked or recorded or "index_capacity" in options else None
    if checked:
        _check_condition(_Expressions(options), old_item)
        if options.get("capacity"):
            response.capacity_bytes = item_size(old_item) if old_item else 0
    if options.get("return_old") and old is not None:
        response.value = old
    if old is None:
        # Nothing to delete: acknowledge without a WAL record.
        return Plan(response)
    _count_index_units(response, options, old_item, None)
    service = bool(options.get("service"))
    effects = [Effect(Kind.SERVICE_DELETE if service else Kind.DELETE, request.key)]
    if recorded:
        _add_change_records(effects, options, old_item, None, service=service)
    return Plan(response, effects)


# The records a write may carry beside its item: its DynamoDB Streams record
# (api/streams.py) and its point-in-time recovery history record (api/point_in_time.py).
_RECORDS = ("stream", "history")


def _records_changes(options: dict[str, Any]) -> bool:
    return "stream" in options or "history" in options


def _add_change_records(
    effects: list[Effect],
    options: dict[str, Any],
    old: Item | None,
    new: Item | None,
    *,
    service: bool = False,
) -> None:
    """The write's stream and history records, when it changes the item; their keys are
    completed by the data plane, which knows the partition."""
    for name in _RECORDS:
        wanted = options.get(name)
        if wanted is None:
            continue
        record = stored_record(wanted, old, new, service=service)
        if record is not None:
            effects.append(Effect(Kind.STREAM_RECORD, STREAM_TIME.pack(int(wanted["ms"])), record))


def plan_update(engine: Engine, request: pb.Request) -> Plan:
    """UpdateItem: condition, then the update applied to the previous item, one step."""
    check_unlocked(engine, request.key)
    options = _options(request)
    exprs = _Expressions(options)
    old = engine.latest(request.key)
    old_item = _load(old)
    _check_condition(exprs, old_item)
    new_item, paths = apply_to(exprs, old_item, options.get("key") or {})
    if old_item is None and _removes_only(exprs.update()):
        # DynamoDB does not create an item that an update would leave with nothing but
        # its key: removing from a missing item is a no-op, with nothing to return.
        nothing = pb.Response(id=request.id, status=pb.OK)
        if options.get("capacity"):
            nothing.capacity_bytes = 0
        return Plan(nothing)
    if item_size(new_item) > MAX_ITEM_BYTES:
        raise errors.validation(_UPDATE_TOO_BIG)
    if _depth(new_item) > MAX_DEPTH:
        raise errors.nesting_too_deep()
    index_keys = options.get("index_keys")
    if index_keys:
        check_index_key_values(index_keys, new_item)
    new = orjson.dumps(new_item)
    response = pb.Response(id=request.id, status=pb.OK)
    returned = options.get("return", "NONE")
    if returned == "ALL_OLD":
        response.value = old or b""
    elif returned == "ALL_NEW":
        response.value = new
    elif returned in ("UPDATED_OLD", "UPDATED_NEW") and paths is not None:
        source = (old_item or {}) if returned == "UPDATED_OLD" else new_item
        attributes = project_paths(source, paths)
        if attributes:
            response.value = orjson.dumps(attributes)
    charged = max(item_size(old_item) if old_item else 0, item_size(new_item))
    response.capacity_units = capacity.write_units(charged)
    if options.get("capacity"):
        response.capacity_bytes = charged
    _count_index_units(response, options, old_item, new_item)
    effects = [Effect(Kind.PUT, request.key, new)]
    if _records_changes(options):
        _add_change_records(effects, options, old_item, new_item)
    return Plan(response, effects)


def apply_to(
    exprs: _Expressions, old_item: Item | None, key: Item
) -> tuple[Item, tuple[tuple[ast.PathElement, ...], ...] | None]:
    """The item after the update, and the paths it acted on (None: no update).

    A missing item starts as its key attributes, as DynamoDB creates it. Pure: the
    previous item is never modified, so the step may be re-run on the same input.
    """
    base = old_item if old_item is not None else dict(key)
    update = exprs.update()
    if update is None:
        return base, None
    try:
        result = apply_update(update, base, exists=old_item is not None)
    except DynamoError as exc:
        if exprs.options.get("legacy") and exc.message == _BAD_OPERAND:
            raise errors.validation(_LEGACY_MISMATCH) from None
        raise
    return result.item, result.paths


def _removes_only(update: ast.Update | None) -> bool:
    """An update whose every action takes away (REMOVE, or DELETE from a set)."""
    return update is not None and all(a.clause in ("REMOVE", "DELETE") for a in update.actions)


def _depth(item: Item) -> int:
    """Nesting depth of an item's deepest value (a top-level scalar is 1)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(av, 1) for av in item.values()]
    while stack:
        av, depth = stack.pop()
        deepest = max(deepest, depth)
        children = av.get("M")
        if children is not None:
            stack.extend((child, depth + 1) for child in children.values())
            continue
        elements = av.get("L")
        if elements is not None:
            stack.extend((child, depth + 1) for child in elements)
    return deepest


# --- range reads -------------------------------------------------------------------------


def plan_range(engine: Engine, request: pb.Request) -> Plan:
    """QUERY and SCAN: one page of a key range, read in order, filtered and projected.

    The page stops after `limit` items read or once the items read reach `budget`
    bytes of page (DynamoDB counts both before the filter); the item that crosses the
    budget is still part of the page, and its key becomes the LastEvaluatedKey. The
    capacity is the items' size, which is not what they count toward the page.
    """
    options = _options(request)
    exprs = _Expressions(options)
    filter_tree = exprs.condition("FilterExpression", "filter")
    projection = exprs.projection()
    lo = base64.b64decode(options["lo"])
    hi = base64.b64decode(options["hi"])
    limit = int(options.get("limit") or 0)
    budget = int(options.get("budget") or 1 << 62)
    count_only = bool(options.get("count_only"))
    key_names: list[str] = options.get("key_names") or []
    sort_key = key_names[1] if len(key_names) > 1 else None
    out: list[bytes] = []
    scanned = count = size = page = 0
    last: Item | None = None
    stopped = False
    for key, value in engine.scan(lo, hi, reverse=bool(options.get("reverse"))):
        if not is_item_key(key):
            continue  # a transaction's lock or a stream record, not an item
        item: Item = orjson.loads(value)
        scanned += 1
        item_bytes, page_bytes = sizes(item, sort_key)
        size += item_bytes
        page += page_bytes
        if filter_tree is None or evaluate(filter_tree, item):
            count += 1
            if not count_only:
                out.append(value if projection is None else orjson.dumps(project(item, projection)))
        if (limit and scanned >= limit) or page >= budget:
            last = {name: item[name] for name in key_names if name in item}
            stopped = True
            break
    # page_bytes: a Scan carries the 1 MB budget from partition to partition.
    summary = {"count": count, "scanned": scanned, "last": last if stopped else None, "page_bytes": page}
    response = pb.Response(
        id=request.id,
        status=pb.OK,
        value=b"[" + b",".join(out) + b"]",
        body=orjson.dumps(summary),
        capacity_bytes=size,
        capacity_units=capacity.range_read_units(size, request.consistent),
    )
    return Plan(response)


PLANNERS: dict[int, Callable[[Engine, pb.Request], Plan]] = {
    pb.GET: plan_get,
    pb.PUT: plan_put,
    pb.DELETE: plan_delete,
    pb.UPDATE: plan_update,
    pb.QUERY: plan_range,
    pb.SCAN: plan_range,
}
