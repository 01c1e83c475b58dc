"""UpdateTable: billing mode, provisioned throughput and deletion protection, stored in
the table spec with compare-and-swap.

As in DynamoDB, a change of throughput takes the table through UPDATING: it moves the
spec's generation on, and the table is ACTIVE again once the autoadmin has applied it
(split partitions where the new throughput needs more, and every replica serves them).
Deletion protection alone leaves the autoadmin nothing to do, and the table as it was.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from partita.api.operations import common, update_table
from partita.common import errors
from partita.control.model import BillingMode, TableRecord, TableSpec
from partita.router.actions import table_spec
from partita.router.context import RouterContext
from partita.router.describe import table_description


def _updated(req: update_table.UpdateTableRequest, spec: TableSpec, now: float) -> TableSpec:
    if req.deletion_protection is not None:
        spec = dataclasses.replace(spec, deletion_protection=req.deletion_protection)
    return _throughput_updated(req, spec, now) if req.changes_throughput else spec


def _throughput_updated(req: update_table.UpdateTableRequest, spec: TableSpec, now: float) -> TableSpec:
    mode: BillingMode = req.billing_mode or spec.billing_mode
    rcu, wcu = spec.read_capacity, spec.write_capacity
    if req.read_capacity is not None:
        assert req.write_capacity is not None
        if mode == "PAY_PER_REQUEST":
            raise errors.validation(
                common.INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when "
                "BillingMode is PAY_PER_REQUEST"
            )
        if spec.billing_mode == "PROVISIONED" and (req.read_capacity, req.write_capacity) == (rcu, wcu):
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
    history = spec.throughput_history
    if mode != spec.billing_mode:
        # A change of billing mode is not one of provisioned throughput: it is neither
        # an increase nor one of the day's decreases.
        if mode == "PAY_PER_REQUEST":
            history = dataclasses.replace(history, pay_per_request_since=now)
    else:
        history = history.after_change((spec.read_capacity, spec.write_capacity), (rcu, wcu), now)
    return dataclasses.replace(
        spec,
        billing_mode=mode,
        read_capacity=rcu,
        write_capacity=wcu,
        generation=spec.generation + 1,
        throughput_history=history,
    )


def _as_answered(before: TableSpec, after: TableSpec, now: float) -> TableSpec:
    """What UpdateTable's own answer shows: as DynamoDB, a provisioned table's old
    throughput (the new one is in effect once the table is ACTIVE again) and the day's
    decreases before this one, with the times of this change already."""
    if before.billing_mode != "PROVISIONED" or after.billing_mode != "PROVISIONED":
        return after
    history = dataclasses.replace(
        after.throughput_history, decreases=before.throughput_history.decreases_on(now)
    )
    return dataclasses.replace(
        after,
        read_capacity=before.read_capacity,
        write_capacity=before.write_capacity,
        throughput_history=history,
    )


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = update_table.validate(body)
    now = time.time()
    before: list[TableSpec] = []

    def updated(spec: TableSpec) -> TableSpec:
        before[:] = [spec]  # the spec this change was made to (the last, after retries)
        return _updated(req, spec, now)

    spec = await table_spec.change(
        ctx,
        req.table_name,
        updated,
        refuse=("CREATING", "UPDATING", "DELETING"),
        missing=lambda: errors.table_not_found(req.table_name),
    )
    cached = ctx.tables.get(spec.name)
    answered = _as_answered(before[-1], spec, now) if before and req.changes_throughput else spec
    record = TableRecord.of(answered, None, list(cached.record.partitions) if cached else []).with_status(
        "UPDATING" if req.changes_throughput else "ACTIVE"
    )
    stats = await ctx.tables.stats_of(spec.table_id)
    return {"TableDescription": table_description(record, ctx.table_arn(spec.name), stats)}
