"""Changing a stored table spec: read, check the table's status, compare-and-swap.

Shared by UpdateTable, DeleteTable and the tag operations. A lost compare-and-swap
means another router changed the spec in between: read again, a bounded number of
times.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from partita.common import errors
from partita.control.model import TableSpec, TableStatus, client_status, table_status
from partita.router.context import RouterContext

CAS_ATTEMPTS = 5
IN_USE = "Attempt to change a resource which is still in use: "
_BEING = {"CREATING": "created", "UPDATING": "updated", "DELETING": "deleted"}


def in_use(name: str, status: TableStatus) -> errors.DynamoError:
    return errors.resource_in_use(IN_USE + f"Table is being {_BEING[status]}: {name}")


async def client_spec(ctx: RouterContext, name: str) -> TableSpec | None:
    """The stored spec of the table a client names: None for a backup's hidden table,
    which no DynamoDB operation reaches, even by its name."""
    spec = await ctx.catalog.get_table_spec(name)
    return None if spec is None or spec.backup is not None else spec


async def change(
    ctx: RouterContext,
    name: str,
    edit: Callable[[TableSpec], TableSpec],
    *,
    refuse: Collection[TableStatus],
    missing: Callable[[], errors.DynamoError],
) -> TableSpec:
    """Apply `edit` to the stored spec, unless the table's status is one to `refuse`;
    the spec as stored.

    `edit` may raise a DynamoError to refuse the change (it runs again after a lost
    compare-and-swap, so it must not have effects).
    """
    for _ in range(CAS_ATTEMPTS):
        spec = await client_spec(ctx, name)
        if spec is None:
            raise missing()
        status = client_status(spec, table_status(spec, await ctx.catalog.get_table_state(name)))
        if status in refuse:
            raise in_use(name, status)
        updated = edit(spec)
        if updated == spec:
            return spec
        if await ctx.catalog.replace_table_spec(updated):
            await ctx.tables.refresh()
            return updated
    raise errors.internal_server_error("Table changed concurrently; retry")
