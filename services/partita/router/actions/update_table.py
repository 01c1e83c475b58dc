"""UpdateTable: billing mode and provisioned throughput, stored with compare-and-swap.

DynamoDB passes through UPDATING while it applies a throughput change; Partita records
the new settings in one step (admission control reads them from the table record), so
the table stays ACTIVE and the answer shows it ACTIVE.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from partita.api.operations import common, update_table
from partita.common import errors
from partita.control.model import BillingMode
from partita.router.context import RouterContext
from partita.router.describe import table_description

_IN_USE = "Attempt to change a resource which is still in use: "
CAS_ATTEMPTS = 5


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = update_table.validate(body)
    for _ in range(CAS_ATTEMPTS):  # a concurrent change moved the revision: read again
        record = await ctx.tables.store.get_table(req.table_name)
        if record is None:
            raise errors.table_not_found(req.table_name)
        if record.status == "CREATING":
            raise errors.resource_in_use(_IN_USE + f"Table is being created: {req.table_name}")
        if record.status == "DELETING":
            raise errors.resource_in_use(_IN_USE + f"Table is being deleted: {req.table_name}")
        mode: BillingMode = req.billing_mode or record.billing_mode
        rcu, wcu = record.read_capacity, record.write_capacity
        if req.read_capacity is not None:
            assert req.write_capacity is not None
            if mode == "PAY_PER_REQUEST":
                raise errors.validation(
                    common.INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when "
                    "BillingMode is PAY_PER_REQUEST"
                )
            if record.billing_mode == "PROVISIONED" and (req.read_capacity, req.write_capacity) == (rcu, wcu):
                raise errors.validation(
                    "The provisioned throughput for the table will not change. The requested value equals the "
                    f"current value. Current ReadCapacityUnits provisioned for the table: {rcu}. Requested "
                    f"ReadCapacityUnits: {req.read_capacity}. Current WriteCapacityUnits provisioned for the "
                    f"table: {wcu}. Requested WriteCapacityUnits: {req.write_capacity}. Refer to the Amazon "
                    "DynamoDB Developer Guide for current limits and how to request higher limits."
                )
            rcu, wcu = req.read_capacity, req.write_capacity
        if mode == "PAY_PER_REQUEST":
            rcu = wcu = 0
        updated = dataclasses.replace(record, billing_mode=mode, read_capacity=rcu, write_capacity=wcu)
        if await ctx.tables.store.replace_table(updated):
            await ctx.tables.refresh()
            stats = await ctx.tables.stats_of(updated.table_id)
            return {"TableDescription": table_description(updated, ctx.table_arn(updated.name), stats)}
    raise errors.internal_server_error("Table changed concurrently; retry")
