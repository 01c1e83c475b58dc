"""UpdateItem: condition and update applied to the previous item in one step on its node."""

from __future__ import annotations

from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api.index_keys import collection_metrics, index_key_attributes
from partita.api.operations import update_item
from partita.api.table_keys import key_of_key
from partita.router.actions.writes import send_write
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = update_item.validate(body)
    table = ctx.tables.require_active(req.table_name)
    key = key_of_key(table.record, req.key)
    req.check_key_untouched(table.record)
    options = req.expressions.storage_body()
    # The node needs the key attributes to create a missing item.
    options["key"] = req.key
    if table.record.indexes:
        # The node checks the updated item's index key attributes (their type, not empty).
        options["index_keys"] = index_key_attributes(table.record.indexes)
    if req.return_values != "NONE":
        options["return"] = req.return_values
    return await send_write(
        ctx,
        table,
        pb.UPDATE,
        key,
        options,
        capacity_mode=req.capacity,
        return_old_on_failure=req.return_old_on_failure,
        collection=collection_metrics(table.record, body, req.key),
    )
