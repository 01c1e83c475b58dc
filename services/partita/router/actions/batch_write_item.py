"""BatchWriteItem: up to 25 puts and deletes, issued concurrently so they share WAL batches.

Every request is validated before any is sent, so a bad request writes nothing. Each
write is atomic on its own (DynamoDB promises no more); a write that fails for a
transient reason is returned in UnprocessedItems for the client to retry.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity, index_keys, streams
from partita.api.index_keys import check_index_key_values, collection_metrics, index_key_attributes
from partita.api.operations import batch_write_item
from partita.api.table_keys import ItemKey, key_of_item, key_of_key
from partita.common import errors
from partita.common.errors import DynamoError
from partita.router.actions import wire
from partita.router.actions.writes import count_index_units
from partita.router.context import RouterContext

_DUPLICATES = "Provided list of item keys contains duplicates"
_KEY_MISMATCH = "The provided key element does not match the schema"


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = batch_write_item.validate(body)
    charged = req.capacity != "NONE"
    tables = {r.table_name: ctx.tables.require_active(r.table_name) for r in req.requests}
    seen: set[tuple[str, bytes]] = set()
    planned = []
    for write in req.requests:
        table = tables[write.table_name]
        key = _key(table.record, write)
        if (write.table_name, key.storage_key) in seen:
            raise errors.validation(_DUPLICATES)
        seen.add((write.table_name, key.storage_key))
        options: dict[str, Any] = {}
        if charged:
            options["capacity"] = True
        if table.record.indexes:  # always: a global index is admitted on what it consumes
            options["index_capacity"] = index_keys.capacity_specs(table.record)
        options.update(streams.record_options(table.record))
        if write.put is not None:
            if charged:
                options["size"] = write.size
            request = pb.Request(
                op=pb.PUT, key_hash=key.hash, key=key.storage_key, value=orjson.dumps(write.put),
                body=wire.request_body(options), item_size=write.size,
            )  # fmt: skip
        else:
            request = pb.Request(
                op=pb.DELETE, key_hash=key.hash, key=key.storage_key, body=wire.request_body(options)
            )
        planned.append((write, table, request))
    # Every request is checked before any write is sent.
    results = await asyncio.gather(*(ctx.send(p[1], p[2]) for p in planned), return_exceptions=True)

    unprocessed: dict[str, list[Any]] = {}
    units: list[tuple[str, float]] = []
    indexes: dict[str, capacity.IndexUnits] = {}
    failures: list[BaseException] = []
    collections: dict[str, list[dict[str, Any]]] = {}
    for (write, table, _), result in zip(planned, results, strict=True):
        if isinstance(result, BaseException):
            if not (isinstance(result, DynamoError) and result.retriable):
                raise result
            failures.append(result)
            unprocessed.setdefault(write.table_name, []).append(write.raw)
            continue
        if charged:
            units.append((write.table_name, capacity.write_units(result.capacity_bytes, write.size)))
            count_index_units(indexes.setdefault(write.table_name, {}), table, result)
        written = write.put if write.put is not None else write.key
        assert written is not None
        collection = collection_metrics(table.record, body, written)
        if collection is not None:
            collections.setdefault(write.table_name, []).append(collection)
    if failures and len(failures) == len(planned):
        raise failures[0]
    consumed = capacity.consumed_per_table(units, req.capacity, indexes) if charged else None
    return wire.body(
        (b'"UnprocessedItems":', orjson.dumps(unprocessed)),
        (b'"ConsumedCapacity":', wire.encoded(consumed)),
        (b'"ItemCollectionMetrics":', wire.encoded(collections or None)),
    )


def _key(record: Any, write: batch_write_item.WriteRequest) -> ItemKey:
    if write.put is None:
        assert write.key is not None
        return key_of_key(record, write.key)
    try:
        key = key_of_item(record, write.put)
    except DynamoError as exc:
        # DynamoDB words a put's key problems like a key's in a batch.
        if "Missing the key" in exc.message or "Type mismatch for key" in exc.message:
            raise errors.validation(_KEY_MISMATCH) from None
        raise
    if record.indexes:
        check_index_key_values(index_key_attributes(record.indexes), write.put)
    return key
