"""Query: one partition key, so one partition: a range scan on the node that owns it."""

from __future__ import annotations

import base64
from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api.operations import query
from partita.api.values import values_equal
from partita.common import errors, keys
from partita.control.model import TableRecord
from partita.router.actions import index_reads, ranges
from partita.router.context import RouterContext

_INVALID_START = "The provided starting key is invalid"


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = query.validate(body)
    read = req.read
    table = ranges.table_to_read(ctx, read, _INVALID_START)
    record = table.record
    if read.index_name is not None:
        return await index_reads.query(ctx, table, ranges.index_to_read(record, read, req.expressions), req)
    # A start key with attributes beyond the table's key is refused before the key
    # condition is matched to the schema (dynalite's recorded tests).
    if read.exclusive_start is not None and len(read.exclusive_start) != len(record.key_names):
        raise errors.validation(_INVALID_START)
    condition = req.key_condition(record)
    pk = record.partition_key
    pk_bytes = keys.partition_key_bytes(pk.name, condition.partition_value, pk.type)
    h = keys.key_hash(pk.type, pk_bytes, record.key_hash)
    if condition.sort_op is None:
        lo, hi = keys.item_collection_bounds(record.table_id, h, pk_bytes)
    else:
        assert record.sort_key is not None
        sk_type = record.sort_key.type
        bounds = [keys.encode_sort_key(v, sk_type) for v in condition.sort_values]
        lo, hi = keys.sort_key_bounds(
            record.table_id, h, pk_bytes, condition.sort_op,  # type: ignore[arg-type]
            bounds[0], bounds[1] if len(bounds) > 1 else None,
        )  # fmt: skip
    if read.exclusive_start is not None:
        start = _start_key(record, read.exclusive_start, condition)
        if req.forward:
            lo = max(lo, start + b"\x00")  # the least key above the start key
        else:
            hi = min(hi, start)
    page = ranges.Page()
    if lo < hi:
        await ranges.read_range(
            ctx, table, pb.QUERY, h, lo, hi, page, read, req.expressions, reverse=not req.forward
        )
    if record.sort_key is None:
        # The partition's only item: nothing follows it, so no page does (and a start
        # key there is refused, above).
        page.last = None
    return ranges.answer(page, read)


def _start_key(record: TableRecord, start: dict[str, Any], condition: Any) -> bytes:
    """The storage key of ExclusiveStartKey, checked against the schema and the condition."""
    # Every key attribute is there and no other (`ranges.table_to_read`, `run`).
    key = ranges.start_key(record, start)
    if record.sort_key is None and values_equal(start[record.partition_key.name], condition.partition_value):
        # A partition of a table without a sort key holds one item: an exclusive start
        # in it leaves nothing to return, and DynamoDB refuses it (in its Java rendering;
        # a start in another partition is outside the query's boundaries, below).
        raise errors.validation(
            "The provided exclusive start key is invalid: ExclusiveStartKey: "
            f"{{{record.partition_key.name}={_java_attribute_value(start[record.partition_key.name])}}}"
        )
    if record.sort_key is None or condition.sort_op is None:
        if not values_equal(start[record.partition_key.name], condition.partition_value):
            raise errors.validation(
                "The provided starting key is outside query boundaries based on provided conditions"
            )
    else:
        if not condition.sort_matches(start[record.sort_key.name]):
            raise errors.validation("The provided starting key does not match the range key predicate")
        if not values_equal(start[record.partition_key.name], condition.partition_value):
            raise errors.validation("The query can return at most one row and cannot be restarted")
    return key.storage_key


def _java_attribute_value(value: dict[str, Any]) -> str:
    """A key value as DynamoDB's messages print it (the Java SDK's AttributeValue)."""
    kind, inner = next(iter(value.items()))
    if kind == "B":
        size = len(base64.b64decode(inner))
        inner = f"java.nio.HeapByteBuffer[pos=0 lim={size} cap={size}]"
    return f"AttributeValue: {{{kind}:{inner}}}"
