"""PutItem: condition checked and item written in one step on the partition's node."""

from __future__ import annotations

from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api.index_keys import check_index_key_values, collection_metrics, index_key_attributes
from partita.api.operations import put_item
from partita.api.table_keys import key_of_item
from partita.router.actions.writes import send_write
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = put_item.validate(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_item(table.record, req.item)
    if table.record.indexes:
        check_index_key_values(index_key_attributes(table.record.indexes), req.item)
    options = req.expressions.storage_body()
    if req.return_old:
        options["return_old"] = True
    if req.capacity != "NONE":
        options["size"] = req.size  # the node charges the larger of old and new
    return await send_write(
        ctx,
        table,
        pb.PUT,
        key,
        options,
        capacity_mode=req.capacity,
        return_old_on_failure=req.return_old_on_failure,
        collection=collection_metrics(table.record, body, req.item),
        value=orjson.dumps(req.item),
        new_size=req.size,
    )
