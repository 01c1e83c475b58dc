"""Copying every item of one table into another: what backups and restores are made of;
and undoing in the copy what a point-in-time restore's source changed since its time.

The source is read partition by partition in strongly consistent pages (each page as
of its own moment, as a Scan reads); each page's items are written to the target as
plain puts, concurrently. Both sides are the service's own work (`unmetered`): no
throughput charged or refused, as DynamoDB's backups and restores consume none. A
copy is idempotent, so one cut short (its router died) is simply run again.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import point_in_time
from partita.api.table_keys import key_of_item, key_of_key
from partita.api.values import item_size
from partita.common import keys
from partita.common.errors import DynamoError
from partita.router.context import RouterContext

# Bytes of items a page reads, and puts in flight at once: a page's worth.
PAGE_BYTES = 1024 * 1024
WRITES_IN_FLIGHT = 32
# A write or read refused for a passing reason (a leader moving, a node restarting) is
# tried again this many times, this far apart, before the copy gives up (and is retried
# whole by the next claim).
ATTEMPTS = 20
PAUSE_SECONDS = 0.25


@dataclass
class Copied:
    items: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Cursor:
    """Where a copy stands: the next key to read is at or after storage key `lo`, in the
    partition holding hash `key_hash` (looked up again each page: a split moves nothing)."""

    key_hash: int
    lo: bytes


@dataclass
class Snapshot:
    """Items read ahead of their copy (a backup reads a small table before answering),
    and where the rest starts; `rest` None: that was every item."""

    items: list[dict[str, Any]]
    rest: Cursor | None


async def read_ahead(ctx: RouterContext, source: str, budget: int) -> Snapshot:
    """The source's items, up to about `budget` bytes."""
    items: list[dict[str, Any]] = []
    size = 0
    cursor: Cursor | None = _first(ctx, source)
    while cursor is not None and size < budget:
        page, cursor = await _read_at(ctx, source, cursor)
        items.extend(page)
        size += sum(item_size(item) for item in page)
    return Snapshot(items, cursor)


async def copy_table(
    ctx: RouterContext,
    source: str,
    target: str,
    progress: Callable[[Copied], Awaitable[None]] | None = None,
    *,
    start: Cursor | None = None,
    done: Copied | None = None,
) -> Copied:
    """Every item of `source` (from `start`) put into `target`, both by name and placed;
    the counts, added to `done`. `progress` is awaited after each page (a job renews its
    claim there)."""
    done = done or Copied()
    cursor: Cursor | None = start or _first(ctx, source)
    while cursor is not None:
        items, cursor = await _read_at(ctx, source, cursor)
        await write_items(ctx, target, items, done)
        if progress is not None:
            await progress(done)
    return done


def _first(ctx: RouterContext, source: str) -> Cursor:
    table = ctx.tables.require_placed(source)
    return Cursor(0, keys.hash_range_bounds(table.record.table_id, 0, keys.HASH_SPACE)[0])


async def _read_at(
    ctx: RouterContext, source: str, cursor: Cursor
) -> tuple[list[dict[str, Any]], Cursor | None]:
    """One page from `cursor`, and the cursor after it (None: the table is read)."""
    table = ctx.tables.require_placed(source)
    partition = table.partition_map.floor_lookup(cursor.key_hash)
    lo, hi = keys.hash_range_bounds(table.record.table_id, partition.start, partition.end)
    items, last = await _read_page(ctx, source, cursor.key_hash, max(lo, cursor.lo), hi)
    if last is not None:
        key = key_of_key(table.record, last)
        return items, Cursor(key.hash, key.storage_key + b"\x00")
    if partition.end >= keys.HASH_SPACE:
        return items, None
    return items, Cursor(partition.end, hi)


async def _read_page(
    ctx: RouterContext, name: str, key_hash: int, lo: bytes, hi: bytes
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    table = ctx.tables.require_placed(name)
    options = {
        "lo": base64.b64encode(lo).decode(),
        "hi": base64.b64encode(hi).decode(),
        "budget": PAGE_BYTES,
        "key_names": table.record.key_names,
    }
    request = pb.Request(
        op=pb.SCAN, key_hash=key_hash, consistent=True, body=orjson.dumps(options), unmetered=True
    )
    response = await _sent(ctx, name, request)
    summary = orjson.loads(response.body)
    items: list[dict[str, Any]] = orjson.loads(response.value) if response.value else []
    return items, summary["last"]


async def write_items(ctx: RouterContext, name: str, items: list[dict[str, Any]], done: Copied) -> None:
    for start in range(0, len(items), WRITES_IN_FLIGHT):
        chunk = items[start : start + WRITES_IN_FLIGHT]
        await asyncio.gather(*(_put(ctx, name, item) for item in chunk))
        done.items += len(chunk)
        done.bytes += sum(item_size(item) for item in chunk)


async def undo_changes(
    ctx: RouterContext,
    source: str,
    target: str,
    history_ms: int,
    restore_time: float,
    progress: Callable[[Copied], Awaitable[None]] | None = None,
) -> int:
    """Undo in `target` (a copy of `source` made before this is called) every change
    `source`'s point-in-time recovery history records after `restore_time`; the number
    of items written back or deleted."""
    images = (await read_undo(ctx, source, history_ms, restore_time, progress)).images()
    for start in range(0, len(images), WRITES_IN_FLIGHT):
        chunk = images[start : start + WRITES_IN_FLIGHT]
        await asyncio.gather(*(_restore_key(ctx, target, key, item) for key, item in chunk))
    return len(images)


async def read_undo(
    ctx: RouterContext,
    source: str,
    history_ms: int,
    restore_time: float,
    progress: Callable[[Copied], Awaitable[None]] | None = None,
) -> point_in_time.Undo:
    """What undoing `source`'s changes after `restore_time` writes, from its history
    (read after the items it corrects: `api/point_in_time.py`). The history is read at
    every partition's first hash, where each partition's records and its split
    ancestors' lie."""
    undo = point_in_time.Undo(restore_time)
    table = ctx.tables.require_placed(source)
    for partition in table.record.partitions:
        after: str | None = None
        while True:
            wanted = {"ms": history_ms, "since": restore_time, "after": after, "budget": PAGE_BYTES}
            request = pb.Request(
                op=pb.STREAM_READ,
                key_hash=partition.start,
                body=orjson.dumps({"history": wanted}),
                consistent=True,
                unmetered=True,
            )
            page = orjson.loads((await _sent(ctx, source, request)).value)
            for index, position, record in page["changes"]:
                undo.add(point_in_time.Change(float(record["t"]), int(index), int(position), record))
            after = page["next"]
            if progress is not None:
                await progress(Copied())
            if after is None:
                break
    return undo


async def item_pages(ctx: RouterContext, source: str) -> AsyncIterator[list[dict[str, Any]]]:
    """Every item of `source`, a page at a time (each as of its own moment, as a Scan)."""
    cursor: Cursor | None = _first(ctx, source)
    while cursor is not None:
        items, cursor = await _read_at(ctx, source, cursor)
        yield items


async def _restore_key(
    ctx: RouterContext, name: str, key_attributes: dict[str, Any], item: dict[str, Any] | None
) -> None:
    if item is not None:
        await _put(ctx, name, item)
        return
    key = key_of_key(ctx.tables.require_placed(name).record, key_attributes)
    request = pb.Request(op=pb.DELETE, key_hash=key.hash, key=key.storage_key, unmetered=True)
    await _sent(ctx, name, request)


async def _put(ctx: RouterContext, name: str, item: dict[str, Any]) -> None:
    key = key_of_item(ctx.tables.require_placed(name).record, item)
    request = pb.Request(
        op=pb.PUT,
        key_hash=key.hash,
        key=key.storage_key,
        value=orjson.dumps(item),
        item_size=item_size(item),
        unmetered=True,
    )
    await _sent(ctx, name, request)


async def _sent(ctx: RouterContext, name: str, request: pb.Request) -> pb.Response:
    for attempt in range(ATTEMPTS):
        try:
            return await ctx.send(ctx.tables.require_placed(name), request)
        except DynamoError as exc:
            if not exc.retriable or attempt == ATTEMPTS - 1:
                raise
            await asyncio.sleep(PAUSE_SECONDS)
    raise AssertionError("unreachable")
