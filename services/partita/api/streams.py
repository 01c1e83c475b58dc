"""DynamoDB Streams' formats: labels and ARNs, shard ids, sequence numbers, shard
iterators, and a write's stream record from the item before and after it (pure).

A table's stream is made of its partitions' records. A write to a table whose stream is
enabled carries the stream's settings to the partition's leader (`write_options`), which
adds the record (`stored_record`) to the write's own log entry: the record is committed,
replicated and applied with the write, or not at all, and every replica holds the same
records in the same order. A record's place in its shard is its entry's log index and
its position in the entry; the sequence number DynamoDB clients see is those two,
written as 21 digits (`sequence_number`).

A shard is one partition's records of one stream. A split closes the parent's shard
(its records stay readable under its id) and opens one per child, each naming the
parent as DynamoDB's ParentShardId does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from partita.api import point_in_time
from partita.api.values import Item, item_size
from partita.common import errors
from partita.common.partition_map import Partition
from partita.control.model import STREAM_RETENTION_SECONDS, StreamSpec, TableRecord

# A shard iterator is good for 15 minutes after GetShardIterator or GetRecords made it.
ITERATOR_SECONDS = 15 * 60
MAX_RECORDS_PER_CALL = 1000
# Sequence numbers: the log index in 15 digits, the position in its entry in 6.
_POSITION_DIGITS = 6
_SEQUENCE_DIGITS = 21
_U64_LIMIT = 1 << 64
_SERVICE_IDENTITY = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}


# --- names -------------------------------------------------------------------------------


def stream_ms(spec: StreamSpec) -> int:
    """The stream's creation time in milliseconds: what its label, ARN, shard ids and
    storage keys are made of."""
    assert spec.created_at is not None
    return round(spec.created_at * 1000)


def stream_label(spec: StreamSpec) -> str:
    """DynamoDB's StreamLabel: the stream's creation time, ISO 8601 to the millisecond."""
    return label_of_ms(stream_ms(spec))


def label_of_ms(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def stream_arn(table_arn: str, spec: StreamSpec) -> str:
    return f"{table_arn}/stream/{stream_label(spec)}"


def stream_status(spec: StreamSpec) -> str:
    return "ENABLED" if spec.enabled else "DISABLED"


def readable(spec: StreamSpec, now: float) -> bool:
    """Whether the stream can still be listed and read: enabled, or disabled less than
    the retention period ago."""
    if spec.created_at is None:
        return False
    return spec.enabled or spec.disabled_at is None or now - spec.disabled_at < STREAM_RETENTION_SECONDS


def readable_streams(spec: StreamSpec, now: float) -> list[StreamSpec]:
    """The table's streams that can be listed and read: the latest, and the disabled
    ones before it for their 24 hours (oldest first)."""
    every = [*spec.earlier, spec]
    return [s for s in every if readable(s, now)]


def parse_stream_arn(arn: str) -> tuple[str, str]:
    """(table name, stream label) of a stream ARN; ValidationException if it is not one."""
    head, sep, label = arn.rpartition("/stream/")
    table = head.rpartition(":table/")[2] if ":table/" in head else ""
    if not sep or not table or not label or not arn.startswith("arn:"):
        raise errors.validation(f"Invalid StreamArn: {arn}")
    return table, label


SHARD_ID = re.compile(r"shardId-[0-9]{20}-[0-9a-f]{8}")


def shard_id(spec: StreamSpec, partition_id: str) -> str:
    """DynamoDB's form (shardId-<20 digits>-<8 hex>): the stream's time and the
    partition id's checksum, so every stream of a table has its own shard ids."""
    return f"shardId-{stream_ms(spec):020d}-{zlib.crc32(partition_id.encode()):08x}"


@dataclass(frozen=True, slots=True)
class Shard:
    """A shard as the router reads it: the partition whose records it holds, where they
    are stored (its first hash), its parent's shard, and whether it is closed."""

    shard_id: str
    partition_id: str
    start: int
    parent_shard_id: str | None
    closed: bool


def shards(record: TableRecord, stream: StreamSpec | None = None) -> list[Shard]:
    """A stream's shards (the table's latest by default): one per partition, and each
    split parent still reachable through its children (its records lie at its first
    hash, its lower child's)."""
    spec = record.stream if stream is None else stream
    if spec.created_at is None:
        return []
    out: list[Shard] = []
    current = {p.partition_id for p in record.partitions}
    parents: dict[str, int] = {}
    for p in record.partitions:
        if p.parent and p.parent not in current:
            parents[p.parent] = min(parents.get(p.parent, p.start), p.start)
    for parent, start in sorted(parents.items(), key=lambda item: item[1]):
        out.append(Shard(shard_id(spec, parent), parent, start, None, True))
    for p in record.partitions:
        parent_shard = shard_id(spec, p.parent) if p.parent in parents else None
        out.append(
            Shard(shard_id(spec, p.partition_id), p.partition_id, p.start, parent_shard, not spec.enabled)
        )
    return out


def find_shard(record: TableRecord, stream: StreamSpec, wanted: str) -> Shard | None:
    return next((s for s in shards(record, stream) if s.shard_id == wanted), None)


def partition_of(record: TableRecord, partition_id: str) -> Partition | None:
    return next((p for p in record.partitions if p.partition_id == partition_id), None)


# --- sequence numbers --------------------------------------------------------------------


def sequence_number(index: int, position: int) -> str:
    return f"{index * 10**_POSITION_DIGITS + position:0{_SEQUENCE_DIGITS}d}"


def parse_sequence_number(text: str) -> tuple[int, int]:
    """(log index, position) of a sequence number; ValidationException if malformed."""
    if not text.isdigit() or len(text) > _SEQUENCE_DIGITS + 4:
        raise errors.validation(f"Invalid SequenceNumber: {text}")
    value = int(text)  # at most 25 digits: its log index fits 64 bits
    return value // 10**_POSITION_DIGITS, value % 10**_POSITION_DIGITS


# --- the write's record ------------------------------------------------------------------


def write_options(record: TableRecord, now: float | None = None) -> dict[str, Any] | None:
    """What a write to the table tells its partition's leader so the leader adds its
    stream record; None when the table's stream is off."""
    spec = record.stream
    if not spec.enabled:
        return None
    return {
        "view": spec.view_type,
        "keys": record.key_names,
        "at": round(time.time() if now is None else now, 3),
        "ms": stream_ms(spec),
    }


_NO_RECORDS: dict[str, Any] = {}


def record_options(record: TableRecord, now: float | None = None) -> dict[str, Any]:
    """The options a write to the table carries so its partition's leader adds the write's
    records: its stream record (`stream`) and its point-in-time recovery history record
    (`history`, api/point_in_time.py), each while the table keeps them."""
    if not (record.stream.enabled or record.point_in_time.enabled):
        return _NO_RECORDS
    at = time.time() if now is None else now
    out: dict[str, Any] = {}
    stream = write_options(record, at)
    if stream is not None:
        out["stream"] = stream
    history = point_in_time.write_options(record, at)
    if history is not None:
        out["history"] = history
    return out


def stored_record(
    stream: dict[str, Any], old: Item | None, new: Item | None, *, service: bool = False
) -> bytes | None:
    """The stream record of a write that turned `old` into `new` (None: no item), as
    stored; None when the write changed nothing (DynamoDB writes no record then)."""
    if old == new:
        return None
    source = new if new is not None else old
    assert source is not None
    event = "INSERT" if old is None else ("REMOVE" if new is None else "MODIFY")
    keys = {name: source[name] for name in stream["keys"] if name in source}
    view = stream["view"]
    out: dict[str, Any] = {"e": event, "t": stream["at"], "k": keys}
    size = item_size(keys)
    if new is not None and view in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES"):
        out["n"] = new
        size += item_size(new)
    if old is not None and view in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES"):
        out["o"] = old
        size += item_size(old)
    out["s"] = size
    out["v"] = view
    if "r" in stream:  # a history record's retention in days (api/point_in_time.py)
        out["r"] = stream["r"]
    if service:
        out["u"] = 1
    return orjson.dumps(out)


def rendered(stored: dict[str, Any], index: int, position: int, shard: str, region: str) -> dict[str, Any]:
    """A stored record as GetRecords answers it."""
    sequence = sequence_number(index, position)
    data: dict[str, Any] = {
        "ApproximateCreationDateTime": int(stored["t"]),
        "Keys": stored["k"],
        "SequenceNumber": sequence,
        "SizeBytes": stored["s"],
        "StreamViewType": stored["v"],
    }
    if "n" in stored:
        data["NewImage"] = stored["n"]
    if "o" in stored:
        data["OldImage"] = stored["o"]
    out: dict[str, Any] = {
        "eventID": hashlib.blake2b(f"{shard}/{sequence}".encode(), digest_size=16).hexdigest(),
        "eventName": stored["e"],
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": data,
    }
    if stored.get("u"):
        out["userIdentity"] = dict(_SERVICE_IDENTITY)
    return out


# --- shard iterators ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Iterator:
    """Where a reader stands in a shard: after the record at (index, position). Written
    as DynamoDB writes its iterators, `<stream ARN>|1|<opaque>` (LocalStack's recordings
    of DynamoDB test that shape); the ARN is for people, the opaque part says it all."""

    table: str
    table_id: int
    stream_ms: int
    partition_id: str
    start: int
    index: int
    position: int
    made_at: float
    stream_arn: str = ""

    def encode(self) -> str:
        body = orjson.dumps(
            [
                self.table,
                self.table_id,
                self.stream_ms,
                self.partition_id,
                f"{self.start:x}",
                self.index,
                self.position,
                round(self.made_at, 3),
            ]
        )
        return f"{self.stream_arn}|{_ITERATOR_VERSION}|{base64.urlsafe_b64encode(body).decode()}"

    def moved(self, index: int, position: int, now: float) -> Iterator:
        return Iterator(
            self.table,
            self.table_id,
            self.stream_ms,
            self.partition_id,
            self.start,
            index,
            position,
            now,
            self.stream_arn,
        )


_ITERATOR_VERSION = "1"


def iterator_table(text: str) -> str | None:
    """The table a ShardIterator names, or None if it is not one (its permissions are
    checked before the request runs; GetRecords itself reports a bad iterator)."""
    try:
        return parse_iterator(text, 0.0, expiring=False).table
    except errors.DynamoError:
        return None


def parse_iterator(text: str, now: float, *, expiring: bool = True) -> Iterator:
    """The iterator a ShardIterator names; ValidationException if it is not one of ours,
    ExpiredIteratorException once it is older than 15 minutes."""
    try:
        stream_arn, version, opaque = text.rsplit("|", 2)
        if version != _ITERATOR_VERSION:
            raise ValueError
        fields = orjson.loads(base64.urlsafe_b64decode(opaque.encode()))
        table, table_id, ms, partition_id, start, index, position, made_at = fields
        iterator = Iterator(
            str(table),
            int(table_id),
            int(ms),
            str(partition_id),
            int(start, 16),
            int(index),
            int(position),
            float(made_at),
            stream_arn,
        )
        # What storage keys are made of must fit them (a forged iterator is refused, not a fault).
        numbers = (iterator.table_id, iterator.stream_ms, iterator.start, iterator.index)
        if not all(0 <= n < _U64_LIMIT for n in numbers) or not 0 <= iterator.position < 1 << 32:
            raise ValueError
        if len(iterator.partition_id.encode()) > 255:
            raise ValueError
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise errors.validation("Invalid ShardIterator") from None
    if expiring and now - iterator.made_at > ITERATOR_SECONDS:
        raise errors.from_code("ExpiredIteratorException", "Iterator expired")
    return iterator
