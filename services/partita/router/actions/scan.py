"""Scan: partitions in hash order (or one hash segment of them), one page at a time.

Segment i of T covers hashes [i * 2**64 // T, (i+1) * 2**64 // T): segments are
independent of the partition layout, so a parallel scan keeps working while partitions
split. A LastEvaluatedKey is an ordinary key; its hash says where to resume.
"""

from __future__ import annotations

from typing import Any

from partita._proto import storage_pb2 as pb
from partita.api.operations import scan
from partita.api.operations.reads import check_scalar_key_paths
from partita.common import errors, keys
from partita.control.model import TableRecord
from partita.router.actions import index_reads, ranges
from partita.router.context import RouterContext

HASH_SPACE = keys.HASH_SPACE

_NOT_THE_SCHEMA = "The provided starting key is invalid: The provided key element does not match the schema"


async def run(ctx: RouterContext, body: Any) -> bytes:
    req = scan.validate(body)
    read = req.read
    table = ranges.table_to_read(ctx, read, _NOT_THE_SCHEMA)
    record = table.record
    check_scalar_key_paths(req.expressions.resolved.projection, record)
    check_scalar_key_paths(req.expressions.resolved.filter, record)
    if read.index_name is not None:
        return await index_reads.scan(ctx, table, ranges.index_to_read(record, read, req.expressions), req)
    seg_lo = req.segment * HASH_SPACE // req.total_segments
    seg_hi = (req.segment + 1) * HASH_SPACE // req.total_segments
    resume_hash, resume_key = seg_lo, b""
    if read.exclusive_start is not None:
        resume_hash, start = _start_key(record, read.exclusive_start)
        if not seg_lo <= resume_hash < seg_hi:
            raise errors.validation(
                "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey "
                f"with correct Segment. TotalSegments: {req.total_segments} Segment: {req.segment}"
            )
        resume_key = start + b"\x00"  # the least key above the start key
    page = ranges.Page()
    for partition in table.partition_map.partitions_from(resume_hash):
        if partition.start >= seg_hi:
            break
        lo_hash = max(partition.start, seg_lo)
        lo, hi = keys.hash_range_bounds(record.table_id, lo_hash, min(partition.end, seg_hi))
        lo = max(lo, resume_key)
        await ranges.read_range(
            ctx, table, pb.SCAN, max(lo_hash, resume_hash), lo, hi, page, read, req.expressions
        )
        if page.last is not None:
            break
    return ranges.answer(page, read)


def _start_key(record: TableRecord, start: dict[str, Any]) -> tuple[int, bytes]:
    if len(start) != len(record.key_names):
        raise errors.validation(_NOT_THE_SCHEMA)
    key = ranges.start_key(record, start)
    return key.hash, key.storage_key
