"""DescribeContinuousBackups and UpdateContinuousBackups.

Point-in-time recovery is not built in Partita: its tables answer as a DynamoDB table
without it, and turning it on is refused there (partita_only).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table, error, validation

pytestmark = PYTESTMARK

# DynamoDB's answer for a new table (Alternator's DynamoDB-verified test_backup.py).
WITHOUT_RECOVERY = {
    "ContinuousBackupsStatus": "DISABLED",
    "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
}


@pytest.fixture(scope="module")
def table(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S")], prefix="backups")


def test_a_table_without_point_in_time_recovery_describes_it_disabled(ddb: Any, table: str) -> None:
    assert (
        ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"] == WITHOUT_RECOVERY
    )


def test_turning_point_in_time_recovery_off_where_it_is_off_answers_the_same(ddb: Any, table: str) -> None:
    answer = ddb.update_continuous_backups(
        TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    assert answer["ContinuousBackupsDescription"] == WITHOUT_RECOVERY


def test_a_missing_table_is_table_not_found(ddb: Any) -> None:
    name = f"missing-{uuid.uuid4().hex[:8]}"
    assert error(ddb.describe_continuous_backups, TableName=name) == (
        "TableNotFoundException",
        f"Table not found: {name}",
    )
    assert error(
        ddb.update_continuous_backups,
        TableName=name,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False},
    ) == ("TableNotFoundException", f"Table not found: {name}")


def test_a_recovery_period_out_of_bounds_is_a_constraint_violation(ddb: Any, table: str) -> None:
    message = validation(
        ddb.update_continuous_backups,
        TableName=table,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False, "RecoveryPeriodInDays": 36},
    )
    assert "failed to satisfy constraint: Member must have value less than or equal to 35" in message


@pytest.mark.partita_only
def test_turning_point_in_time_recovery_on_is_refused_as_not_built(ddb: Any, table: str) -> None:
    message = validation(
        ddb.update_continuous_backups,
        TableName=table,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
    )
    assert message == "Partita does not support point-in-time recovery yet"
    assert (
        ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"] == WITHOUT_RECOVERY
    )
