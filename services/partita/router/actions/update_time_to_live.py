"""UpdateTimeToLive: the table's TTL setting, stored with its desired spec by compare-and-swap.

Storage nodes follow the control store: each partition's leader starts or stops deleting
expired items (storage/ttl_sweeper.py) once it sees the new setting.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from partita.api.operations import update_time_to_live
from partita.common import errors
from partita.router.context import RouterContext

_IN_USE = "Attempt to change a resource which is still in use: "
CAS_ATTEMPTS = 5


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = update_time_to_live.validate(body)
    for _ in range(CAS_ATTEMPTS):  # a concurrent change moved the revision: read again
        record = await ctx.tables.store.get_table(req.table_name)
        if record is None:
            raise errors.table_not_found(req.table_name)
        if record.status == "CREATING":
            raise errors.resource_in_use(_IN_USE + f"Table is being created: {req.table_name}")
        if record.status == "DELETING":
            raise errors.resource_in_use(_IN_USE + f"Table is being deleted: {req.table_name}")
        ttl = update_time_to_live.change(record.time_to_live, req.attribute_name, req.enabled, time.time())
        if await ctx.tables.store.replace_table(dataclasses.replace(record, time_to_live=ttl)):
            await ctx.tables.refresh()
            # DynamoDB echoes the request's specification.
            return {"TimeToLiveSpecification": {"AttributeName": req.attribute_name, "Enabled": req.enabled}}
    raise errors.internal_server_error("Table changed concurrently; retry")
