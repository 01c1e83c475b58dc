"""UpdateItem: condition and update applied to the previous item in one step on its node."""

from __future__ import annotations

from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.operations import update_item
from partita.api.table_keys import key_of_key
from partita.router.actions import wire
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = update_item.validate(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_key(table.record, req.key)
    req.check_key_untouched(table.record)
    options = req.expressions.storage_body()
    # The node needs the key attributes to create a missing item.
    options["key"] = req.key
    if req.return_values != "NONE":
        options["return"] = req.return_values
    if req.return_old_on_failure:
        options["return_old_on_failure"] = True
    charged = req.capacity != "NONE"
    if charged:
        options["capacity"] = True
    request = pb.Request(
        op=pb.UPDATE, key_hash=key.hash, key=key.storage_key, body=wire.request_body(options)
    )
    response = await ctx.send(table, request)
    consumed = None
    if charged:
        consumed = capacity.consumed(
            req.table_name, capacity.write_units(response.capacity_bytes), req.capacity
        )
    return wire.body(("Attributes", wire.attributes(response)), ("ConsumedCapacity", wire.encoded(consumed)))
