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
from partita.control.model import TableSpec
from partita.router.actions import table_spec
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = update_time_to_live.validate(body)
    now = time.time()

    def edit(spec: TableSpec) -> TableSpec:
        ttl = update_time_to_live.change(spec.time_to_live, req.attribute_name, req.enabled, now)
        return dataclasses.replace(spec, time_to_live=ttl)

    await table_spec.change(
        ctx,
        req.table_name,
        edit,
        refuse=("CREATING", "DELETING"),
        missing=lambda: errors.table_not_found(req.table_name),
    )
    # DynamoDB echoes the request's specification.
    return {"TimeToLiveSpecification": {"AttributeName": req.attribute_name, "Enabled": req.enabled}}
