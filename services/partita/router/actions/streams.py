"""DynamoDB Streams: ListStreams, DescribeStream, GetShardIterator and GetRecords.

A table's stream records are kept by its partitions (api/streams.py); these operations
find a stream from its ARN, a shard from its id, and read a shard's records from the
partition holding them, through its leader (records are read once committed).
"""

from __future__ import annotations

import base64
import time
from typing import Any

import orjson

from partita._proto import storage_pb2 as pb
from partita.api import streams
from partita.api.streams import Iterator, Shard
from partita.common import errors, keys
from partita.control.model import StreamSpec, TableRecord
from partita.router.context import RouterContext
from partita.router.table_cache import CachedTable

_DEFAULT_LIST_LIMIT = 100
_DEFAULT_SHARD_LIMIT = 100
# GetRecords answers at most 1 MB of records, as DynamoDB does.
_RECORD_BYTES_PER_CALL = 1 << 20


def _stream_not_found(arn: str) -> errors.DynamoError:
    return errors.resource_not_found(f"Requested resource not found: Stream: {arn} not found")


def _stream_of(ctx: RouterContext, arn: str, now: float) -> tuple[CachedTable, StreamSpec]:
    """The table and its readable stream that `arn` names; ResourceNotFoundException if
    none."""
    table_name, _ = streams.parse_stream_arn(arn)
    table = ctx.tables.get(table_name)
    if table is not None and table.record.partitions:
        table_arn = ctx.table_arn(table_name)
        for stream in streams.readable_streams(table.record.stream, now):
            if streams.stream_arn(table_arn, stream) == arn:
                return table, stream
    raise _stream_not_found(arn)


def _limit(body: dict[str, Any], default: int, most: int) -> int:
    """The request's Limit: the model checks its floor (1), this its ceiling, in the
    same words."""
    limit = body.get("Limit")
    if limit is None:
        return default
    if limit > most:
        raise errors.validation(
            f"1 validation error detected: Value '{limit}' at 'limit' failed to satisfy constraint: "
            f"Member must have value less than or equal to {most}"
        )
    return int(limit)


async def list_streams(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    now = time.time()
    limit = _limit(body, _DEFAULT_LIST_LIMIT, _DEFAULT_LIST_LIMIT)
    wanted = body.get("TableName")
    tables = list(ctx.tables.tables.values())
    if wanted is not None:
        if ctx.tables.get(wanted) is None:
            raise errors.table_not_found(wanted)
        tables = [t for t in tables if t.record.name == wanted]
    listed = sorted(
        (
            {
                "StreamArn": streams.stream_arn(ctx.table_arn(t.record.name), stream),
                "TableName": t.record.name,
                "StreamLabel": streams.stream_label(stream),
            }
            for t in tables
            for stream in streams.readable_streams(t.record.stream, now)
        ),
        key=lambda listed_stream: listed_stream["StreamArn"],
    )
    start = body.get("ExclusiveStartStreamArn")
    if start is not None:
        streams.parse_stream_arn(start)
        listed = [s for s in listed if s["StreamArn"] > start]
    answer: dict[str, Any] = {"Streams": listed[:limit]}
    if len(listed) > limit:
        answer["LastEvaluatedStreamArn"] = listed[limit - 1]["StreamArn"]
    return answer


async def describe_stream(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    now = time.time()
    arn = body["StreamArn"]
    table, spec = _stream_of(ctx, arn, now)
    record = table.record
    # In ShardId order, as DynamoDB lists them (the Kinesis adapter relies on it).
    every = sorted(streams.shards(record, spec), key=lambda shard: shard.shard_id)
    shard_filter = body.get("ShardFilter")
    if shard_filter is not None:
        every = _children(every, shard_filter)
    start = body.get("ExclusiveStartShardId")
    if start is not None:
        every = [shard for shard in every if shard.shard_id > start]
    limit = _limit(body, _DEFAULT_SHARD_LIMIT, _DEFAULT_SHARD_LIMIT)
    page = every[:limit]
    described = [await _described_shard(ctx, table, spec, shard) for shard in page]
    description: dict[str, Any] = {
        "StreamArn": arn,
        "StreamLabel": streams.stream_label(spec),
        "StreamStatus": streams.stream_status(spec),
        "StreamViewType": spec.view_type,
        "CreationRequestDateTime": spec.created_at,
        "TableName": record.name,
        "KeySchema": [
            {"AttributeName": record.partition_key.name, "KeyType": "HASH"},
            *([{"AttributeName": record.sort_key.name, "KeyType": "RANGE"}] if record.sort_key else []),
        ],
        "Shards": described,
    }
    if len(every) > limit:
        description["LastEvaluatedShardId"] = page[-1].shard_id
    return {"StreamDescription": description}


def _children(every: list[Shard], shard_filter: dict[str, Any]) -> list[Shard]:
    """DescribeStream's ShardFilter: the shards a split made of the one named."""
    for member in ("Type", "ShardId"):  # the model checks their values, not their presence
        if shard_filter.get(member) is None:
            raise errors.validation(
                f"1 validation error detected: Value null at 'shardFilter.{member[0].lower()}{member[1:]}' "
                "failed to satisfy constraint: Member must not be null"
            )
    parent = shard_filter["ShardId"]
    if not streams.SHARD_ID.fullmatch(parent):
        raise errors.validation(f"Invalid ShardFilter.ShardId: {parent}")
    return [shard for shard in every if shard.parent_shard_id == parent]


async def _described_shard(
    ctx: RouterContext, table: CachedTable, stream: StreamSpec, shard: Shard
) -> dict[str, Any]:
    prefix = _prefix(table.record, stream, shard)
    first = await _read(ctx, table, shard.start, prefix, (0, 0), 1)
    starting = streams.sequence_number(*first[0][:2]) if first else streams.sequence_number(0, 1)
    numbers: dict[str, str] = {"StartingSequenceNumber": starting}
    if shard.closed:
        last = await _read(ctx, table, shard.start, prefix, (0, 0), 1, last=True)
        numbers["EndingSequenceNumber"] = streams.sequence_number(*last[0][:2]) if last else starting
    out: dict[str, Any] = {"ShardId": shard.shard_id, "SequenceNumberRange": numbers}
    if shard.parent_shard_id is not None:
        out["ParentShardId"] = shard.parent_shard_id
    return out


async def get_shard_iterator(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    now = time.time()
    arn = body["StreamArn"]
    table, stream = _stream_of(ctx, arn, now)
    shard = streams.find_shard(table.record, stream, body["ShardId"])
    if shard is None:
        raise errors.resource_not_found(
            f"Requested resource not found: Shard does not exist: {body['ShardId']}"
        )
    kind = body["ShardIteratorType"]
    number = body.get("SequenceNumber")
    if kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
        if number is None:
            raise errors.validation(f"Must specify a sequence number for iterator type {kind}")
        index, position = streams.parse_sequence_number(number)
        if kind == "AT_SEQUENCE_NUMBER":
            index, position = (index, position - 1) if position > 0 else (index, 0)
    elif number is not None:
        raise errors.validation(f"Sequence number not allowed for iterator type {kind}")
    elif kind == "AT_TIMESTAMP":
        index, position = await _position_at(ctx, table, stream, shard, body.get("Timestamp"))
    elif kind == "LATEST":
        last = await _read(
            ctx, table, shard.start, _prefix(table.record, stream, shard), (0, 0), 1, last=True
        )
        index, position = (last[0][0], last[0][1]) if last else (0, 0)
    else:  # TRIM_HORIZON
        index, position = 0, 0
    iterator = Iterator(
        table.record.name,
        table.record.table_id,
        streams.stream_ms(stream),
        shard.partition_id,
        shard.start,
        index,
        position,
        now,
        arn,  # as _stream_of matched it: the stream's own ARN
    )
    return {"ShardIterator": iterator.encode()}


async def _position_at(
    ctx: RouterContext, table: CachedTable, stream: StreamSpec, shard: Shard, timestamp: Any
) -> tuple[int, int]:
    """Where an AT_TIMESTAMP iterator starts: before the shard's first record written at
    or after `timestamp` (epoch seconds), or after its last one if there is none yet."""
    if timestamp is None:
        raise errors.validation("Must specify a timestamp for iterator type AT_TIMESTAMP")
    prefix = _prefix(table.record, stream, shard)
    first = await _read(ctx, table, shard.start, prefix, (0, 0), 1, since=float(timestamp))
    if first:
        return first[0][0], first[0][1] - 1
    last = await _read(ctx, table, shard.start, prefix, (0, 0), 1, last=True)
    return (last[0][0], last[0][1]) if last else (0, 0)


async def get_records(ctx: RouterContext, body: dict[str, Any]) -> dict[str, Any]:
    now = time.time()
    limit = _limit(body, streams.MAX_RECORDS_PER_CALL, streams.MAX_RECORDS_PER_CALL)
    iterator = streams.parse_iterator(body["ShardIterator"], now)
    table = ctx.tables.get(iterator.table)
    if table is None or table.record.table_id != iterator.table_id or not table.record.partitions:
        raise errors.resource_not_found(f"Requested resource not found: Table: {iterator.table} not found")
    prefix = keys.stream_shard_prefix(
        iterator.table_id, iterator.start, iterator.stream_ms, iterator.partition_id
    )
    read = await _read(ctx, table, iterator.start, prefix, (iterator.index, iterator.position), limit)
    shard = _shard_label(table.record, iterator)
    region = ctx.settings.region
    records = [streams.rendered(stored, index, position, shard, region) for index, position, stored in read]
    answer: dict[str, Any] = {"Records": records}
    index, position = (read[-1][0], read[-1][1]) if read else (iterator.index, iterator.position)
    if read or not _closed(table.record, iterator):
        answer["NextShardIterator"] = iterator.moved(index, position, now).encode()
    return answer


def _shard_label(record: TableRecord, iterator: Iterator) -> str:
    return f"{record.table_id}/{iterator.stream_ms}/{iterator.partition_id}"


def _closed(record: TableRecord, iterator: Iterator) -> bool:
    """A shard gets no more records: its partition was split, or its stream is not the
    table's enabled one."""
    spec = record.stream
    if not spec.enabled or spec.created_at is None or streams.stream_ms(spec) != iterator.stream_ms:
        return True
    return streams.partition_of(record, iterator.partition_id) is None


def _prefix(record: TableRecord, stream: StreamSpec, shard: Shard) -> bytes:
    return keys.stream_shard_prefix(
        record.table_id, shard.start, streams.stream_ms(stream), shard.partition_id
    )


async def _read(
    ctx: RouterContext,
    table: CachedTable,
    start: int,
    prefix: bytes,
    after: tuple[int, int],
    limit: int,
    *,
    last: bool = False,
    since: float | None = None,
) -> list[list[Any]]:
    """[log index, position, stored record] of a shard's records after `after`, read
    from the partition that holds them (its first hash: `start`)."""
    request_body: dict[str, Any] = {
        "prefix": base64.b64encode(prefix).decode(),
        "after": list(after),
        "limit": limit,
        "budget": _RECORD_BYTES_PER_CALL,
    }
    if last:
        request_body["last"] = True
    if since is not None:
        request_body["since"] = since
    request = pb.Request(op=pb.STREAM_READ, key_hash=start, body=orjson.dumps(request_body), consistent=True)
    response = await ctx.send(table, request)
    read: list[list[Any]] = orjson.loads(response.value or b"[]")
    return read
