"""CreateTable: store the desired table spec, answer CREATING at once.

The router decides nothing about the table's layout: the autoadmin places its
partitions and moves it to ACTIVE once every replica serves.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from partita.api.operations import create_table, stream_specification
from partita.api.operations.resource_policy import attached_at_creation
from partita.common import errors
from partita.common.keys import KEY_HASH_DYNAMODB
from partita.control.model import TableRecord, TableSpec, new_table_id
from partita.router.context import RouterContext
from partita.router.describe import created_description


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    spec = await create(ctx, create_table.validate(body))
    record = TableRecord.of(spec, None, [])
    return {"TableDescription": created_description(record, ctx.table_arn(record.name))}


async def create(ctx: RouterContext, req: create_table.CreateTableRequest, importing: str = "") -> TableSpec:
    """The table `req` asks for, stored (CREATING); `importing`: the ImportTable loading
    it (the table stays CREATING to clients until its items are in)."""
    now = round(time.time(), 3)
    spec = TableSpec(
        name=req.table_name,
        table_id=new_table_id(),
        partition_key=req.partition_key,
        sort_key=req.sort_key,
        attribute_definitions=req.attribute_definitions,
        billing_mode=req.billing_mode,
        read_capacity=req.read_capacity,
        write_capacity=req.write_capacity,
        created_at=now,
        tags=req.tags,
        deletion_protection=req.deletion_protection,
        indexes=tuple(dataclasses.replace(index, created_at=now) for index in req.indexes),
        stream=stream_specification.on_create(req.stream, now),
        policies=attached_at_creation(req.resource_policy, now),
        importing=importing,
        key_hash=KEY_HASH_DYNAMODB,
        warm_throughput=req.warm_throughput,
        on_demand_max=req.on_demand_max,
        table_class=req.table_class,
    )
    if not await ctx.catalog.create_table_spec(spec):
        raise errors.resource_in_use(f"Table already exists: {req.table_name}")
    await ctx.tables.refresh()
    return spec
