"""Tags live on the table spec; every change is a compare-and-swap of the spec.

Tags do not move the spec's generation: the autoadmin has nothing to apply for them,
so tagging never sends a table through UPDATING.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from partita.common import errors
from partita.control.model import TableSpec
from partita.router.actions import table_spec
from partita.router.context import RouterContext

Tags = tuple[tuple[str, str], ...]


def not_found(arn: str) -> errors.DynamoError:
    # DynamoDB's own spelling ("ResourcArn"), as recorded by dynalite.
    return errors.resource_not_found(f"Requested resource not found: ResourcArn: {arn} not found")


async def read(ctx: RouterContext, table_name: str, arn: str) -> TableSpec:
    spec = await table_spec.client_spec(ctx, table_name)
    if spec is None or ctx.table_arn(table_name) != arn:
        raise not_found(arn)
    return spec


async def change(ctx: RouterContext, table_name: str, arn: str, edit: Callable[[Tags], Tags]) -> None:
    if ctx.table_arn(table_name) != arn:
        raise not_found(arn)
    await table_spec.change(
        ctx,
        table_name,
        lambda spec: dataclasses.replace(spec, tags=edit(spec.tags)),
        refuse=(),
        missing=lambda: not_found(arn),
    )
