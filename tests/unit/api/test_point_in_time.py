"""Point-in-time recovery's pure rules: the setting UpdateContinuousBackups leaves, what
DescribeContinuousBackups tells, the restorable window, RestoreTableToPointInTime's
request, and which image of each key a restore writes back."""

from __future__ import annotations

from typing import Any

import pytest

from partita.api import point_in_time
from partita.api.point_in_time import Change, Undo, UpdateRequest
from partita.common import keys
from partita.common.errors import DynamoError
from partita.control.model import SECONDS_PER_DAY, PointInTimeRecovery

DAY = SECONDS_PER_DAY


def _update(enabled: bool, days: int | None = None) -> UpdateRequest:
    return UpdateRequest("t", enabled, days)


def test_turning_recovery_on_starts_a_history_that_a_second_request_keeps() -> None:
    on = point_in_time.updated(PointInTimeRecovery(), _update(True), 100.0)
    assert on == PointInTimeRecovery(True, 100.0, 35)
    again = point_in_time.updated(on, _update(True), 500.0)
    assert again.enabled_at == 100.0  # the same history: its earliest time stays
    shorter = point_in_time.updated(on, _update(True, 10), 600.0)
    assert (shorter.enabled_at, shorter.recovery_days) == (100.0, 10)


def test_turning_recovery_off_ends_the_history_and_on_again_starts_a_new_one_at_the_default_period() -> None:
    on = point_in_time.updated(PointInTimeRecovery(), _update(True, 7), 100.0)
    off = point_in_time.updated(on, _update(False), 200.0)
    assert not off.enabled and off.ever_enabled
    again = point_in_time.updated(off, _update(True), 300.0)
    assert again == PointInTimeRecovery(True, 300.0, 35)


def test_the_description_follows_the_setting() -> None:
    # Continuous backups are on from a table's creation, recovery or not.
    assert point_in_time.description(PointInTimeRecovery(), 0.0) == {
        "ContinuousBackupsStatus": "ENABLED",
        "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
    }
    assert point_in_time.description(PointInTimeRecovery(False, 5.0), 0.0) == {
        "ContinuousBackupsStatus": "ENABLED",
        "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
    }
    described = point_in_time.description(PointInTimeRecovery(True, 100.0, 35), 160.0)
    assert described["ContinuousBackupsStatus"] == "ENABLED"
    assert described["PointInTimeRecoveryDescription"] == {
        "PointInTimeRecoveryStatus": "ENABLED",
        "RecoveryPeriodInDays": 35,
        "EarliestRestorableDateTime": 100.0,
        "LatestRestorableDateTime": 160.0,
    }


def test_the_window_starts_at_the_recovery_period_once_the_history_is_older() -> None:
    setting = PointInTimeRecovery(True, 0.0, 2)
    assert point_in_time.window(setting, 1 * DAY) == (0.0, 1 * DAY)
    assert point_in_time.window(setting, 10 * DAY) == (8 * DAY, 10 * DAY)


def _restore(**body: Any) -> point_in_time.RestoreRequest:
    return point_in_time.validate_restore({"TargetTableName": "new", **body})


def test_a_restore_names_its_source_once_and_its_time_at_most_once() -> None:
    assert _restore(SourceTableName="t").source == "t"
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/t"
    assert _restore(SourceTableArn=arn).source == "t"
    for body in ({}, {"SourceTableName": "t", "SourceTableArn": arn}):
        with pytest.raises(DynamoError) as caught:
            _restore(**body)
        assert caught.value.code == "ValidationException"
    with pytest.raises(DynamoError):
        _restore(SourceTableName="t", UseLatestRestorableTime=True, RestoreDateTime=5.0)


def test_a_restore_time_outside_the_window_is_invalid_and_none_means_the_latest() -> None:
    setting = PointInTimeRecovery(True, 100.0, 35)
    assert point_in_time.restore_time(_restore(SourceTableName="t"), setting, 200.0) == 200.0
    assert (
        point_in_time.restore_time(_restore(SourceTableName="t", RestoreDateTime=150), setting, 200.0) == 150
    )
    for at in (99.0, 201.0):
        with pytest.raises(DynamoError) as caught:
            point_in_time.restore_time(_restore(SourceTableName="t", RestoreDateTime=at), setting, 200.0)
        assert caught.value.code == "InvalidRestoreTimeException"


def _change(at: float, index: int, pk: str, old: str | None) -> Change:
    record: dict[str, Any] = {"k": {"pk": {"S": pk}}, "t": at}
    if old is not None:
        record["o"] = {"pk": {"S": pk}, "v": {"S": old}}
    return Change(at, index, 1, record)


def test_a_restore_writes_back_each_keys_image_before_its_first_write_after_the_time() -> None:
    undo = Undo(10.0)
    for change in [
        _change(12.0, 5, "a", "a-at-10"),  # a's first write after 10...
        _change(9.0, 2, "a", "a-at-5"),  # ...one before 10 does not count
        _change(15.0, 7, "a", "a-at-12"),
        _change(20.0, 9, "b", None),  # b did not exist at 10
        _change(11.0, 3, "c", "c-at-10"),  # same time as the next: the log's order decides
        _change(11.0, 4, "c", "c-later"),
        _change(10.0, 1, "d", "d-before"),  # at the time itself: kept as it is
    ]:
        undo.add(change)
    images = {k["pk"]["S"]: (v or {}).get("v") for k, v in undo.images()}
    assert images == {"a": {"S": "a-at-10"}, "b": None, "c": {"S": "c-at-10"}}


def test_history_stream_times_are_told_from_a_streams() -> None:
    assert keys.is_history(point_in_time.history_ms(PointInTimeRecovery(True, 1.5)))
    assert not keys.is_history(1_700_000_000_000)
    assert keys.history_stream_ms(1500) & ~(1 << 63) == 1500
