"""ListTagsOfResource: every tag of a table in one page (at most 50 exist)."""

from __future__ import annotations

from typing import Any

from partita.api.operations import list_tags_of_resource
from partita.router.actions import tags
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> dict[str, Any]:
    req = list_tags_of_resource.validate(body)
    record = await tags.read(ctx, req.table_name, req.arn)
    return {"Tags": [{"Key": k, "Value": v} for k, v in record.tags]}
