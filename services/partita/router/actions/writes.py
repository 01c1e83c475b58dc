"""What PutItem, UpdateItem and DeleteItem do alike once validated: send one keyed write
to the partition's node and answer with its Attributes and ConsumedCapacity."""

from __future__ import annotations

from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api import capacity, index_keys, streams
from partita.api.table_keys import ItemKey
from partita.common.errors import DynamoError
from partita.router.actions import wire
from partita.router.actions.orphan_locks import clear_orphan
from partita.router.context import RouterContext
from partita.router.table_cache import CachedTable


async def send_write(
    ctx: RouterContext,
    table: CachedTable,
    op: pb.Op,
    key: ItemKey,
    options: dict[str, Any],
    *,
    capacity_mode: str,
    return_old_on_failure: bool,
    value: bytes = b"",
    new_size: int = 0,
    collection: dict[str, Any] | None = None,
) -> bytes:
    """`options` holds the op's own storage options; this adds the shared ones.
    `collection`: the ItemCollectionMetrics to answer with, if any."""
    if return_old_on_failure:
        options["return_old_on_failure"] = True
    charged = capacity_mode != "NONE"
    if charged:
        options["capacity"] = True
    if table.record.indexes:  # always: a global index is admitted on what it consumes
        options["index_capacity"] = index_keys.capacity_specs(table.record)
    options.update(streams.record_options(table.record))
    request = pb.Request(
        op=op,
        key_hash=key.hash,
        key=key.storage_key,
        value=value,
        body=wire.request_body(options),
        item_size=new_size,  # the node meters the write with it
    )
    try:
        response = await ctx.send(table, request)
    except DynamoError as exc:
        if exc.code != "TransactionConflictException" or not await clear_orphan(
            ctx, table, key.hash, key.storage_key, exc
        ):
            raise
        response = await ctx.send(table, request)
    consumed = None
    if charged:
        units = capacity.write_units(response.capacity_bytes, new_size)
        consumed = capacity.consumed_with_indexes(
            table.record.name, units, count_index_units({}, table, response), capacity_mode
        )
    return wire.body(
        (b'"Attributes":', wire.attributes(response)),
        (b'"ConsumedCapacity":', wire.encoded(consumed)),
        (b'"ItemCollectionMetrics":', wire.encoded(collection)),
    )


def count_index_units(
    into: capacity.IndexUnits, table: CachedTable, response: pb.Response
) -> capacity.IndexUnits:
    """Adds the write units each of the table's indexes consumed (the node's answer)."""
    if response.index_units:
        local = frozenset(i.name for i in table.record.indexes if i.kind == "LOCAL")
        capacity.add_index_units(into, dict(response.index_units), local)
    return into
