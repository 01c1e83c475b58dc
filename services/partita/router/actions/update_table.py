"""UpdateTable: billing mode, provisioned throughput, deletion protection and global
secondary indexes, stored in the table spec with compare-and-swap.

As in DynamoDB, a change of throughput takes the table through UPDATING: it moves the
spec's generation on, and the table is ACTIVE again once the autoadmin has applied it
(split partitions where the new throughput needs more, and every replica serves them).
Deletion protection and a stream change leave the autoadmin nothing to do, and the
table ACTIVE (a stream is kept by the partitions' leaders as they write).

An index change does not move the generation either. The generation counts what the
autoadmin must apply, and an index asks nothing of it: an index is evaluated from the
table's items when it is read (`router/actions/index_reads.py`), so a new global index
needs no backfill and serves at once (items whose key attributes have another type are
simply not in it, as DynamoDB's backfill leaves them out), a deleted one is gone at
once, and an index's own throughput is not placed anywhere. Moving the generation would
only hold the table in UPDATING until the autoadmin had observed a change it has nothing
to do for. So the answer tells the change as DynamoDB's does while it is under way (the
new index CREATING, a deleted one DELETING, an updated one UPDATING with its old
throughput), with the table ACTIVE, which DynamoDB shows too once an index build is past
its resource allocation; the next DescribeTable already shows the index ACTIVE, or gone,
which is what SDK waiters and test suites poll for. (In Kubernetes the API server moves
`metadata.generation` on every spec change, so there the table is UPDATING until the
operator has observed it, as for any other spec change.)
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from partita.api.operations import (
    common,
    on_demand_throughput,
    stream_specification,
    update_table,
    warm_throughput,
)
from partita.common import errors
from partita.control.model import BillingMode, SecondaryIndex, TableRecord, TableSpec
from partita.router.actions import table_spec
from partita.router.context import RouterContext
from partita.router.describe import table_description


def _updated(req: update_table.UpdateTableRequest, spec: TableSpec, now: float) -> TableSpec:
    before = spec
    if req.deletion_protection is not None:
        spec = dataclasses.replace(spec, deletion_protection=req.deletion_protection)
    if req.changes_throughput:
        spec = _throughput_updated(req, spec, now)
    if req.on_demand_max is not None:
        _, kept = on_demand_throughput.on_update(req.on_demand_max, spec.billing_mode, spec.on_demand_max)
        spec = dataclasses.replace(spec, on_demand_max=kept)
    if req.table_class is not None:
        spec = dataclasses.replace(spec, table_class=req.table_class, table_class_changed_at=round(now, 3))
    if req.stream is not None:
        spec = dataclasses.replace(
            spec, stream=stream_specification.on_update(spec.stream, req.stream, spec.name, round(now, 3))
        )
    return update_table.with_index_updates(req, before, spec, now)


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
    warm = spec.warm_throughput
    if req.warm_throughput is not None:
        warm = warm_throughput.raised(warm, req.warm_throughput)
    return dataclasses.replace(
        spec,
        billing_mode=mode,
        read_capacity=rcu,
        write_capacity=wcu,
        generation=spec.generation + 1,
        throughput_history=history,
        warm_throughput=warm,
        # A provisioned table has no on-demand maximum (switching drops it).
        on_demand_max=(0, 0) if mode == "PROVISIONED" else spec.on_demand_max,
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
    if before and req.index_updates:
        answered = dataclasses.replace(answered, indexes=_indexes_as_answered(req, before[-1], answered))
    record = TableRecord.of(answered, None, list(cached.record.partitions) if cached else []).with_status(
        "UPDATING" if req.changes_throughput else "ACTIVE"
    )
    stats = await ctx.tables.stats_of(spec.table_id)
    description = table_description(record, ctx.table_arn(spec.name), stats)
    _tell_index_changes(req, description)
    if before and req.on_demand_max is not None:
        # The answer echoes the merge, a -1 as sent; DescribeTable shows what is left.
        echo, _ = on_demand_throughput.on_update(
            req.on_demand_max, spec.billing_mode, before[-1].on_demand_max
        )
        description["OnDemandThroughput"] = on_demand_throughput.described(echo) or {}
    return {"TableDescription": description}


def _indexes_as_answered(
    req: update_table.UpdateTableRequest, before: TableSpec, after: TableSpec
) -> tuple[SecondaryIndex, ...]:
    """The indexes UpdateTable's answer lists: as DynamoDB's, a deleted one still, where it
    was, and an updated one with its old throughput (in effect once it is ACTIVE again),
    unless the table switched to PROVISIONED, where the answer has the new throughput
    already (the 2026 catalogue of DynamoDB's answers cited in
    api/operations/update_table.py, DDB-TABLE-165)."""
    actions = {u.name: u.action for u in req.index_updates}
    told_before = ("Update", "Delete") if before.billing_mode == after.billing_mode else ("Delete",)
    now_there = {i.name: i for i in after.indexes}
    out = [
        i if actions.get(i.name) in told_before else now_there[i.name]
        for i in before.indexes
        if i.name in now_there or actions.get(i.name) == "Delete"
    ]
    return (*out, *(i for i in after.indexes if actions.get(i.name) == "Create"))


_STATUS_TOLD = {"Create": "CREATING", "Update": "UPDATING", "Delete": "DELETING"}


def _tell_index_changes(req: update_table.UpdateTableRequest, description: dict[str, Any]) -> None:
    """Each changed index's IndexStatus as the answer tells it; a new one is not being
    backfilled yet (DynamoDB's answer: Backfilling false, DDB-TABLE-138, -165)."""
    actions = {u.name: u.action for u in req.index_updates}
    for index in description.get("GlobalSecondaryIndexes", ()):
        action = actions.get(index["IndexName"])
        if action is None:
            continue
        index["IndexStatus"] = _STATUS_TOLD[action]
        if action == "Create":
            index["Backfilling"] = False
