"""Tags live on the table record; every change is a compare-and-swap of the record."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from partita.common import errors
from partita.control.model import TableRecord
from partita.router.context import RouterContext

CAS_ATTEMPTS = 5
Tags = tuple[tuple[str, str], ...]


def not_found(arn: str) -> errors.DynamoError:
    # DynamoDB's own spelling ("ResourcArn"), as recorded by dynalite.
    return errors.resource_not_found(f"Requested resource not found: ResourcArn: {arn} not found")


async def read(ctx: RouterContext, table_name: str, arn: str) -> TableRecord:
    record = await ctx.tables.store.get_table(table_name)
    if record is None or ctx.table_arn(table_name) != arn:
        raise not_found(arn)
    return record


async def change(ctx: RouterContext, table_name: str, arn: str, edit: Callable[[Tags], Tags]) -> None:
    for _ in range(CAS_ATTEMPTS):
        record = await read(ctx, table_name, arn)
        if await ctx.tables.store.replace_table(dataclasses.replace(record, tags=edit(record.tags))):
            await ctx.tables.refresh()
            return
    raise errors.internal_server_error("Table changed concurrently; retry")
