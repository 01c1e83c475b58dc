"""DeleteTable: mark the table DELETING; nodes drop its data, then it disappears."""

from __future__ import annotations

from typing import Any

from partita.api.operations import table_name_only
from partita.common import errors
from partita.router.context import RouterContext
from partita.router.describe import deleting_description

_IN_USE = "Attempt to change a resource which is still in use: "


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = table_name_only.validate(body)
    for _ in range(5):  # a concurrent transition moved the revision: read again
        record = await ctx.tables.store.get_table(name)
        if record is None:
            raise errors.table_not_found(name)
        if record.status == "CREATING":
            raise errors.resource_in_use(_IN_USE + f"Table is being created: {name}")
        if record.status == "DELETING":
            raise errors.resource_in_use(_IN_USE + f"Table is being deleted: {name}")
        deleting = record.with_status("DELETING")
        stats = await ctx.tables.stats_of(record.table_id)  # gone with the table soon after
        if await ctx.tables.store.replace_table(deleting):
            await ctx.tables.refresh()
            return {"TableDescription": deleting_description(deleting, ctx.table_arn(name), stats)}
    raise errors.internal_server_error("Table changed concurrently; retry")
