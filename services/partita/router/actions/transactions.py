"""TransactWriteItems and TransactGetItems: the router coordinates, the partitions decide.

A write transaction's actions are grouped by the partition that holds their item. Each
partition's leader checks its actions and either writes them or locks their items in
one step (`storage/transactions.py`):

- **One partition**: one TX_PREPARE that commits at once: a single log entry, atomic.
- **Several partitions**: two-phase commit. The coordinator first records the
  transaction in the ledger (etcd, `control.store.TransactionLedger`: participants and
  state "pending"), then prepares every partition (checks pass, items locked). It
  decides "committed" if every partition prepared, else "aborted", with a
  compare-and-swap on the ledger record: that decision is the transaction's outcome,
  taken once. Then every partition resolves it (writes the staged items and drops the
  locks, or drops the locks), and the record goes. A coordinator that dies leaves a
  pending or decided record; any router's sweeper (`transaction_sweeper.py`) aborts a
  pending one that is too old and resolves it either way. Acknowledged transactions are
  therefore never lost, and none is applied in part once resolved.

While an item is locked, plain writes to it and other transactions' actions on it fail
with TransactionConflict; reads see it as it was before the transaction.

A read transaction reads each item strongly, refusing items a transaction holds, twice;
it answers when both reads agree (no write came between them), else reads again (a
few times), then is cancelled with TransactionConflict.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity, streams
from partita.api.expressions import project
from partita.api.index_keys import (
    capacity_specs,
    check_index_key_values,
    collection_metrics,
    index_key_attributes,
)
from partita.api.operations import transactions
from partita.api.operations.transactions import GetAction, WriteAction, canceled
from partita.api.table_keys import ItemKey, key_of_item, key_of_key
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import wire
from partita.router.actions.writes import count_index_units
from partita.router.context import RouterContext
from partita.router.table_cache import CachedTable

# ClientRequestToken: a transaction asked again with the same token within this long is
# answered without being run again (DynamoDB: ten minutes).
TOKEN_SECONDS = 600.0
_DUPLICATE = "Transaction request cannot include multiple operations on one item"
# TransactGetItems: rounds of two reads before a read transaction is cancelled.
_READ_ROUNDS = 3
_READ_PAUSE_SECONDS = 0.02
_ONGOING = "Transaction is ongoing for the item"
# A committed transaction's partitions told again, with growing pauses, before the answer.
RESOLVE_ATTEMPTS = 4
RESOLVE_BACKOFF_SECONDS = 0.05


@dataclass
class Participant:
    """The actions of one partition, with their places in the request."""

    table: CachedTable
    key_hash: int
    positions: list[int] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)

    def storage_keys(self) -> list[str]:
        return [str(a["key"]) for a in self.actions]


async def run_write(ctx: RouterContext, body: Any) -> bytes:
    req = transactions.validate_write(body)
    participants, keys_of = participants_of(ctx, req.actions)
    ledger = ctx.ledger
    token_key = _token_key(req.token) if req.token is not None else None
    if token_key is not None and ledger is not None:
        earlier = await ledger.get_token(token_key)
        if earlier is not None and time.time() - float(earlier["at"]) >= TOKEN_SECONDS:
            await ledger.delete_token(token_key)  # expired: the token starts a new request
            earlier = None
        running = {"digest": req.digest, "state": "running", "at": time.time()}
        if earlier is None and not await ledger.claim_token(token_key, running):
            earlier = await ledger.get_token(token_key)  # the same token's request got there first
        if earlier is not None:
            _check_retry(earlier, req.digest)
            return _answer(req, participants, keys_of, body, None)
    try:
        if len(participants) == 1:
            units = await _commit_at_once(ctx, participants[0], len(req.actions))
        else:
            units = await _two_phase(ctx, participants, len(req.actions))
    except BaseException:
        if token_key is not None and ledger is not None:
            await ledger.delete_token(token_key)
        raise
    if token_key is not None and ledger is not None:
        await ledger.put_token(token_key, {"digest": req.digest, "state": "done", "at": time.time()})
    return _answer(req, participants, keys_of, body, units)


def _check_retry(earlier: dict[str, Any], digest: str) -> None:
    """A request with a token already used: the same request, finished (answered again
    without running), or another one, or one still running."""
    if earlier["digest"] != digest:
        raise errors.from_code(
            "IdempotentParameterMismatchException",
            "The request uses the same client token as a previous, but non-identical request.",
        )
    if earlier["state"] == "running":
        raise errors.from_code(
            "TransactionInProgressException", "Transaction from previous request is still in progress"
        )


def participants_of(
    ctx: RouterContext, actions: list[WriteAction]
) -> tuple[list[Participant], list[tuple[str, ItemKey, dict[str, Any]]]]:
    """Every action checked against its table and grouped by partition (before anything
    is sent: a bad action writes nothing). Each write's node counts its indexes' units."""
    by_partition: dict[tuple[int, str], Participant] = {}
    seen: set[tuple[int, bytes]] = set()
    keys_of: list[tuple[str, ItemKey, dict[str, Any]]] = []
    tables = [_table(ctx, action.table_name) for action in actions]
    located = [_located(table.record, action) for table, action in zip(tables, actions, strict=True)]
    invalid = next((i for i, found in enumerate(located) if isinstance(found, DynamoError)), None)
    if invalid is not None:
        # A key that does not fit its table's schema cancels the transaction, its reason
        # the first such action's alone (DynamoDB's, recorded by paritysuite and Alternator).
        reasons: list[dict[str, Any]] = [{"Code": "None"} for _ in actions]
        reasons[invalid] = {"Code": "ValidationError", "Message": str(located[invalid].message)}  # type: ignore[union-attr]
        raise canceled(reasons)
    for position, action in enumerate(actions):
        table = tables[position]
        record = table.record
        key = located[position]
        assert isinstance(key, ItemKey)
        if action.item is not None:
            if record.indexes:
                check_index_key_values(index_key_attributes(record.indexes), action.item)
            written = action.item
        else:
            assert action.key is not None
            written = action.key
        if action.kind == "update":
            for element in (record.partition_key, record.sort_key):
                if element is not None and element.name in action.modified:
                    raise errors.validation(
                        "One or more parameter values were invalid: "
                        f"Cannot update attribute {element.name}. This attribute is part of the key"
                    )
        if (record.table_id, key.storage_key) in seen:
            raise errors.validation(_DUPLICATE)
        seen.add((record.table_id, key.storage_key))
        keys_of.append((action.table_name, key, written))
        options = action.storage_options()
        if action.kind == "update" and record.indexes:
            options["index_keys"] = index_key_attributes(record.indexes)
        if action.kind != "check" and record.indexes:
            # Always: a global index is admitted on the units it consumes (index_capacity).
            options["index_capacity"] = capacity_specs(record)
        if action.kind != "check":
            options.update(streams.record_options(record))
        entry: dict[str, Any] = {"op": action.kind, "key": base64.b64encode(key.storage_key).decode()}
        if action.item is not None:
            entry["value"] = base64.b64encode(orjson.dumps(action.item)).decode()
            entry["size"] = action.size
        if options:
            entry["options"] = options
        partition = table.partition_map.floor_lookup(key.hash)
        participant = by_partition.setdefault(
            (record.table_id, partition.partition_id), Participant(table, key.hash)
        )
        participant.positions.append(position)
        participant.actions.append(entry)
    return list(by_partition.values()), keys_of


def _table(ctx: RouterContext, name: str) -> CachedTable:
    """An action's table; a missing one is "Requested resource not found", bare, in a
    transaction (nubo-db's and LocalStack's recordings)."""
    try:
        return ctx.tables.require_active(name)
    except DynamoError as exc:
        if exc.code == "ResourceNotFoundException":
            raise errors.resource_not_found() from None
        raise


# Key faults a transaction reports as an action's ValidationError; others (an empty key
# value, a key too long) refuse the whole request, as a single write's would.
_SCHEMA_FAULTS = ("Type mismatch for key", "does not match the schema", "Missing the key")


def _located(record: Any, action: WriteAction | GetAction) -> ItemKey | DynamoError:
    try:
        if isinstance(action, WriteAction) and action.item is not None:
            return key_of_item(record, action.item)
        assert action.key is not None
        return key_of_key(record, action.key)
    except DynamoError as exc:
        if exc.code == "ValidationException" and any(f in exc.message for f in _SCHEMA_FAULTS):
            return exc
        raise


async def _commit_at_once(ctx: RouterContext, participant: Participant, count: int) -> list[pb.Response]:
    body = {"tx": uuid.uuid4().hex, "commit": True, "actions": participant.actions}
    try:
        response = await send_to(ctx, participant, pb.TX_PREPARE, body)
    except DynamoError as exc:
        raise _placed(exc, [participant], count) from None
    return [response]


def _units_of(prepared: list[Any]) -> list[pb.Response]:
    return [r if isinstance(r, pb.Response) else pb.Response() for r in prepared]


async def _two_phase(ctx: RouterContext, participants: list[Participant], count: int) -> list[pb.Response]:
    """The transaction over several partitions; each participant's prepared answer (its
    consumed units)."""
    ledger = ctx.ledger
    if ledger is None:
        raise errors.internal_server_error("No transaction ledger: transactions across partitions are off")
    tx = uuid.uuid4().hex
    await ledger.put_transaction(tx, ledger_record(participants))
    prepared = await asyncio.gather(
        *(
            send_to(ctx, p, pb.TX_PREPARE, {"tx": tx, "at": time.time(), "actions": p.actions})
            for p in participants
        ),
        return_exceptions=True,
    )
    failures = [r for r in prepared if isinstance(r, BaseException)]
    outcome = await ledger.decide_transaction(tx, "aborted" if failures else "committed")
    for attempt in range(RESOLVE_ATTEMPTS):
        # Committed is committed: its items must be readable once it is answered, so a
        # partition that could not be told (its leader moving) is told again; what is
        # left after that, a sweeper finishes.
        if await resolve(ctx, tx, participants, outcome == "committed"):
            await ledger.delete_transaction(tx)
            break
        await asyncio.sleep(RESOLVE_BACKOFF_SECONDS * (attempt + 1))
    if outcome == "committed":
        return _units_of(prepared)
    if not failures:
        # A sweeper aborted it first: the coordinator had taken too long.
        raise errors.internal_server_error(
            "The transaction timed out before it was decided; it was not applied"
        )
    cancellations = [
        f for f in failures if isinstance(f, DynamoError) and f.code == "TransactionCanceledException"
    ]
    if cancellations:
        raise _placed_all(prepared, participants, count)
    raise failures[0]


async def resolve(ctx: RouterContext, tx: str, participants: list[Participant], commit: bool) -> bool:
    """Every participant told the outcome; False if one could not be (the ledger record
    stays, for a sweeper to try again)."""
    answers = await asyncio.gather(
        *(
            send_to(ctx, p, pb.TX_RESOLVE, {"tx": tx, "commit": commit, "keys": p.storage_keys()})
            for p in participants
        ),
        return_exceptions=True,
    )
    return not any(isinstance(a, BaseException) for a in answers)


def ledger_record(participants: list[Participant]) -> dict[str, Any]:
    return {
        "state": "pending",
        "at": time.time(),
        "participants": [
            {
                "table": p.table.record.name,
                "table_id": p.table.record.table_id,
                "hash": p.key_hash,
                "keys": p.storage_keys(),
            }
            for p in participants
        ],
    }


async def send_to(
    ctx: RouterContext, participant: Participant, op: pb.Op, body: dict[str, Any]
) -> pb.Response:
    request = pb.Request(op=op, key_hash=participant.key_hash, body=orjson.dumps(body))
    return await ctx.send(participant.table, request)


def _placed(exc: DynamoError, participants: list[Participant], count: int) -> DynamoError:
    """A partition's cancellation with its reasons put at their actions' places."""
    if exc.code != "TransactionCanceledException":
        return exc
    return _placed_all([exc], participants, count)


def _placed_all(answers: list[Any], participants: list[Participant], count: int) -> DynamoError:
    reasons: list[dict[str, Any]] = [{"Code": "None"} for _ in range(count)]
    for answer, participant in zip(answers, participants, strict=False):
        if isinstance(answer, DynamoError) and answer.extra and "CancellationReasons" in answer.extra:
            for position, reason in zip(
                participant.positions, answer.extra["CancellationReasons"], strict=True
            ):
                reasons[position] = reason
    return canceled(reasons)


def _answer(
    req: transactions.TransactWriteRequest,
    participants: list[Participant],
    keys_of: list[tuple[str, ItemKey, dict[str, Any]]],
    body: dict[str, Any],
    prepared: list[pb.Response] | None,
) -> bytes:
    """`prepared`: each participant's answer, with what its partition charged (twice a
    plain write's units, sized on the larger of each item's old and new value, as
    DynamoDB charges, and its indexes' units); None for a retry answered from its token,
    charged as its items' sizes say (its indexes' units not known again)."""
    consumed = None
    if req.capacity != "NONE":
        indexes: dict[str, capacity.IndexUnits] = {}
        if prepared is not None:
            charged = [
                (p.table.record.name, r.capacity_units) for p, r in zip(participants, prepared, strict=True)
            ]
            for p, r in zip(participants, prepared, strict=True):
                count_index_units(indexes.setdefault(p.table.record.name, {}), p.table, r)
        else:
            charged = [
                (name, 2 * capacity.write_units(action.size))
                for (name, _, _), action in zip(keys_of, req.actions, strict=True)
            ]
        consumed = _with_axis(
            capacity.consumed_per_table(charged, req.capacity, indexes), "WriteCapacityUnits"
        )
    metrics: dict[str, list[dict[str, Any]]] = {}
    if req.collection_metrics:
        tables = {p.table.record.name: p.table.record for p in participants}
        for name, _, written in keys_of:
            collection = collection_metrics(tables[name], body, written)
            if collection is not None:
                metrics.setdefault(name, []).append(collection)
    return wire.body(
        (b'"ConsumedCapacity":', wire.encoded(consumed)),
        (b'"ItemCollectionMetrics":', wire.encoded(metrics or None)),
    )


def _with_axis(consumed: list[dict[str, Any]] | None, axis: str) -> list[dict[str, Any]] | None:
    """A transaction's ConsumedCapacity names its kind of units beside CapacityUnits
    (a 2026 capture of DynamoDB's, cited by dynoxide)."""
    for entry in consumed or ():
        entry[axis] = entry["CapacityUnits"]
        if "Table" in entry:
            entry["Table"][axis] = entry["Table"]["CapacityUnits"]
        for section in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            for index in entry.get(section, {}).values():
                index[axis] = index["CapacityUnits"]
    return consumed


def _token_key(token: str) -> str:
    return token.encode().hex()


# --- TransactGetItems -------------------------------------------------------------------


async def run_get(ctx: RouterContext, body: Any) -> bytes:
    req = transactions.validate_get(body)
    tables = [_table(ctx, action.table_name) for action in req.actions]
    located = [_located(t.record, a) for t, a in zip(tables, req.actions, strict=True)]
    invalid = [i for i, found in enumerate(located) if isinstance(found, DynamoError)]
    if invalid:
        raise canceled(
            [
                {"Code": "ValidationError", "Message": found.message} if isinstance(found, DynamoError)
                else {"Code": "None"}
                for found in located
            ]
        )  # fmt: skip
    keys = [k for k in located if isinstance(k, ItemKey)]
    seen: set[tuple[int, bytes]] = set()
    for table, key in zip(tables, keys, strict=True):
        if (table.record.table_id, key.storage_key) in seen:
            raise errors.validation(_DUPLICATE)
        seen.add((table.record.table_id, key.storage_key))
    reads: list[bytes | None] = []
    for round_ in range(_READ_ROUNDS):
        if round_:
            await asyncio.sleep(_READ_PAUSE_SECONDS * round_)  # a transaction resolving meanwhile
        first = await _read_all(ctx, tables, keys)
        second = await _read_all(ctx, tables, keys) if not _conflicts(first) else first
        if not _conflicts(second) and first == second:
            reads = [r for r in second if not isinstance(r, DynamoError)]
            break
    else:
        raise canceled(
            [
                {"Code": "TransactionConflict", "Message": _ONGOING}
                if isinstance(r, DynamoError)
                else {"Code": "None"}
                for r in second
            ]
        )
    responses = [_returned(action, value) for action, value in zip(req.actions, reads, strict=True)]
    consumed = None
    if req.capacity != "NONE":
        units = [
            (a.table_name, 2 * capacity.read_units(len(v) if v else 0, True))
            for a, v in zip(req.actions, reads, strict=True)
        ]
        consumed = _with_axis(capacity.consumed_per_table(units, req.capacity), "ReadCapacityUnits")
    return wire.body(
        (b'"Responses":', orjson.dumps(responses)), (b'"ConsumedCapacity":', wire.encoded(consumed))
    )


async def _read_all(
    ctx: RouterContext, tables: list[CachedTable], keys: list[ItemKey]
) -> list[bytes | DynamoError | None]:
    """Each item's stored value (None: no item), or the conflict that refused it."""
    requests = [
        pb.Request(op=pb.GET, key_hash=k.hash, key=k.storage_key, consistent=True, body=b'{"unlocked":true}')
        for k in keys
    ]
    answers = await asyncio.gather(
        *(ctx.send(t, r) for t, r in zip(tables, requests, strict=True)), return_exceptions=True
    )
    out: list[bytes | DynamoError | None] = []
    for answer in answers:
        if isinstance(answer, DynamoError) and answer.code == "TransactionConflictException":
            out.append(answer)
        elif isinstance(answer, BaseException):
            raise answer
        else:
            out.append(answer.value if answer.status == pb.OK else None)
    return out


def _conflicts(reads: list[bytes | DynamoError | None]) -> bool:
    return any(isinstance(r, DynamoError) for r in reads)


def _returned(action: GetAction, value: bytes | None) -> dict[str, Any]:
    if value is None:
        return {}
    item: dict[str, Any] = orjson.loads(value)
    projection = action.expressions.resolved.projection
    if projection is not None:
        item = project(item, projection)
    return {"Item": item}
