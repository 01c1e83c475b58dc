"""Point-in-time recovery: DescribeContinuousBackups, UpdateContinuousBackups and
RestoreTableToPointInTime.

Written to pass against DynamoDB too, given time: there a restore takes many minutes and
the latest restorable time trails the present by about five minutes, so the restores
here are to a time chosen, `WAIT_SECONDS` long against a remote endpoint.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, all_pages, create_table, error, validation
from tests.compat.test_backups import restored

pytestmark = PYTESTMARK

# DynamoDB's answer for a table without point-in-time recovery: "Continuous backups are
# ENABLED on all tables at table creation" (the API reference; Alternator's test_backup.py
# saw DISABLED in a table's first seconds on AWS).
WITHOUT_RECOVERY = {
    "ContinuousBackupsStatus": "ENABLED",
    "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
}
ON = {"PointInTimeRecoveryEnabled": True}


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
    assert error(
        ddb.restore_table_to_point_in_time,
        SourceTableName=name,
        TargetTableName=f"{name}-copy",
        UseLatestRestorableTime=True,
    ) == ("TableNotFoundException", f"Table not found: {name}")


def test_a_recovery_period_out_of_bounds_is_a_constraint_violation(ddb: Any, table: str) -> None:
    message = validation(
        ddb.update_continuous_backups,
        TableName=table,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False, "RecoveryPeriodInDays": 36},
    )
    assert "failed to satisfy constraint: Member must have value less than or equal to 35" in message


def test_a_restore_onto_an_existing_table_is_refused_before_the_sources_recovery_is_judged(
    ddb: Any, table: str
) -> None:
    assert error(
        ddb.restore_table_to_point_in_time,
        SourceTableName=table,
        TargetTableName=table,
        UseLatestRestorableTime=True,
    ) == ("TableAlreadyExistsException", f"Table already exists: {table}")


def test_a_table_without_recovery_is_neither_restored_nor_exported(ddb: Any, table: str) -> None:
    refused = (
        "PointInTimeRecoveryUnavailableException",
        f"Point in time recovery is not enabled for table '{table}'",
    )
    assert (
        error(
            ddb.restore_table_to_point_in_time,
            SourceTableName=table,
            TargetTableName=f"{table}-copy",
            UseLatestRestorableTime=True,
        )
        == refused
    )
    arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
    assert error(ddb.export_table_to_point_in_time, TableArn=arn, S3Bucket="bucket")[0] == refused[0]


def test_turning_recovery_on_describes_its_window_and_off_describes_it_off(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="pitr-switch")
    answer = ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    described = answer["ContinuousBackupsDescription"]
    assert described["ContinuousBackupsStatus"] == "ENABLED"
    recovery = described["PointInTimeRecoveryDescription"]
    assert (recovery["PointInTimeRecoveryStatus"], recovery["RecoveryPeriodInDays"]) == ("ENABLED", 35)
    assert isinstance(recovery["EarliestRestorableDateTime"], datetime)
    assert recovery["LatestRestorableDateTime"] >= recovery["EarliestRestorableDateTime"]
    again = ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    assert (
        again["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]["EarliestRestorableDateTime"]
        == recovery["EarliestRestorableDateTime"]
    )
    period = {**ON, "RecoveryPeriodInDays": 10}
    shorter = ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=period)
    assert (
        shorter["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]["RecoveryPeriodInDays"]
        == 10
    )
    described = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
    assert described["PointInTimeRecoveryDescription"]["RecoveryPeriodInDays"] == 10
    off = ddb.update_continuous_backups(
        TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    assert off["ContinuousBackupsDescription"] == WITHOUT_RECOVERY


def _items(ddb: Any, name: str) -> dict[str, dict[str, Any]]:
    items, _ = all_pages(ddb.scan, TableName=name, ConsistentRead=True)
    return {item["pk"]["S"]: item for item in items}


def _restore(ddb: Any, source: str, **when: Any) -> tuple[str, dict[str, Any]]:
    target = f"{source}-at-{uuid.uuid4().hex[:6]}"
    answer = ddb.restore_table_to_point_in_time(SourceTableName=source, TargetTableName=target, **when)
    return target, answer["TableDescription"]


def test_a_restore_to_a_time_brings_back_the_table_as_it_was_then(ddb: Any) -> None:
    name = create_table(
        ddb,
        [("pk", "S")],
        prefix="pitr",
        definitions=[("g", "S")],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    for i in range(12):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "v": {"N": "1"}, "g": {"S": "old"}})
    then = _items(ddb, name)
    time.sleep(1.0)
    moment = time.time()
    time.sleep(1.0)
    # After the moment: overwrites, updates, deletes, new items, a batch and a transaction.
    for i in range(3):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "v": {"N": "2"}, "g": {"S": "new"}})
    ddb.update_item(
        TableName=name,
        Key={"pk": {"S": "k3"}},
        UpdateExpression="SET v = v + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    ddb.update_item(
        TableName=name,
        Key={"pk": {"S": "k3"}},
        UpdateExpression="SET v = v + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    for i in (4, 5):
        ddb.delete_item(TableName=name, Key={"pk": {"S": f"k{i}"}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "born-later"}, "v": {"N": "9"}, "g": {"S": "new"}})
    ddb.batch_write_item(
        RequestItems={
            name: [
                {"PutRequest": {"Item": {"pk": {"S": "k8"}, "v": {"N": "8"}, "g": {"S": "new"}}}},
                {"DeleteRequest": {"Key": {"pk": {"S": "k9"}}}},
            ]
        }
    )
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": "k6"}, "v": {"N": "7"}, "g": {"S": "new"}}}},
            {"Delete": {"TableName": name, "Key": {"pk": {"S": "k7"}}}},
        ]
    )
    now = _items(ddb, name)
    assert now != then

    target, answer = _restore(ddb, name, RestoreDateTime=moment)
    assert answer["TableStatus"] == "CREATING" and answer["TableName"] == target
    summary = answer["RestoreSummary"]
    assert summary["SourceTableArn"] == ddb.describe_table(TableName=name)["Table"]["TableArn"]
    assert summary["RestoreInProgress"] is True and "SourceBackupArn" not in summary
    assert abs(summary["RestoreDateTime"].timestamp() - moment) < 0.01
    done = restored(ddb, target)
    assert done["RestoreSummary"]["RestoreInProgress"] is False
    assert [i["IndexName"] for i in done["GlobalSecondaryIndexes"]] == ["by-g"]
    assert _items(ddb, target) == then
    olds, _ = all_pages(
        ddb.query,
        TableName=target,
        IndexName="by-g",
        KeyConditionExpression="g = :g",
        ExpressionAttributeValues={":g": {"S": "old"}},
    )
    assert len(olds) == 12
    assert _items(ddb, name) == now  # the source is left as it is

    latest, _ = _restore(ddb, name, UseLatestRestorableTime=True)
    restored(ddb, latest)
    assert _items(ddb, latest) == now
    assert error(
        ddb.restore_table_to_point_in_time,
        SourceTableName=name,
        TargetTableName=latest,
        UseLatestRestorableTime=True,
    ) == (
        "TableAlreadyExistsException",
        f"Table already exists: {latest}",
    )


def test_a_restore_time_outside_the_window_is_refused(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="pitr-window")
    ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    before = time.time() - 3600
    code, _ = error(
        ddb.restore_table_to_point_in_time,
        SourceTableName=name,
        TargetTableName=f"{name}-early",
        RestoreDateTime=before,
    )
    assert code == "InvalidRestoreTimeException"
    code, _ = error(
        ddb.restore_table_to_point_in_time,
        SourceTableName=name,
        TargetTableName=f"{name}-late",
        RestoreDateTime=time.time() + 3600,
    )
    assert code == "InvalidRestoreTimeException"
    assert f"{name}-early" not in ddb.list_tables()["TableNames"]


def test_a_restore_reaches_back_across_a_split_of_the_source(ddb: Any) -> None:
    # Raising the throughput splits the table's partitions in place: the changes made
    # before the split stay in the parent's history, those after it in the children's.
    name = create_table(
        ddb,
        [("pk", "S")],
        prefix="pitr-split",
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
    )
    ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    for i in range(40):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "v": {"N": "1"}})
    then = _items(ddb, name)
    time.sleep(1.0)
    moment = time.time()
    time.sleep(1.0)
    for i in range(0, 40, 2):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "v": {"N": "2"}})
    ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 9000, "WriteCapacityUnits": 3000}
    )
    restored(ddb, name)  # ACTIVE again once split
    for i in range(1, 40, 2):
        ddb.delete_item(TableName=name, Key={"pk": {"S": f"k{i}"}})
    target, _ = _restore(ddb, name, RestoreDateTime=moment)
    restored(ddb, target)
    assert _items(ddb, target) == then


@pytest.mark.partita_only
def test_recovery_turned_on_right_after_create_table_is_recorded_at_once(ddb: Any) -> None:
    # DynamoDB answers ContinuousBackupsUnavailableException for a moment (clients retry);
    # Partita takes the setting while the table is CREATING, as clients written against
    # emulators expect.
    name = f"pitr-new-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    answer = ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    assert answer["ContinuousBackupsDescription"]["ContinuousBackupsStatus"] == "ENABLED"
    restored(ddb, name)  # ACTIVE
    described = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
    assert described["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
