"""CreateTable: place the partitions, store the table as CREATING, answer at once."""

from __future__ import annotations

import time
from typing import Any

from partita.api.operations import create_table
from partita.autoadmin.placement import initial_placement
from partita.common import errors
from partita.common.partition_count import initial_partition_count
from partita.common.partition_map import Partition, split_evenly
from partita.control.model import TableRecord, new_table_id
from partita.router.context import RouterContext
from partita.router.describe import table_description


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = create_table.validate(body)
    on_demand = req.billing_mode == "PAY_PER_REQUEST"
    count = initial_partition_count(
        req.read_capacity, req.write_capacity, on_demand, ctx.settings.on_demand_partitions
    )
    await ctx.tables.refresh()
    table_id = new_table_id()
    placement = initial_placement(count, list(ctx.tables.nodes.values()), table_id)
    partitions = tuple(
        Partition(f"{table_id:016x}-{i:04d}", start, end, replicas, replicas[0])
        for i, ((start, end), replicas) in enumerate(zip(split_evenly(count), placement, strict=True))
    )
    record = TableRecord(
        name=req.table_name,
        table_id=table_id,
        status="CREATING",
        partition_key=req.partition_key,
        sort_key=req.sort_key,
        attribute_definitions=req.attribute_definitions,
        billing_mode=req.billing_mode,
        read_capacity=req.read_capacity,
        write_capacity=req.write_capacity,
        created_at=round(time.time(), 3),
        partitions=partitions,
        tags=req.tags,
    )
    if not await ctx.tables.store.create_table(record):
        raise errors.resource_in_use(f"Table already exists: {req.table_name}")
    await ctx.tables.refresh()
    return {"TableDescription": table_description(record, ctx.table_arn(record.name))}
