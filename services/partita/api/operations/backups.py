"""CreateBackup, DescribeBackup, ListBackups, DeleteBackup, RestoreTableFromBackup: their
requests, the names a backup goes by, and the pure decisions (pure; the router's
actions and jobs read and write the tables).

A backup is kept as a table of its own, hidden from every DynamoDB operation, named
after the backup (`hidden_table_name`); its record (`BackupInfo`) rides on that table's
spec. Its ARN is DynamoDB's: the source table's ARN, `/backup/`, the request's
milliseconds (14 digits) and 8 hex digits.

A restore makes a new table from the backup's record of its source (key schema,
attributes, billing mode and throughput, secondary indexes; as on DynamoDB, not its
tags, stream, Time to Live, policies or deletion protection), then copies the items in.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from dataclasses import dataclass
from typing import Any

from partita.api.operations import on_demand_throughput
from partita.api.shape import expect_dict, expect_type
from partita.common import errors
from partita.common.errors import DynamoError
from partita.common.keys import KEY_HASH_DYNAMODB
from partita.control.model import (
    BackupInfo,
    Claim,
    RestoreInfo,
    StreamSpec,
    TableSpec,
    ThroughputHistory,
    TimeToLive,
    new_table_id,
)

HIDDEN_PREFIX = ".partita-backup-"
_BACKUP_ARN = re.compile(
    r"(arn:aws[a-z-]*:dynamodb:[a-z0-9-]*:[0-9]*:table/[a-zA-Z0-9_.-]{3,255})/backup/([0-9]{14}-[0-9a-f]{8})"
)
BACKUP_TYPES = ("USER", "SYSTEM", "AWS_BACKUP", "ALL")


# --- errors, in DynamoDB's words (moto's and DynamoDB's API reference) --------------------


def backup_not_found(arn: str) -> DynamoError:
    return DynamoError("BackupNotFoundException", f"Backup not found: {arn}")


def table_not_found(name: str) -> DynamoError:
    return DynamoError("TableNotFoundException", f"Table not found: {name}")


def table_already_exists(name: str) -> DynamoError:
    return DynamoError("TableAlreadyExistsException", f"Table already exists: {name}")


def backup_in_use(message: str) -> DynamoError:
    return DynamoError("BackupInUseException", message)


def table_in_use(message: str) -> DynamoError:
    return DynamoError("TableInUseException", message)


# --- names ----------------------------------------------------------------------------------


def new_backup_id(now: float) -> str:
    return f"{int(now * 1000):014d}-{secrets.token_hex(4)}"


def backup_arn(table_arn: str, backup_id: str) -> str:
    return f"{table_arn}/backup/{backup_id}"


def hidden_table_name(backup_id: str) -> str:
    return HIDDEN_PREFIX + backup_id


def hidden_table_of(arn: str) -> str | None:
    """The hidden table a backup ARN names; None if it is not a backup ARN."""
    match = _BACKUP_ARN.fullmatch(arn)
    return hidden_table_name(match.group(2)) if match else None


# --- requests -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListRequest:
    table_name: str | None
    limit: int | None
    lower: float | None  # created at or after
    upper: float | None  # created before
    start_arn: str | None
    backup_type: str


@dataclass(frozen=True)
class RestoreOverrides:
    """What a restore changes of the source table's settings (both kinds of restore)."""

    billing_mode: str | None
    read_capacity: int | None
    write_capacity: int | None
    global_indexes: tuple[str, ...] | None  # the names kept, or None: every one
    local_indexes: tuple[str, ...] | None
    on_demand: on_demand_throughput.Requested | None = None  # OnDemandThroughputOverride


@dataclass(frozen=True)
class RestoreRequest:
    target: str
    backup_arn: str
    overrides: RestoreOverrides


def validate_create(body: Any) -> tuple[str, str]:
    """(table name, backup name): their shapes are the service model's checks."""
    body = expect_dict(body)
    return str(body["TableName"]), str(body["BackupName"])


def validate_arn(body: Any) -> str:
    return str(expect_dict(body)["BackupArn"])


def validate_list(body: Any) -> ListRequest:
    body = expect_dict(body)
    return ListRequest(
        table_name=expect_type(body.get("TableName"), str, "a string"),
        limit=expect_type(body.get("Limit"), int, "an integer"),
        lower=_time(body.get("TimeRangeLowerBound")),
        upper=_time(body.get("TimeRangeUpperBound")),
        start_arn=expect_type(body.get("ExclusiveStartBackupArn"), str, "a string"),
        backup_type=str(body.get("BackupType") or "USER"),
    )


def _time(value: Any) -> float | None:
    value = expect_type(value, (int, float), "a number")
    return None if value is None else float(value)


_UNSUPPORTED_OVERRIDES = ("VectorIndexOverride",)


def validate_restore(body: Any) -> RestoreRequest:
    body = expect_dict(body)
    return RestoreRequest(
        target=str(body["TargetTableName"]),
        backup_arn=str(body["BackupArn"]),
        overrides=validate_overrides(body),
    )


def validate_overrides(body: dict[str, Any]) -> RestoreOverrides:
    given = [m for m in _UNSUPPORTED_OVERRIDES if body.get(m) is not None]
    sse = body.get("SSESpecificationOverride")
    if isinstance(sse, dict) and sse.get("Enabled"):
        given.append("SSESpecificationOverride")
    if given:
        raise errors.validation(f"Partita does not support restoring a table with {', '.join(given)} yet")
    throughput = body.get("ProvisionedThroughputOverride")
    mode = body.get("BillingModeOverride")
    if mode == "PROVISIONED" and throughput is None:
        raise errors.validation(
            "One or more parameter values were invalid: ProvisionedThroughputOverride must be specified "
            "when BillingModeOverride is PROVISIONED"
        )
    return RestoreOverrides(
        billing_mode=mode,
        read_capacity=int(throughput["ReadCapacityUnits"]) if throughput else None,
        write_capacity=int(throughput["WriteCapacityUnits"]) if throughput else None,
        global_indexes=_index_names(body.get("GlobalSecondaryIndexOverride")),
        local_indexes=_index_names(body.get("LocalSecondaryIndexOverride")),
        on_demand=on_demand_throughput.requested(body.get("OnDemandThroughputOverride")),
    )


def _index_names(listed: Any) -> tuple[str, ...] | None:
    if listed is None:
        return None
    return tuple(str(expect_dict(i)["IndexName"]) for i in listed)


# --- what a backup and a restore make -----------------------------------------------------


def hidden_spec(source: TableSpec, info: BackupInfo, now: float) -> TableSpec:
    """The table a backup's items are kept in: the source's keys alone, on demand, with
    nothing that acts on items by itself (no Time to Live, stream or indexes)."""
    key_names = {source.partition_key.name, *([source.sort_key.name] if source.sort_key else [])}
    return TableSpec(
        name=hidden_table_name(info.backup_id),
        table_id=new_table_id(),
        partition_key=source.partition_key,
        sort_key=source.sort_key,
        attribute_definitions=tuple((n, t) for n, t in source.attribute_definitions if n in key_names),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=now,
        backup=info,
        key_hash=KEY_HASH_DYNAMODB,
    )


def backup_info(
    source: TableSpec, table_arn: str, backup_name: str, owner: str, now: float, hold: float
) -> BackupInfo:
    backup_id = new_backup_id(now)
    return BackupInfo(
        backup_id=backup_id,
        backup_name=backup_name,
        arn=backup_arn(table_arn, backup_id),
        created_at=round(now, 3),
        source_arn=table_arn,
        source=source.to_json(),
        claim=Claim(owner, now + hold),
    )


def restored_spec(req: RestoreRequest, backup: TableSpec, owner: str, now: float, hold: float) -> TableSpec:
    """The new table of a restore from a backup, CREATING to clients until its items are in."""
    info = backup.backup
    assert info is not None
    restore = RestoreInfo(
        source_backup_arn=info.arn,
        source_table_arn=info.source_arn,
        restored_at=round(now, 3),
        backup_table=backup.name,
        claim=Claim(owner, now + hold),
    )
    return restored_table(req.target, req.overrides, TableSpec.from_json(info.source), restore, now)


def restored_table(
    target: str, req: RestoreOverrides, source: TableSpec, restore: RestoreInfo, now: float
) -> TableSpec:
    """A restore's new table: the source's keys, throughput and indexes, as overridden;
    no Time to Live, stream, tags or recovery (DynamoDB's restores set none of them)."""
    mode = req.billing_mode or source.billing_mode
    # The source's on-demand maximum while the table stays on demand, or the override.
    on_demand_max = source.on_demand_max if mode == "PAY_PER_REQUEST" else (0, 0)
    if req.on_demand is not None:
        on_demand_max = on_demand_throughput.on_create(req.on_demand, mode)
    if mode == "PAY_PER_REQUEST":
        reads = writes = 0
    else:
        reads = req.read_capacity if req.read_capacity is not None else source.read_capacity
        writes = req.write_capacity if req.write_capacity is not None else source.write_capacity
    indexes = tuple(
        dataclasses.replace(index, created_at=round(now, 3))
        for index in source.indexes
        if _kept(index.name, req.global_indexes if index.kind == "GLOBAL" else req.local_indexes)
    )
    used = {e.name for i in indexes for e in (*i.hash_keys, *i.range_keys)}
    key_names = {source.partition_key.name, *([source.sort_key.name] if source.sort_key else [])}
    return TableSpec(
        name=target,
        table_id=new_table_id(),
        partition_key=source.partition_key,
        sort_key=source.sort_key,
        attribute_definitions=tuple(
            (n, t) for n, t in source.attribute_definitions if n in key_names or n in used
        ),
        billing_mode=mode,  # type: ignore[arg-type]
        read_capacity=reads,
        write_capacity=writes,
        on_demand_max=on_demand_max,
        created_at=round(now, 3),
        key_hash=KEY_HASH_DYNAMODB,
        indexes=indexes,
        time_to_live=TimeToLive(),
        stream=StreamSpec(),
        throughput_history=ThroughputHistory(),
        restore=restore,
    )


def _kept(name: str, names: tuple[str, ...] | None) -> bool:
    return names is None or name in names


def listed(backups: list[BackupInfo], req: ListRequest) -> tuple[list[BackupInfo], str | None]:
    """ListBackups' page (oldest first) and its LastEvaluatedBackupArn; TableName is
    matched against each backup's source table's name."""
    if req.backup_type not in ("USER", "ALL"):
        return [], None  # Partita makes no SYSTEM or AWS_BACKUP backups
    chosen = sorted(
        (
            b
            for b in backups
            if (req.table_name is None or b.source.get("name") == req.table_name)
            and (req.lower is None or b.created_at >= req.lower)
            and (req.upper is None or b.created_at < req.upper)
        ),
        key=lambda b: (b.created_at, b.arn),
    )
    if req.start_arn is not None:
        after = [i for i, b in enumerate(chosen) if b.arn == req.start_arn]
        chosen = chosen[after[0] + 1 :] if after else chosen
    if req.limit is not None and len(chosen) > req.limit:
        page = chosen[: req.limit]
        return page, page[-1].arn
    return chosen, None
