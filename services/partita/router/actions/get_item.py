"""GetItem: a point read, projected on the node."""

from __future__ import annotations

from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.operations import get_item
from partita.api.operations.reads import check_scalar_key_paths
from partita.api.table_keys import key_of_key
from partita.router.actions import wire
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = get_item.validate(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_key(table.record, req.key)
    check_scalar_key_paths(req.expressions.resolved.projection, table.record)
    options = req.expressions.storage_body()
    charged = req.capacity != "NONE"
    if charged:
        options["capacity"] = True
    request = pb.Request(
        op=pb.GET,
        key_hash=key.hash,
        key=key.storage_key,
        consistent=req.consistent,
        body=wire.request_body(options),
    )
    response = await ctx.send(table, request)
    item = response.value if response.status == pb.OK else None
    consumed = None
    if charged:
        units = capacity.read_units(response.capacity_bytes, req.consistent)
        consumed = capacity.consumed(req.table_name, units, req.capacity)
    return wire.body((b'"Item":', item), (b'"ConsumedCapacity":', wire.encoded(consumed)))
