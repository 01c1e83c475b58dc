"""BatchGetItem: up to 100 point reads, issued concurrently so they share storage batches."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.operations import batch_get_item
from partita.api.table_keys import key_of_key
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import wire
from partita.router.context import RouterContext

# DynamoDB answers at most 16 MB per call, and about 1 MB read from one partition, and
# leaves the rest in UnprocessedKeys ("BatchGetItem returns a partial result if ... more
# than 1MB per partition is requested": the API reference). dynalite's DynamoDB-verified
# tests bound "about": items of 1,458,171 bytes from one partition all come back, of
# 1.57 MB some do not; so 1 MB and one more item's most (400 KB), in item bytes.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_PARTITION_BYTES = 1024 * 1024 + 400 * 1024
_DUPLICATES = "Provided list of item keys contains duplicates"


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = batch_get_item.validate(body)
    for entry in req.tables:
        _refuse_repeated_keys(entry.keys)
    charged = req.capacity != "NONE"
    calls = []  # (table entry, raw key, table, request, (table name, partition id))
    for entry in req.tables:
        table = ctx.tables.require_active(entry.table_name)
        options = entry.expressions.storage_body()
        if charged:
            options["capacity"] = True
        payload = wire.request_body(options)
        seen: set[bytes] = set()
        for raw_key in entry.keys:
            key = key_of_key(table.record, raw_key)
            if key.storage_key in seen:
                raise errors.validation(_DUPLICATES)
            seen.add(key.storage_key)
            request = pb.Request(
                op=pb.GET, key_hash=key.hash, key=key.storage_key, consistent=entry.consistent, body=payload
            )
            owner = table.partition_map.floor_lookup(key.hash).partition_id
            calls.append((entry, raw_key, table, request, (entry.table_name, owner)))
    # Every key is checked before any read is sent.
    results = await asyncio.gather(*(ctx.send(c[2], c[3]) for c in calls), return_exceptions=True)

    responses: dict[str, list[bytes]] = {entry.table_name: [] for entry in req.tables}
    unprocessed: dict[str, dict[str, Any]] = {}
    units: list[tuple[str, float]] = []
    returned = 0
    from_partition: dict[tuple[str, str], int] = {}
    failures: list[BaseException] = []
    for (entry, raw_key, _, _, partition), result in zip(calls, results, strict=True):
        read = 0 if isinstance(result, BaseException) else _item_bytes(result, charged)
        if isinstance(result, BaseException):
            if not _retriable(result):
                raise result
            failures.append(result)
        elif result.status == pb.OK and (
            returned + len(result.value) > MAX_RESPONSE_BYTES
            or from_partition.get(partition, 0) + read > MAX_PARTITION_BYTES
        ):
            # Over DynamoDB's sizes: left for the client to ask again, charged a read of
            # nothing (dynalite's DynamoDB-verified figures: 1 unit a key left, read
            # strongly consistent).
            if charged:
                units.append((entry.table_name, capacity.read_units(0, entry.consistent)))
        else:
            if charged:
                units.append((entry.table_name, capacity.read_units(result.capacity_bytes, entry.consistent)))
            if result.status == pb.OK:
                returned += len(result.value)
                from_partition[partition] = from_partition.get(partition, 0) + read
                responses[entry.table_name].append(result.value)
            continue
        left = unprocessed.setdefault(entry.table_name, {**entry.raw, "Keys": []})
        left["Keys"].append(raw_key)
    if failures and len(failures) == len(calls):
        raise failures[0]
    consumed = capacity.consumed_per_table(units, req.capacity) if charged else None
    return wire.body(
        (b'"Responses":', b"{" + b",".join(orjson.dumps(t) + b":[" + b",".join(items) + b"]"
                                      for t, items in responses.items()) + b"}"),
        (b'"UnprocessedKeys":', orjson.dumps(unprocessed)),
        (b'"ConsumedCapacity":', wire.encoded(consumed)),
    )  # fmt: skip


def _item_bytes(result: pb.Response, charged: bool) -> int:
    """An item's size read from its partition: the node's count when capacity was asked
    for (the whole item's size, exact past a read unit), else the answer's JSON (the
    stored item, never smaller than its size, or what a projection keeps of it)."""
    return int(result.capacity_bytes) if charged else len(result.value)


def _refuse_repeated_keys(raw_keys: list[dict[str, Any]]) -> None:
    """Keys alike attribute for attribute are refused before any table is looked up, as
    DynamoDB checks them (dynalite's recorded tests: a repeated key on a table that does
    not exist is a ValidationException, not a ResourceNotFoundException). Keys alike only
    once typed by the table's schema (the numbers 1 and 1.0) are found with the table."""
    seen: set[bytes] = set()
    for raw in raw_keys:
        alike = orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
        if alike in seen:
            raise errors.validation(_DUPLICATES)
        seen.add(alike)


def _retriable(exc: BaseException) -> bool:
    return isinstance(exc, DynamoError) and exc.retriable
