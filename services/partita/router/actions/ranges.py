"""What Query and Scan share on the router: reading one key range as a page, and the answer.

A page is read by the node that owns the range (`pb.QUERY`/`pb.SCAN`, planned by
`storage.operations.plan_range`); a Scan may read several ranges, one partition after
another, into one page, with the limit and the 1 MB budget carried from range to range.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity, index_keys
from partita.api.expressions import ast
from partita.api.expressions.parser import walk_paths
from partita.api.operations.common import Expressions
from partita.api.operations.reads import ReadCommon
from partita.api.table_keys import ItemKey, key_of_key
from partita.common import errors
from partita.common.errors import DynamoError
from partita.control.model import SecondaryIndex, TableRecord
from partita.router.actions import wire
from partita.router.context import RouterContext
from partita.router.table_cache import CachedTable

_INVALID = "One or more parameter values were invalid: "
# DynamoDB stops a Query or Scan page once it has read 1 MB of items.
PAGE_BYTES = 1024 * 1024


@dataclass
class Page:
    """Items and counters accumulated over the ranges a page read."""

    items: list[bytes] = field(default_factory=list)  # each a JSON array of items, non-empty
    count: int = 0
    scanned: int = 0
    size: int = 0  # bytes counted toward the 1 MB page (values.sizes), not capacity
    # Read units so far: each partition's read rounded on its own (DynamoDB's figures).
    units: float = 0.0
    last: dict[str, Any] | None = None  # the LastEvaluatedKey, once the page stopped early

    def remaining_limit(self, limit: int | None) -> int | None:
        return None if limit is None else limit - self.scanned


def table_to_read(ctx: RouterContext, read: ReadCommon, start_lacks_key: str) -> CachedTable:
    """The ACTIVE table a Query or Scan reads. An ExclusiveStartKey without the table's
    key attributes is refused with `start_lacks_key` before the index or the key
    conditions are looked at, as DynamoDB orders its checks (dynalite's recorded tests)."""
    table = ctx.tables.require_active(read.table_name)
    start = read.exclusive_start
    if start is not None and any(name not in start for name in table.record.key_names):
        raise errors.validation(start_lacks_key)
    return table


def index_to_read(record: TableRecord, read: ReadCommon, expressions: Expressions) -> SecondaryIndex:
    """The secondary index a Query or Scan names, checked against how it reads it."""
    assert read.index_name is not None
    index = record.index(read.index_name)
    if index is None:
        raise errors.validation(f"The table does not have the specified index: {read.index_name}")
    if index.kind == "GLOBAL":
        if read.consistent:
            raise errors.validation("Consistent reads are not supported on global secondary indexes")
        if read.requested_select == "ALL_ATTRIBUTES" and index.projection_type != "ALL":
            raise errors.validation(
                _INVALID + f"Select type ALL_ATTRIBUTES is not supported for global secondary index "
                f"{index.name} because its projection type is not ALL"
            )
        _check_projected(record, index, expressions)
    return index


def _check_projected(record: TableRecord, index: SecondaryIndex, expressions: Expressions) -> None:
    """A global index cannot fetch what its entries lack: a projection or filter naming
    an attribute it does not project is refused (DynamoDB refuses it, as ScyllaDB
    Alternator's test_gsi.py recorded; the wording is Partita's, none was recorded)."""
    names = index_keys.projected_names(record, index)
    if names is None:
        return
    resolved = expressions.resolved
    for tree, what in (
        (resolved.projection, "projection expression"),
        (resolved.filter, "filter expression"),
    ):
        missing = unprojected(tree, names)
        if missing:
            raise errors.validation(
                _INVALID + f"Global secondary index {index.name} does not project the attributes its {what} "
                f"names: {', '.join(missing)}"
            )


def unprojected(tree: ast.Projection | ast.Condition | None, names: frozenset[str] | None) -> list[str]:
    """The attributes an expression names that an index's entries do not project."""
    if tree is None or names is None:
        return []
    paths = tree.paths if isinstance(tree, ast.Projection) else tuple(walk_paths(tree))
    return sorted({str(p.elements[0]) for p in paths} - names)


def start_key(record: TableRecord, start: dict[str, Any]) -> ItemKey:
    """ExclusiveStartKey as a key of the table, its errors worded as DynamoDB words them."""
    try:
        return key_of_key(record, start)
    except DynamoError as exc:
        if exc.code != "ValidationException":
            raise
        raise errors.validation(f"The provided starting key is invalid: {exc.message}") from None


async def read_range(
    ctx: RouterContext,
    table: CachedTable,
    op: pb.Op,
    key_hash: int,
    lo: bytes,
    hi: bytes,
    page: Page,
    read: ReadCommon,
    expressions: Expressions,
    *,
    reverse: bool = False,
) -> None:
    """Read [lo, hi) on the node owning `key_hash` into `page` (which records the stop)."""
    record = table.record
    options = expressions.storage_body()
    options.update(
        lo=base64.b64encode(lo).decode(),
        hi=base64.b64encode(hi).decode(),
        budget=PAGE_BYTES - page.size,
        key_names=record.key_names,
    )
    limit = page.remaining_limit(read.limit)
    if limit is not None:
        options["limit"] = limit
    if reverse:
        options["reverse"] = True
    if read.select == "COUNT":
        options["count_only"] = True
    request = pb.Request(op=op, key_hash=key_hash, consistent=read.consistent, body=orjson.dumps(options))
    response = await ctx.send(table, request)
    summary = orjson.loads(response.body)
    page.count += summary["count"]
    page.scanned += summary["scanned"]
    # An older storage node counts the page in capacity bytes.
    page.size += summary.get("page_bytes", response.capacity_bytes)
    page.units += capacity.range_read_units(response.capacity_bytes, read.consistent)
    page.last = summary["last"]
    if len(response.value) > 2:  # "[]" is an empty page
        page.items.append(response.value[1:-1])


def answer(page: Page, read: ReadCommon) -> bytes:
    """The Query/Scan response body."""
    items = None if read.select == "COUNT" else b"[" + b",".join(page.items) + b"]"
    consumed = capacity.consumed(
        read.table_name, page.units or capacity.range_read_units(0, read.consistent), read.capacity
    )
    return wire.body(
        (b'"Items":', items),
        (b'"Count":', str(page.count).encode()),
        (b'"ScannedCount":', str(page.scanned).encode()),
        (b'"LastEvaluatedKey":', wire.encoded(page.last)),
        (b'"ConsumedCapacity":', wire.encoded(consumed)),
    )
