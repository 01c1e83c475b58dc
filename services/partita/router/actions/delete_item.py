"""DeleteItem: condition checked and item removed in one step on the partition's node."""

from __future__ import annotations

from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api.index_keys import collection_metrics
from partita.api.operations import delete_item
from partita.api.table_keys import key_of_key
from partita.router.actions.writes import send_write
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = delete_item.validate(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_key(table.record, req.key)
    options = req.expressions.storage_body()
    if req.return_old:
        options["return_old"] = True
    return await send_write(
        ctx,
        table,
        pb.DELETE,
        key,
        options,
        capacity_mode=req.capacity,
        return_old_on_failure=req.return_old_on_failure,
        collection=collection_metrics(table.record, body, req.key),
    )
