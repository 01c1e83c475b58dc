"""UntagResource: remove tags of a table by key (absent keys are ignored)."""

from __future__ import annotations

from typing import Any

from partita.api.operations import untag_resource
from partita.router.actions import tags
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = untag_resource.validate(body)
    gone = set(req.keys)
    await tags.change(
        ctx, req.table_name, req.arn, lambda current: tuple(t for t in current if t[0] not in gone)
    )
    # DynamoDB answers a successful tag change with an empty body, not "{}"
    # (Alternator's test_tags_return_empty_body, recorded against DynamoDB).
    return b""
