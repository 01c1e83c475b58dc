"""Query and Scan of a secondary index, evaluated from the base table's items.

Partita keeps no index partitions yet: an index read gathers the base items the index
holds (`api.index_keys.in_index`) from the partitions that can hold them (a local
index: the one item collection of the Query's partition key, or the hash range of a
Scan's segment; a global index: every partition), orders them as the index orders its
entries, and
pages through them as DynamoDB pages an index (Limit and the 1 MB budget count index
entries, LastEvaluatedKey holds the table's and the index's key attributes). An entry
is its item cut to the index's projection; a local index fetches what its entries
lack from the item, as DynamoDB fetches from the table.

What this costs: a read of a global index reads the whole table, every page. The
answers are an index's (and stronger: a global index read here is never stale), the
cost is not; maintained index partitions are not built yet (README).
"""

from __future__ import annotations

import base64
import bisect
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.expressions import KeyCondition, evaluate, project
from partita.api.expressions.key_condition import MultiKeyCondition
from partita.api.index_keys import (
    entry_key,
    entry_of,
    entry_tie_order,
    in_index,
    projected_names,
    query_order,
    scan_order,
)
from partita.api.operations.common import Expressions
from partita.api.operations.query import QueryRequest
from partita.api.operations.reads import ReadCommon
from partita.api.operations.scan import ScanRequest
from partita.api.table_keys import key_of_key
from partita.api.values import Item, item_size, sizes, values_equal
from partita.common import errors, keys
from partita.control.model import SecondaryIndex, TableRecord
from partita.router import index_capacity
from partita.router.actions import ranges, wire
from partita.router.context import RouterContext
from partita.router.table_cache import CachedTable

_INVALID_START = "The provided starting key is invalid: The provided key element does not match the schema"


async def query(ctx: RouterContext, table: CachedTable, index: SecondaryIndex, req: QueryRequest) -> bytes:
    record = table.record
    condition: KeyCondition | MultiKeyCondition = (
        req.multi_key_condition(record, index) if index.multi_attribute else req.key_condition(record, index)
    )
    # The nodes keep only the items the key condition matches (a key condition is a
    # filter too), so a selective Query moves only its answer to the router.
    expressions = req.expressions
    matching = Expressions(
        filter=expressions.key_condition, names=expressions.names, values=expressions.values
    ).storage_body()
    if index.kind == "LOCAL":
        assert isinstance(condition, KeyCondition)  # a local index's key is one attribute of each kind
        pk = record.partition_key
        pk_bytes = keys.partition_key_bytes(pk.name, condition.partition_value, pk.type)
        h = keys.key_hash(pk.type, pk_bytes, record.key_hash)
        lo, hi = keys.item_collection_bounds(record.table_id, h, pk_bytes)
        items: list[Item] = []
        await _gather(ctx, table, pb.QUERY, h, lo, hi, req.read.consistent, matching, items)
    else:
        items = await _gather_hashes(ctx, table, 0, keys.HASH_SPACE, matching, consistent=False, own=True)
    held = [item for item in items if in_index(index, item) and condition.matches(item)]
    orders = sorted((query_order(record, index, item), i) for i, item in enumerate(held))
    if not req.forward:
        orders.reverse()
    entries = [held[i] for _, i in orders]
    start = req.read.exclusive_start
    if start is not None:
        at = _query_start(record, index, start, condition)
        positions = [order for order, _ in orders]
        if req.forward:
            entries = entries[bisect.bisect_right(positions, at) :]
        else:
            # Descending: the entries below the start, i.e. after it in this order.
            below = [order < at for order in positions]
            entries = [entry for entry, keep in zip(entries, below, strict=True) if keep]
    return _page(ctx, record, index, entries, req.read, req.expressions)


async def scan(ctx: RouterContext, table: CachedTable, index: SecondaryIndex, req: ScanRequest) -> bytes:
    """An index Scan in the index's order (`index_keys.scan_order`); a segment of a
    parallel Scan holds the entries whose index partition key hashes into it."""
    record = table.record
    seg_lo = req.segment * keys.HASH_SPACE // req.total_segments
    seg_hi = (req.segment + 1) * keys.HASH_SPACE // req.total_segments
    read = req.read
    after: tuple[int, bytes, tuple[bytes, ...], bytes] | None = None
    if read.exclusive_start is not None:
        after = _scan_start(record, index, read.exclusive_start)
        if not seg_lo <= after[0] < seg_hi:
            raise errors.validation(
                "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey "
                f"with correct Segment. TotalSegments: {req.total_segments} Segment: {req.segment}"
            )
    # A local index's partition key is the table's: its segment is the same hash range
    # of the table. A global index's entries may be on any partition.
    lo_hash, hi_hash = (seg_lo, seg_hi) if index.kind == "LOCAL" else (0, keys.HASH_SPACE)
    items = await _gather_hashes(
        ctx,
        table,
        lo_hash,
        hi_hash,
        _holding_keys(index),
        consistent=read.consistent,
        own=index.kind == "GLOBAL",
    )
    placed = sorted(
        (order, i)
        for i, item in enumerate(items)
        if in_index(index, item) and seg_lo <= (order := scan_order(record, index, item))[0] < seg_hi
    )
    entries = [items[i] for order, i in placed if after is None or order > after]
    return _page(ctx, record, index, entries, read, req.expressions)


def _scan_start(
    record: TableRecord, index: SecondaryIndex, start: dict[str, Any]
) -> tuple[int, bytes, tuple[bytes, ...], bytes]:
    """ExclusiveStartKey's place among a Scan's entries: the table's key attributes and
    the index's, of their types."""
    if any(name not in start for name in index.key_names) or not in_index(index, start):
        raise errors.validation(_INVALID_START)
    # Attributes beyond the table's and the index's keys, as a Query's start key
    # (dynalite's recorded tests, a Scan of a local and of a global index).
    if len(start) != len({*record.key_names, *index.key_names}):
        raise errors.validation("The provided starting key is invalid")
    ranges.start_key(record, {name: start[name] for name in record.key_names})  # the table's key, checked
    return scan_order(record, index, start)


def _query_start(
    record: TableRecord,
    index: SecondaryIndex,
    start: dict[str, Any],
    condition: KeyCondition | MultiKeyCondition,
) -> tuple[tuple[bytes, ...], bytes]:
    """ExclusiveStartKey's place among a Query's entries, checked as a table Query checks
    its own (`query._start_key`, DynamoDB's messages): the table's and the index's key
    attributes and nothing else, inside the key condition."""
    if any(name not in start for name in index.key_names):
        raise errors.validation(_INVALID_START)
    if len(start) != len({*record.key_names, *index.key_names}):
        raise errors.validation("The provided starting key is invalid")
    if isinstance(condition, MultiKeyCondition):
        if not condition.matches(start):
            raise errors.validation(_OUTSIDE)
    else:
        _check_start_against(index, start, condition)
    table_key = {name: start[name] for name in record.key_names}
    ranges.start_key(record, table_key)  # the table's key, checked
    for element in index.range_keys:
        av = start[element.name]
        if not isinstance(av, dict) or element.type not in av:
            raise errors.validation(_INVALID_START)
    return tuple(keys.encode_sort_key(start[e.name], e.type) for e in index.range_keys), entry_tie_order(
        record, table_key
    )


_OUTSIDE = "The provided starting key is outside query boundaries based on provided conditions"


def _check_start_against(index: SecondaryIndex, start: dict[str, Any], condition: KeyCondition) -> None:
    same_partition = values_equal(start[index.partition_key.name], condition.partition_value)
    if index.sort_key is None or condition.sort_op is None:
        if not same_partition:
            raise errors.validation(_OUTSIDE)
    else:
        if not condition.sort_matches(start[index.sort_key.name]):
            raise errors.validation("The provided starting key does not match the range key predicate")
        if not same_partition:
            raise errors.validation("The query can return at most one row and cannot be restarted")


def _holding_keys(index: SecondaryIndex) -> dict[str, Any]:
    """A storage filter keeping the items that have the index's key attributes."""
    names = {f"#k{i}": name for i, name in enumerate(index.key_names)}
    return {"filter": " AND ".join(f"attribute_exists({n})" for n in names), "names": names}


async def _gather_hashes(
    ctx: RouterContext,
    table: CachedTable,
    lo_hash: int,
    hi_hash: int,
    matching: dict[str, Any],
    *,
    consistent: bool,
    own: bool = False,
) -> list[Item]:
    """Every item of the table whose key hash is in [lo_hash, hi_hash), partition by
    partition. `own`: read for a global index, which pays for its reads itself (`_page`),
    so the table's partitions and meters are not charged."""
    items: list[Item] = []
    record = table.record
    for partition in table.partition_map.partitions_from(lo_hash):
        if partition.start >= hi_hash:
            break
        start = max(partition.start, lo_hash)
        lo, hi = keys.hash_range_bounds(record.table_id, start, min(partition.end, hi_hash))
        await _gather(ctx, table, pb.SCAN, start, lo, hi, consistent, matching, items, unmetered=own)
    return items


async def _gather(
    ctx: RouterContext,
    table: CachedTable,
    op: pb.Op,
    key_hash: int,
    lo: bytes,
    hi: bytes,
    consistent: bool,
    matching: dict[str, Any],
    out: list[Item],
    *,
    unmetered: bool = False,
) -> None:
    """Every item in [lo, hi) on the node owning `key_hash` that the storage filter in
    `matching` keeps, read a 1 MB page at a time."""
    record = table.record
    while lo < hi:
        options = {
            **matching,
            "lo": base64.b64encode(lo).decode(),
            "hi": base64.b64encode(hi).decode(),
            "budget": ranges.PAGE_BYTES,
            "key_names": record.key_names,
        }
        request = pb.Request(
            op=op, key_hash=key_hash, consistent=consistent, body=orjson.dumps(options), unmetered=unmetered
        )
        response = await ctx.send(table, request)
        out.extend(orjson.loads(response.value))
        last = orjson.loads(response.body)["last"]
        if last is None:
            return
        lo = key_of_key(record, last).storage_key + b"\x00"  # the least key above the last one read


def _page(
    ctx: RouterContext,
    record: TableRecord,
    index: SecondaryIndex,
    entries: list[Item],
    read: ReadCommon,
    expressions: Expressions,
) -> bytes:
    """One page of ordered index entries: Limit and the 1 MB budget over entries read,
    then the filter, then what the request selects."""
    names = projected_names(record, index)
    local = index.kind == "LOCAL"
    tree = expressions.resolved.filter
    projection = expressions.resolved.projection
    out: list[Item] = []
    scanned = count = size = page = 0
    fetched = 0.0
    sort_key = record.sort_key.name if record.sort_key else None
    # A local index fetches from the table what its entries lack, and the table is
    # charged a read of each item fetched: every item read when the filter needs it,
    # every item returned when the answer does (Select ALL_ATTRIBUTES, a projection).
    fetch_to_filter = local and bool(ranges.unprojected(tree, names))
    fetch_to_answer = (
        local
        and read.select != "COUNT"
        and (
            bool(ranges.unprojected(projection, names))
            or (names is not None and read.requested_select == "ALL_ATTRIBUTES")
        )
    )
    last: dict[str, Any] | None = None
    for item in entries:
        entry = entry_of(item, names)
        scanned += 1
        entry_bytes, page_bytes = sizes(entry, sort_key)
        size += entry_bytes
        page += page_bytes
        # A local index fetches from the table what its entry lacks; a global one cannot.
        seen = item if local else entry
        if fetch_to_filter:
            fetched += capacity.read_units(item_size(item), read.consistent)
        if tree is None or evaluate(tree, seen):
            count += 1
            if read.select != "COUNT":
                out.append(_returned(read, item, entry, seen, projection))
            if fetch_to_answer and not fetch_to_filter:
                fetched += capacity.read_units(item_size(item), read.consistent)
        if (read.limit and scanned >= read.limit) or page >= ranges.PAGE_BYTES:
            last = entry_key(record, index, item)
            break
    units = capacity.range_read_units(size, read.consistent)
    if not local:  # a global index pays for its own reads (router/index_capacity.py)
        ctx.meter(index_capacity.index_name(record.name, index.name), 0, units)
    consumed = capacity.consumed_on_index(read.table_name, index.name, local, units, read.capacity, fetched)
    return wire.body(
        (b'"Items":', None if read.select == "COUNT" else orjson.dumps(out)),
        (b'"Count":', str(count).encode()),
        (b'"ScannedCount":', str(scanned).encode()),
        (b'"LastEvaluatedKey":', wire.encoded(last)),
        (b'"ConsumedCapacity":', wire.encoded(consumed)),
    )


def _returned(read: ReadCommon, item: Item, entry: Item, seen: Item, projection: Any) -> Item:
    if projection is not None:
        returned: Item = project(seen, projection)
        return returned
    if read.requested_select == "ALL_ATTRIBUTES":
        return item  # a global index allows it only when its entries are whole items
    return entry  # ALL_PROJECTED_ATTRIBUTES, an index read's default
