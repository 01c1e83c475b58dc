"""On-demand backups: CreateBackup, DescribeBackup, ListBackups, DeleteBackup,
RestoreTableFromBackup.

Written to pass against DynamoDB too, given time: backups and restores there take
minutes, so every wait is bounded by `WAIT_SECONDS` (long against a remote endpoint).
What DynamoDB does not promise (a write made right after CreateBackup's answer left
out of the backup: DynamoDB promises that only a minute later) is `partita_only`.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.compat import endpoint
from tests.compat.helpers import PYTESTMARK, all_pages, create_table, error

pytestmark = PYTESTMARK

WAIT_SECONDS = 60.0 if endpoint.configured() is None else 1800.0


def wait_for(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.5)


def available(ddb: Any, arn: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        description: dict[str, Any] = ddb.describe_backup(BackupArn=arn)["BackupDescription"]
        return description if description["BackupDetails"]["BackupStatus"] == "AVAILABLE" else None

    found: dict[str, Any] = wait_for(ready, f"backup {arn} AVAILABLE")
    return found


def restored(ddb: Any, name: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        table: dict[str, Any] = ddb.describe_table(TableName=name)["Table"]
        return table if table["TableStatus"] == "ACTIVE" else None

    found: dict[str, Any] = wait_for(ready, f"table {name} restored")
    return found


def items_of(ddb: Any, name: str) -> dict[str, dict[str, Any]]:
    items, _ = all_pages(ddb.scan, TableName=name, ConsistentRead=True)
    return {item["pk"]["S"]: item for item in items}


def fill(ddb: Any, name: str, count: int, prefix: str = "item") -> dict[str, dict[str, Any]]:
    written = {}
    for i in range(count):
        item = {"pk": {"S": f"{prefix}-{i}"}, "n": {"N": str(i)}, "blob": {"B": bytes([i % 256]) * 100}}
        ddb.put_item(TableName=name, Item=item)
        written[item["pk"]["S"]] = item
    return written


@pytest.fixture(scope="module")
def source(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S")], prefix="backup-src")


def test_a_backup_of_a_missing_table_is_table_not_found(ddb: Any) -> None:
    name = f"missing-{uuid.uuid4().hex[:8]}"
    assert error(ddb.create_backup, TableName=name, BackupName="nightly") == (
        "TableNotFoundException",
        f"Table not found: {name}",
    )


def test_an_unknown_backup_is_backup_not_found(ddb: Any, source: str) -> None:
    arn = ddb.describe_table(TableName=source)["Table"]["TableArn"] + "/backup/01623095754481-2cfcd6f9"
    expected = ("BackupNotFoundException", f"Backup not found: {arn}")
    assert error(ddb.describe_backup, BackupArn=arn) == expected
    assert error(ddb.delete_backup, BackupArn=arn) == expected
    assert (
        error(ddb.restore_table_from_backup, TargetTableName=f"t-{uuid.uuid4().hex[:8]}", BackupArn=arn)
        == expected
    )


def test_a_backup_describes_its_source_and_a_restore_brings_its_items_back(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="backup")
    written = fill(ddb, name, 40)
    table = ddb.describe_table(TableName=name)["Table"]
    details = ddb.create_backup(TableName=name, BackupName="nightly")["BackupDetails"]
    assert details["BackupName"] == "nightly" and name in details["BackupArn"]
    assert details["BackupStatus"] in ("CREATING", "AVAILABLE")
    assert details["BackupType"] == "USER" and isinstance(details["BackupSizeBytes"], int)
    described = available(ddb, details["BackupArn"])
    assert described["BackupDetails"]["BackupSizeBytes"] > 0
    source = described["SourceTableDetails"]
    assert (source["TableName"], source["TableArn"], source["KeySchema"]) == (
        name,
        table["TableArn"],
        table["KeySchema"],
    )
    assert source["TableCreationDateTime"] == table["CreationDateTime"]
    assert source["ItemCount"] == 40 and source["TableSizeBytes"] > 0
    summaries = ddb.list_backups(TableName=name)["BackupSummaries"]
    assert [s["BackupArn"] for s in summaries] == [details["BackupArn"]]
    assert (summaries[0]["TableName"], summaries[0]["BackupStatus"]) == (name, "AVAILABLE")

    target = f"restored-{uuid.uuid4().hex[:8]}"
    answer = ddb.restore_table_from_backup(TargetTableName=target, BackupArn=details["BackupArn"])[
        "TableDescription"
    ]
    assert answer["TableName"] == target and answer["KeySchema"] == table["KeySchema"]
    assert answer["RestoreSummary"]["SourceBackupArn"] == details["BackupArn"]
    assert answer["RestoreSummary"]["SourceTableArn"] == table["TableArn"]
    done = restored(ddb, target)
    assert done["RestoreSummary"]["RestoreInProgress"] is False
    assert items_of(ddb, target) == written
    assert error(ddb.restore_table_from_backup, TargetTableName=target, BackupArn=details["BackupArn"]) == (
        "TableAlreadyExistsException",
        f"Table already exists: {target}",
    )


def test_backups_of_one_name_are_distinct_and_a_deleted_one_is_gone(ddb: Any, source: str) -> None:
    arns = [
        ddb.create_backup(TableName=source, BackupName="same")["BackupDetails"]["BackupArn"] for _ in range(2)
    ]
    assert arns[0] != arns[1]
    for arn in arns:
        available(ddb, arn)
    deleted = ddb.delete_backup(BackupArn=arns[0])["BackupDescription"]
    assert deleted["BackupDetails"]["BackupStatus"] == "DELETED"
    assert deleted["BackupDetails"]["BackupArn"] == arns[0]
    assert error(ddb.describe_backup, BackupArn=arns[0])[0] == "BackupNotFoundException"
    listed = [s["BackupArn"] for s in ddb.list_backups(TableName=source)["BackupSummaries"]]
    assert arns[1] in listed and arns[0] not in listed


def test_a_backup_outlives_its_table(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="backup-gone")
    written = fill(ddb, name, 5)
    arn = ddb.create_backup(TableName=name, BackupName="last")["BackupDetails"]["BackupArn"]
    available(ddb, arn)
    ddb.delete_table(TableName=name)
    wait_for(lambda: name not in ddb.list_tables()["TableNames"], f"{name} deleted")
    target = f"revived-{uuid.uuid4().hex[:8]}"
    ddb.restore_table_from_backup(TargetTableName=target, BackupArn=arn)
    restored(ddb, target)
    assert items_of(ddb, target) == written


def test_a_backup_and_a_restore_consume_none_of_a_tables_throughput(ddb: Any) -> None:
    # The restored table takes one write unit a second: its 400 items of 1 KB would take
    # minutes at that rate, past the 300 units of savings a new table starts with.
    name = create_table(
        ddb,
        [("pk", "S")],
        prefix="backup-slow",
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1000},
    )
    put_all(ddb, name, [{"pk": {"S": f"k-{i}"}, "pad": {"S": "x" * 1000}} for i in range(400)])
    arn = ddb.create_backup(TableName=name, BackupName="slow")["BackupDetails"]["BackupArn"]
    assert available(ddb, arn)["SourceTableDetails"]["ItemCount"] == 400
    target = f"slow-copy-{uuid.uuid4().hex[:8]}"
    ddb.restore_table_from_backup(
        TargetTableName=target,
        BackupArn=arn,
        BillingModeOverride="PROVISIONED",
        ProvisionedThroughputOverride={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    )
    table = restored(ddb, target)
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 1
    assert ddb.scan(TableName=target, Select="COUNT")["Count"] == 400


def put_all(ddb: Any, name: str, items: list[dict[str, Any]]) -> None:
    """Puts through BatchWriteItem, retrying what comes back unprocessed or throttled."""
    requests = [{"PutRequest": {"Item": item}} for item in items]
    deadline = time.monotonic() + 600
    while requests:
        chunk, requests = requests[:25], requests[25:]
        try:
            left = ddb.batch_write_item(RequestItems={name: chunk}).get("UnprocessedItems", {})
            requests = left.get(name, []) + requests
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ProvisionedThroughputExceededException":
                raise
            requests = chunk + requests
        if requests:
            assert time.monotonic() < deadline, "the table never took its items"
            time.sleep(0.2)


@pytest.mark.partita_only
def test_a_small_tables_backup_holds_it_as_it_was_when_asked(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="backup-when")
    before = fill(ddb, name, 10)
    arn = ddb.create_backup(TableName=name, BackupName="now")["BackupDetails"]["BackupArn"]
    fill(ddb, name, 5, prefix="after")  # written once the backup answered
    ddb.delete_item(TableName=name, Key={"pk": {"S": "item-0"}})
    available(ddb, arn)
    target = f"when-{uuid.uuid4().hex[:8]}"
    ddb.restore_table_from_backup(TargetTableName=target, BackupArn=arn)
    restored(ddb, target)
    assert items_of(ddb, target) == before


@pytest.mark.partita_only
def test_a_backups_own_table_is_no_clients(ddb: Any, source: str) -> None:
    arn = ddb.create_backup(TableName=source, BackupName="hidden")["BackupDetails"]["BackupArn"]
    available(ddb, arn)
    hidden = ".partita-backup-" + arn.rsplit("/", 1)[1]
    assert hidden not in ddb.list_tables()["TableNames"]
    assert error(ddb.describe_table, TableName=hidden)[0] == "ResourceNotFoundException"
    assert error(ddb.scan, TableName=hidden)[0] == "ResourceNotFoundException"
    assert error(ddb.delete_table, TableName=hidden)[0] == "ResourceNotFoundException"
