"""DescribeTable.

A local cluster's autoadmin moves a table out of CREATING or DELETING within a fraction
of a second, but SDK waiters (boto3's `table_exists` / `table_not_exists`) ask once at
once and then sleep 20 s when the answer is not final yet. So a DescribeTable that
finds a table in transition gives the transition a short, bounded time to finish
before answering; the CreateTable and DeleteTable responses themselves still say
CREATING and DELETING, as DynamoDB's do.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from partita.api.operations import table_name_only
from partita.common import errors
from partita.control.model import TableRecord
from partita.router.context import RouterContext
from partita.router.describe import table_description

SETTLE_SECONDS = 2.0  # longest a DescribeTable waits for a transition to finish
SETTLE_POLL_SECONDS = 0.02
# The cache follows the store's watch on its own; reading the store itself is only a
# fallback, every this many polls, so waiting DescribeTables add little load to etcd.
SETTLE_READ_EVERY = 10
_IN_TRANSITION = ("CREATING", "DELETING")


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    name = table_name_only.validate(body)
    record = ctx.tables.require(name).record
    if record.status in _IN_TRANSITION:
        record = await settled(ctx, name, record)
    stats = await ctx.tables.stats_of(record.table_id)
    return {"Table": table_description(record, ctx.table_arn(name), stats)}


async def settled(ctx: RouterContext, name: str, record: TableRecord) -> TableRecord:
    """The table once out of CREATING/DELETING, or as it is after SETTLE_SECONDS;
    ResourceNotFoundException once it is deleted."""
    deadline = time.monotonic() + SETTLE_SECONDS
    for poll in range(int(SETTLE_SECONDS / SETTLE_POLL_SECONDS) + 1):
        if poll % SETTLE_READ_EVERY == SETTLE_READ_EVERY - 1:
            await ctx.tables.refresh()
        table = ctx.tables.get(name)
        if table is None:
            raise errors.table_not_found(name)
        if table.record.table_id != record.table_id:
            return table.record  # deleted and created again meanwhile: describe the new one
        record = table.record
        if record.status not in _IN_TRANSITION or time.monotonic() >= deadline:
            return record
        await asyncio.sleep(SETTLE_POLL_SECONDS)
    return record
