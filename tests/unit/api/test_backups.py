"""Backups and restores, their pure parts: names, what a backup's table and a restored
table are made of, ListBackups' filters and pages, RestoreTableFromBackup's overrides."""

from __future__ import annotations

import dataclasses

import pytest

from partita.api.operations import backups
from partita.common.errors import DynamoError
from partita.control.model import (
    BackupInfo,
    KeyElement,
    ResourcePolicy,
    SecondaryIndex,
    StreamSpec,
    TableSpec,
    TimeToLive,
)

TABLE_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"
SOURCE = TableSpec(
    name="Orders",
    table_id=11,
    partition_key=KeyElement("pk", "S"),
    sort_key=KeyElement("sk", "N"),
    attribute_definitions=(("pk", "S"), ("sk", "N"), ("g", "S"), ("l", "N")),
    billing_mode="PROVISIONED",
    read_capacity=7,
    write_capacity=3,
    created_at=1.5,
    tags=(("team", "a"),),
    time_to_live=TimeToLive("ENABLED", "expires", 1.0),
    stream=StreamSpec(enabled=True, view_type="KEYS_ONLY", created_at=2.0),
    policies=(ResourcePolicy("", "{}", "1"),),
    deletion_protection=True,
    indexes=(
        SecondaryIndex("by-g", "GLOBAL", KeyElement("g", "S"), None, read_capacity=2, write_capacity=2),
        SecondaryIndex("by-l", "LOCAL", KeyElement("pk", "S"), KeyElement("l", "N")),
    ),
)


def info(now: float = 1_800_000_000.123, name: str = "nightly") -> BackupInfo:
    return backups.backup_info(SOURCE, TABLE_ARN, name, "router-1", now, 30.0)


def test_a_backup_is_named_as_dynamodb_names_it_and_its_table_follows_from_its_arn() -> None:
    made = info()
    backup_id = made.arn.rsplit("/", 1)[1]
    assert made.arn == f"{TABLE_ARN}/backup/{backup_id}"
    assert backup_id.startswith("01800000000123-") and len(backup_id) == 23  # as moto records them
    assert backups.hidden_table_of(made.arn) == backups.hidden_table_name(made.backup_id)
    assert backups.hidden_table_of(TABLE_ARN) is None
    assert backups.hidden_table_of(made.arn + "x") is None
    assert info().arn != made.arn  # two backups in one millisecond still differ


def test_a_backups_table_keeps_the_keys_alone_and_nothing_that_acts_on_items() -> None:
    made = info()
    hidden = backups.hidden_spec(SOURCE, made, 5.0)
    assert hidden.name == backups.hidden_table_name(made.backup_id)
    assert (hidden.partition_key, hidden.sort_key) == (SOURCE.partition_key, SOURCE.sort_key)
    assert hidden.attribute_definitions == (("pk", "S"), ("sk", "N"))
    assert hidden.billing_mode == "PAY_PER_REQUEST"
    assert not (hidden.indexes or hidden.stream.exists or hidden.time_to_live.active or hidden.tags)
    assert hidden.backup == made and hidden.table_id != SOURCE.table_id
    assert TableSpec.from_json(made.source) == SOURCE


def restore(**body: object) -> backups.RestoreRequest:
    return backups.validate_restore({"TargetTableName": "Copy", "BackupArn": info().arn, **body})


def test_a_restored_table_takes_the_sources_keys_throughput_and_indexes_but_not_its_settings() -> None:
    backup = backups.hidden_spec(SOURCE, dataclasses.replace(info(), status="AVAILABLE"), 5.0)
    spec = backups.restored_spec(restore(), backup, "router-1", 9.0, 30.0)
    assert (spec.name, spec.billing_mode, spec.read_capacity, spec.write_capacity) == (
        "Copy",
        "PROVISIONED",
        7,
        3,
    )
    assert [i.name for i in spec.indexes] == ["by-g", "by-l"]
    assert spec.attribute_definitions == SOURCE.attribute_definitions
    assert not (
        spec.tags
        or spec.policies
        or spec.stream.exists
        or spec.time_to_live.active
        or spec.deletion_protection
    )
    assert spec.restore is not None and spec.restore.in_progress
    assert (spec.restore.source_table_arn, spec.restore.backup_table) == (TABLE_ARN, backup.name)
    assert spec.table_id not in (SOURCE.table_id, backup.table_id)


def test_restore_overrides_billing_and_leaves_out_indexes_not_named() -> None:
    backup = backups.hidden_spec(SOURCE, info(), 5.0)
    req = restore(BillingModeOverride="PAY_PER_REQUEST", GlobalSecondaryIndexOverride=[], LocalSecondaryIndexOverride=[
        {"IndexName": "by-l", "KeySchema": [], "Projection": {}}
    ])  # fmt: skip
    spec = backups.restored_spec(req, backup, "router-1", 9.0, 30.0)
    assert (spec.billing_mode, spec.read_capacity, spec.write_capacity) == ("PAY_PER_REQUEST", 0, 0)
    assert [i.name for i in spec.indexes] == ["by-l"]
    assert spec.attribute_definitions == (("pk", "S"), ("sk", "N"), ("l", "N"))  # g went with its index
    provisioned = restore(
        BillingModeOverride="PROVISIONED",
        ProvisionedThroughputOverride={"ReadCapacityUnits": 1, "WriteCapacityUnits": 2},
    )
    spec = backups.restored_spec(provisioned, backup, "router-1", 9.0, 30.0)
    assert (spec.read_capacity, spec.write_capacity) == (1, 2)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"BillingModeOverride": "PROVISIONED"},
            "One or more parameter values were invalid: ProvisionedThroughputOverride must be specified when "
            "BillingModeOverride is PROVISIONED",
        ),
        (
            {"SSESpecificationOverride": {"Enabled": True}},
            "Partita does not support restoring a table with SSESpecificationOverride yet",
        ),
    ],
)
def test_restore_refuses_what_it_cannot_do(body: dict[str, object], message: str) -> None:
    with pytest.raises(DynamoError) as exc:
        restore(**body)
    assert (exc.value.code, exc.value.message) == ("ValidationException", message)


def listing(**body: object) -> backups.ListRequest:
    return backups.validate_list(body)


def test_list_backups_filters_by_table_and_time_and_pages_oldest_first() -> None:
    made = [dataclasses.replace(info(now=t), created_at=t) for t in (10.0, 20.0, 30.0)]
    other = dataclasses.replace(
        info(now=15.0),
        created_at=15.0,
        source_arn=TABLE_ARN + "2",
        source={**SOURCE.to_json(), "name": "Orders2"},
    )
    everything = [*made, other]
    page, last = backups.listed(everything, listing())
    assert [b.created_at for b in page] == [10.0, 15.0, 20.0, 30.0] and last is None
    page, _ = backups.listed(everything, listing(TableName="Orders"))
    assert page == made
    page, _ = backups.listed(everything, listing(TimeRangeLowerBound=15, TimeRangeUpperBound=30))
    assert [b.created_at for b in page] == [15.0, 20.0]  # lower bound in, upper out
    first, last = backups.listed(everything, listing(Limit=2))
    assert [b.created_at for b in first] == [10.0, 15.0] and last == first[-1].arn
    rest, last = backups.listed(everything, listing(Limit=2, ExclusiveStartBackupArn=last))
    assert [b.created_at for b in rest] == [20.0, 30.0] and last is None
    assert backups.listed(everything, listing(BackupType="SYSTEM")) == ([], None)
    assert len(backups.listed(everything, listing(BackupType="ALL"))[0]) == 4


def test_an_on_demand_maximum_is_kept_on_demand_and_overridden_as_asked() -> None:
    capped = dataclasses.replace(SOURCE, billing_mode="PAY_PER_REQUEST", on_demand_max=(50, 20))
    backup = backups.hidden_spec(capped, dataclasses.replace(info(), source=capped.to_json()), 5.0)
    assert backups.restored_spec(restore(), backup, "router-1", 9.0, 30.0).on_demand_max == (50, 20)
    override = restore(OnDemandThroughputOverride={"MaxWriteRequestUnits": 9})
    assert backups.restored_spec(override, backup, "router-1", 9.0, 30.0).on_demand_max == (0, 9)
    provisioned = restore(
        BillingModeOverride="PROVISIONED",
        ProvisionedThroughputOverride={"ReadCapacityUnits": 1, "WriteCapacityUnits": 2},
    )
    assert backups.restored_spec(provisioned, backup, "router-1", 9.0, 30.0).on_demand_max == (0, 0)
    refused = restore(
        BillingModeOverride="PROVISIONED",
        ProvisionedThroughputOverride={"ReadCapacityUnits": 1, "WriteCapacityUnits": 2},
        OnDemandThroughputOverride={"MaxReadRequestUnits": 5},
    )
    with pytest.raises(DynamoError) as caught:  # DynamoDB's rule: on-demand billing only
        backups.restored_spec(refused, backup, "router-1", 9.0, 30.0)
    assert caught.value.code == "ValidationException"
