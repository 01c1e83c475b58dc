"""Point-in-time recovery: UpdateContinuousBackups' and DescribeContinuousBackups'
settings and answers, each write's history record, and RestoreTableToPointInTime's
request, restore time and undo (pure).

While recovery is on, every write that changes an item carries, beside its stream record
if any, a history record: the item's keys and the item as it was before the write
(`write_options`, made into the record by the partition's leader like a stream record, in
the write's own log entry). The records of one table form a stream of their own, never
listed by DynamoDB Streams (`keys.history_stream_ms`), kept for the recovery period.

A restore to time T copies the table as it is now into the new table, then undoes what
changed after T: for each key written after T, the image before its first such write is
the item at T (`undo`). Items not written since T are the same now as then, whenever the
copy read them, so the copy needs no snapshot, only to be read before the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from partita.api.operations import backups, table_name_only
from partita.api.operations.backups import RestoreOverrides
from partita.api.shape import expect_dict, expect_type
from partita.common import errors, keys
from partita.common.errors import DynamoError
from partita.control.model import SECONDS_PER_DAY, PointInTimeRecovery, TableRecord

# DynamoDB's API reference: "Continuous backups are ENABLED on all tables at table
# creation"; point-in-time recovery is what UpdateContinuousBackups turns on and off.
# (Alternator's test_backup.py saw DISABLED for the first seconds of a table's life on
# AWS, and calls that not worth reproducing.)
DESCRIPTION_DISABLED = {
    "ContinuousBackupsStatus": "ENABLED",
    "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
}


def history_ms(setting: PointInTimeRecovery) -> int:
    """The stream time of the table's current history (its shards' keys)."""
    assert setting.enabled_at is not None
    return keys.history_stream_ms(round(setting.enabled_at * 1000))


# --- UpdateContinuousBackups, DescribeContinuousBackups ------------------------------------


@dataclass(frozen=True)
class UpdateRequest:
    table: str
    enabled: bool
    recovery_days: int | None


def source_table_of(arn: str) -> str:
    """The table a SourceTableArn names (the front door turns a TableName's ARN into the
    name itself: router/table_arns.py, so only this member is left to read)."""
    return arn.split(":table/", 1)[1].split("/", 1)[0] if arn.startswith("arn:") and ":table/" in arn else arn


def validate_describe(body: Any) -> str:
    return table_name_only.validate(body)


def validate_update(body: Any) -> UpdateRequest:
    body = expect_dict(body)
    table = table_name_only.validate(body)
    spec = expect_dict(body["PointInTimeRecoverySpecification"])
    enabled = bool(expect_type(spec["PointInTimeRecoveryEnabled"], bool, "a boolean"))
    days = expect_type(spec.get("RecoveryPeriodInDays"), int, "an integer")
    return UpdateRequest(table, enabled, days)


def updated(setting: PointInTimeRecovery, req: UpdateRequest, now: float) -> PointInTimeRecovery:
    """The setting after the request: turning it on starts a history (unless it is on:
    then only the recovery period changes), turning it off ends it."""
    if not req.enabled:
        return PointInTimeRecovery(False, setting.enabled_at, setting.recovery_days)
    days = req.recovery_days if req.recovery_days is not None else setting.recovery_days
    if setting.enabled:
        return PointInTimeRecovery(True, setting.enabled_at, days)
    if req.recovery_days is None:
        days = PointInTimeRecovery().recovery_days
    return PointInTimeRecovery(True, round(now, 3), days)


def window(setting: PointInTimeRecovery, now: float) -> tuple[float, float]:
    """(earliest, latest) restorable times: from when recovery was turned on, or the
    recovery period ago if later, to now (the history reaches the last write)."""
    assert setting.enabled_at is not None
    earliest = max(setting.enabled_at, now - setting.recovery_days * SECONDS_PER_DAY)
    return round(earliest, 3), round(max(earliest, now), 3)


def description(setting: PointInTimeRecovery, now: float) -> dict[str, Any]:
    """ContinuousBackupsDescription."""
    if not setting.enabled:
        return DESCRIPTION_DISABLED
    earliest, latest = window(setting, now)
    return {
        "ContinuousBackupsStatus": "ENABLED",
        "PointInTimeRecoveryDescription": {
            "PointInTimeRecoveryStatus": "ENABLED",
            "RecoveryPeriodInDays": setting.recovery_days,
            "EarliestRestorableDateTime": earliest,
            "LatestRestorableDateTime": latest,
        },
    }


def table_not_found(name: str) -> DynamoError:
    # These operations answer a missing table as the backup operations do.
    return DynamoError("TableNotFoundException", f"Table not found: {name}")


def not_enabled(name: str) -> DynamoError:
    return DynamoError(
        "PointInTimeRecoveryUnavailableException", f"Point in time recovery is not enabled for table '{name}'"
    )


# --- a write's history record -----------------------------------------------------------


def write_options(record: TableRecord, now: float) -> dict[str, Any] | None:
    """What a write tells its partition's leader so the leader adds its history record
    (`api/streams.stored_record` with the item's old image); None while recovery is off."""
    setting = record.point_in_time
    if not setting.enabled:
        return None
    return {
        "view": "OLD_IMAGE",
        "keys": record.key_names,
        "at": round(now, 3),
        "ms": history_ms(setting),
        "r": setting.recovery_days,  # so a node trims it knowing nothing of the table
    }


# --- RestoreTableToPointInTime -----------------------------------------------------------


@dataclass(frozen=True)
class RestoreRequest:
    target: str
    source: str  # the source table's name (from SourceTableName or SourceTableArn)
    restore_time: float | None  # None: the latest restorable time
    overrides: RestoreOverrides


def validate_restore(body: Any) -> RestoreRequest:
    body = expect_dict(body)
    name = expect_type(body.get("SourceTableName"), str, "a string")
    arn = expect_type(body.get("SourceTableArn"), str, "a string")
    if (name is None) == (arn is None):
        raise errors.validation("Exactly one of SourceTableName or SourceTableArn must be specified")
    latest = expect_type(body.get("UseLatestRestorableTime"), bool, "a boolean")
    at = expect_type(body.get("RestoreDateTime"), (int, float), "a number")
    if latest and at is not None:
        raise errors.validation("Only one of RestoreDateTime or UseLatestRestorableTime can be specified")
    return RestoreRequest(
        target=str(body["TargetTableName"]),
        source=name if name is not None else source_table_of(str(arn)),
        restore_time=None if at is None else float(at),
        overrides=backups.validate_overrides(body),
    )


def restore_time(req: RestoreRequest, setting: PointInTimeRecovery, now: float) -> float:
    """The time the new table is restored to; InvalidRestoreTimeException outside the
    restorable window."""
    earliest, latest = window(setting, now)
    if req.restore_time is None:
        return latest
    if not earliest <= req.restore_time <= latest:
        raise DynamoError(
            "InvalidRestoreTimeException",
            f"Restore time is not within the restorable window: earliest {earliest}, latest {latest}",
        )
    return req.restore_time


@dataclass(frozen=True)
class Change:
    """One history record read back: its write's time and log place, and the record."""

    at: float
    index: int
    position: int
    record: dict[str, Any]


class Undo:
    """What undoing the changes after `restore_time` writes, gathered from the history's
    records in any order: for each key written after that time (its key attributes, as
    canonical JSON), the item it held then, the old image of its first write after that
    time (None: there was no item). Writes are ordered by time, then by their log place.
    Only each key's first change is kept, so memory follows the keys, not the writes."""

    def __init__(self, restore_time: float) -> None:
        self.restore_time = restore_time
        self.first: dict[bytes, Change] = {}

    def add(self, change: Change) -> None:
        if change.at <= self.restore_time:
            return
        key = orjson.dumps(change.record["k"], option=orjson.OPT_SORT_KEYS)
        held = self.first.get(key)
        if held is None or (change.at, change.index, change.position) < (held.at, held.index, held.position):
            self.first[key] = change

    def images(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """(key attributes, the item at the restore time or None) per key written since."""
        return [(change.record["k"], change.record.get("o")) for change in self.first.values()]
