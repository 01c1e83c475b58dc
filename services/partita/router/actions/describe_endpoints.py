"""DescribeEndpoints: the address clients with endpoint discovery should use.

DynamoDB answers its own regional endpoint with a cache period of a day; Partita
answers the address this router serves on (`RouterSettings.endpoint_address`).
"""

from __future__ import annotations

from typing import Any

from partita.router.context import RouterContext

CACHE_PERIOD_MINUTES = 1440  # DynamoDB's


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    return {
        "Endpoints": [
            {"Address": ctx.settings.endpoint_address, "CachePeriodInMinutes": CACHE_PERIOD_MINUTES}
        ]
    }
