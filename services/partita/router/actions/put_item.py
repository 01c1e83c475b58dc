"""PutItem: condition checked and item written in one step on the partition's node."""

from __future__ import annotations

from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.operations import put_item
from partita.api.table_keys import key_of_item
from partita.router.actions import wire
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = put_item.validate(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_item(table.record, req.item)
    options = req.expressions.storage_body()
    if req.return_old:
        options["return_old"] = True
    if req.return_old_on_failure:
        options["return_old_on_failure"] = True
    charged = req.capacity != "NONE"
    if charged:
        options["capacity"] = True
        options["size"] = req.size
    request = pb.Request(
        op=pb.PUT,
        key_hash=key.hash,
        key=key.storage_key,
        value=orjson.dumps(req.item),
        body=wire.request_body(options),
    )
    response = await ctx.send(table, request)
    consumed = None
    if charged:
        units = capacity.write_units(response.capacity_bytes, req.size)
        consumed = capacity.consumed(req.table_name, units, req.capacity)
    return wire.body(("Attributes", wire.attributes(response)), ("ConsumedCapacity", wire.encoded(consumed)))
