"""TagResource: add or overwrite tags of a table."""

from __future__ import annotations

from typing import Any

from partita.api.operations import tag_resource
from partita.router.actions import tags
from partita.router.context import RouterContext


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = tag_resource.validate(body)

    def merged(current: tags.Tags) -> tags.Tags:
        out = dict(current)
        out.update(req.tags)
        tag_resource.check_tag_count(len(out))  # the limit is on the table's tags, not the call's
        return tuple(out.items())

    await tags.change(ctx, req.table_name, req.arn, merged)
    # DynamoDB answers a successful tag change with an empty body, not "{}"
    # (Alternator's test_tags_return_empty_body, recorded against DynamoDB).
    return b""
