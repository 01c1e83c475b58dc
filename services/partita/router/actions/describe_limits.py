"""DescribeLimits: the per-account and per-table throughput ceilings Partita enforces."""

from __future__ import annotations

from typing import Any

from partita.api.operations.update_table import MAX_TABLE_UNITS
from partita.router.context import RouterContext

# DynamoDB's default account quotas (80,000 units across tables in a region).
ACCOUNT_MAX_UNITS = 80_000


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    return {
        "AccountMaxReadCapacityUnits": ACCOUNT_MAX_UNITS,
        "AccountMaxWriteCapacityUnits": ACCOUNT_MAX_UNITS,
        "TableMaxReadCapacityUnits": MAX_TABLE_UNITS,
        "TableMaxWriteCapacityUnits": MAX_TABLE_UNITS,
    }
