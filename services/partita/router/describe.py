"""A table record as DynamoDB's TableDescription."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from partita.api import streams
from partita.api.operations import on_demand_throughput
from partita.common import throughput
from partita.control.model import PartitionStats, RestoreInfo, SecondaryIndex, SplitParent, TableRecord


def table_description(
    record: TableRecord, arn: str, stats: Mapping[str, PartitionStats] | None = None
) -> dict[str, Any]:
    """`stats` are the partitions' last counts by partition id (none yet: zero)."""
    items, size = table_totals([p.partition_id for p in record.partitions], stats or {})
    out: dict[str, Any] = {
        "AttributeDefinitions": [
            {"AttributeName": n, "AttributeType": t} for n, t in record.attribute_definitions
        ],
        "TableName": record.name,
        "KeySchema": key_schema(record),
        "TableStatus": record.status,
        "CreationDateTime": record.created_at,
        "ProvisionedThroughput": provisioned_throughput(record, time.time()),
        # DynamoDB refreshes these about every six hours; storage nodes recount them
        # (storage/table_stats.py), so they lag recent writes as DynamoDB's do.
        "TableSizeBytes": size,
        "ItemCount": items,
        "TableArn": arn,
        "TableId": table_uuid(record.table_id),
        "DeletionProtectionEnabled": record.deletion_protection,
    }
    maximum = on_demand_throughput.described(record.on_demand_max)
    if maximum is not None:
        out["OnDemandThroughput"] = maximum
    if record.table_class:  # told once given, STANDARD too (LocalStack's and dynoxide's records)
        out["TableClassSummary"] = {"TableClass": record.table_class}
        if record.table_class_changed_at:
            out["TableClassSummary"]["LastUpdateDateTime"] = record.table_class_changed_at
    if record.billing_mode == "PAY_PER_REQUEST":
        since = record.throughput_history.pay_per_request_since
        out["BillingModeSummary"] = {
            "BillingMode": "PAY_PER_REQUEST",
            "LastUpdateToPayPerRequestDateTime": record.created_at if since is None else since,
        }
    out["WarmThroughput"] = warm_throughput(record)
    global_indexes = [i for i in record.indexes if i.kind == "GLOBAL"]
    local_indexes = [i for i in record.indexes if i.kind == "LOCAL"]
    if global_indexes:
        out["GlobalSecondaryIndexes"] = [global_index_description(record, i, arn) for i in global_indexes]
    if local_indexes:
        out["LocalSecondaryIndexes"] = [index_description(i, arn) for i in local_indexes]
    stream = record.stream
    if stream.enabled:
        out["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream.view_type}
    if stream.exists:  # a disabled stream is still named, as DynamoDB names it
        out["LatestStreamLabel"] = streams.stream_label(stream)
        out["LatestStreamArn"] = streams.stream_arn(arn, stream)
    restore = record.restore
    if restore is not None:
        out["RestoreSummary"] = {
            # A point-in-time restore names no backup, and is dated by the time restored to.
            **({"SourceBackupArn": restore.source_backup_arn} if restore.source_backup_arn else {}),
            "SourceTableArn": restore.source_table_arn,
            "RestoreDateTime": _restore_date(restore),
            "RestoreInProgress": restore.in_progress,
        }
    return out


def _restore_date(restore: RestoreInfo) -> float:
    return restore.restored_at if restore.point_in_time is None else restore.point_in_time


def key_schema(record: TableRecord) -> list[dict[str, str]]:
    out = [{"AttributeName": record.partition_key.name, "KeyType": "HASH"}]
    if record.sort_key is not None:
        out.append({"AttributeName": record.sort_key.name, "KeyType": "RANGE"})
    return out


def index_description(index: SecondaryIndex, table_arn: str) -> dict[str, Any]:
    """What DynamoDB tells of any secondary index. Its ItemCount and IndexSizeBytes are
    not counted yet (README: indexes are evaluated from the table when read)."""
    key_schema = [{"AttributeName": e.name, "KeyType": "HASH"} for e in index.hash_keys] + [
        {"AttributeName": e.name, "KeyType": "RANGE"} for e in index.range_keys
    ]
    projection: dict[str, Any] = {"ProjectionType": index.projection_type}
    if index.non_key_attributes:
        projection["NonKeyAttributes"] = list(index.non_key_attributes)
    return {
        "IndexName": index.name,
        "KeySchema": key_schema,
        "Projection": projection,
        "IndexSizeBytes": 0,
        "ItemCount": 0,
        "IndexArn": f"{table_arn}/index/{index.name}",
    }


def global_index_description(record: TableRecord, index: SecondaryIndex, table_arn: str) -> dict[str, Any]:
    """A global index: ACTIVE at once (it needs no backfill: it is read from the table),
    with its own throughput as DynamoDB describes it."""
    out = index_description(index, table_arn)
    out["IndexStatus"] = "ACTIVE"
    out["ProvisionedThroughput"] = {
        "NumberOfDecreasesToday": 0,
        "ReadCapacityUnits": index.read_capacity,
        "WriteCapacityUnits": index.write_capacity,
    }
    if record.billing_mode == "PAY_PER_REQUEST":
        reads = int(throughput.on_demand_allowance(0.0, "read"))
        writes = int(throughput.on_demand_allowance(0.0, "write"))
    else:
        reads, writes = index.read_capacity, index.write_capacity
    out["WarmThroughput"] = {"ReadUnitsPerSecond": reads, "WriteUnitsPerSecond": writes, "Status": "ACTIVE"}
    return out


def warm_throughput(record: TableRecord) -> dict[str, Any]:
    """The rate the table takes at once: a provisioned table its throughput, an
    on-demand one its initial allowance (as DynamoDB describes both; its allowance
    grows with traffic, as DynamoDB's warm throughput does not until asked), or the
    warm throughput asked if higher. A warm throughput asked is UPDATING until the
    table is ACTIVE (LocalStack's recording of DynamoDB's CreateTable answer)."""
    warm = record.warm_throughput
    if record.billing_mode == "PAY_PER_REQUEST":
        reads = int(throughput.on_demand_allowance(0.0, "read", warm))
        writes = int(throughput.on_demand_allowance(0.0, "write", warm))
    else:
        reads, writes = max(record.read_capacity, warm[0]), max(record.write_capacity, warm[1])
    status = "UPDATING" if any(warm) and record.status in ("CREATING", "UPDATING") else record.status
    return {"ReadUnitsPerSecond": reads, "WriteUnitsPerSecond": writes, "Status": status}


def created_description(record: TableRecord, arn: str) -> dict[str, Any]:
    """CreateTable's TableDescription: DynamoDB tells a table's warm throughput and dates
    an on-demand table's billing mode only once it is described (LocalStack's recordings
    of DynamoDB)."""
    out = table_description(record, arn)
    if not any(record.warm_throughput):  # told only when asked for (LocalStack's recordings)
        del out["WarmThroughput"]
    for index in out.get("GlobalSecondaryIndexes", ()):
        index["IndexStatus"] = "CREATING"
        del index["WarmThroughput"]
    if "BillingModeSummary" in out:
        out["BillingModeSummary"] = {"BillingMode": record.billing_mode}
    return out


def table_totals(partition_ids: Sequence[str], stats: Mapping[str, PartitionStats]) -> tuple[int, int]:
    """ItemCount and TableSizeBytes: the sums of the partitions' counts, where the split
    children not counted yet carry together what the rest of their family leaves of the
    count they were estimated from. Children are named after their parent, so a family
    is the partitions whose ids extend its id; a child counted and split again is a
    family inside it, accounted for by the count its own children started from."""
    items = size = 0
    families: dict[str, SplitParent] = {}
    counted: dict[str, PartitionStats] = {}
    for pid in partition_ids:
        s = stats.get(pid)
        if s is None:
            continue
        if s.estimated and s.parent is not None:
            families[s.parent.partition_id] = s.parent
        else:
            counted[pid] = s
            items += s.item_count
            size += s.size_bytes
    for family in families.values():
        inner = _outermost([f for f in families.values() if _under(f.partition_id, family.partition_id)])
        held = [
            s
            for pid, s in counted.items()
            if _under(pid, family.partition_id) and not any(_under(pid, f.partition_id) for f in inner)
        ]
        items += max(
            0, family.item_count - sum(f.item_count for f in inner) - sum(s.item_count for s in held)
        )
        size += max(0, family.size_bytes - sum(f.size_bytes for f in inner) - sum(s.size_bytes for s in held))
    return items, size


def _under(partition_id: str, ancestor: str) -> bool:
    return partition_id.startswith(ancestor + "-")


def _outermost(families: list[SplitParent]) -> list[SplitParent]:
    return [f for f in families if not any(_under(f.partition_id, o.partition_id) for o in families)]


# DynamoDB describes a table it has begun deleting without its schema, creation time,
# warm throughput and secondary indexes (the API reference's DeleteTable example,
# LocalStack's recordings; Alternator's test_delete_table_description_with_si, run
# against DynamoDB; SDK waiters read TableStatus only).
_NOT_IN_DELETING = ("AttributeDefinitions", "KeySchema", "CreationDateTime", "WarmThroughput")
_NOT_IN_DELETING_IF_ANY = ("GlobalSecondaryIndexes", "LocalSecondaryIndexes")


def deleting_description(
    record: TableRecord, arn: str, stats: Mapping[str, PartitionStats] | None = None
) -> dict[str, Any]:
    """DeleteTable's TableDescription: the reduced form of a DELETING table."""
    out = table_description(record, arn, stats)
    for field in _NOT_IN_DELETING:
        del out[field]
    for field in _NOT_IN_DELETING_IF_ANY:
        out.pop(field, None)
    return out


def table_uuid(table_id: int) -> str:
    """The table's TableId: a version-4 UUID, as DynamoDB's are, derived from the table's
    id so every router gives the same one (and a table created again under its name a
    new one)."""
    digest = hashlib.blake2b(str(table_id).encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest, version=4))


def provisioned_throughput(record: TableRecord, now: float) -> dict[str, Any]:
    """ProvisionedThroughput with DynamoDB's record of past changes (when the throughput
    last rose and fell, decreases today); the times only once there were such changes."""
    history = record.throughput_history
    out: dict[str, Any] = {}
    if history.last_increase is not None:
        out["LastIncreaseDateTime"] = history.last_increase
    if history.last_decrease is not None:
        out["LastDecreaseDateTime"] = history.last_decrease
    out["NumberOfDecreasesToday"] = history.decreases_on(now)
    out["ReadCapacityUnits"] = record.read_capacity
    out["WriteCapacityUnits"] = record.write_capacity
    return out
