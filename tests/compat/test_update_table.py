"""UpdateTable: serialization, validation, functionality (billing mode, throughput)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table, error, error_type, raw_call, validation
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK


def _provisioned(ddb: Any, rcu: int = 5, wcu: int = 5) -> str:
    return create_table(
        ddb, [("pk", "S")], prefix="ut", BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": rcu, "WriteCapacityUnits": wcu},
    )  # fmt: skip


# --- serialization ------------------------------------------------------------------------


def test_throughput_that_is_not_a_structure_is_a_serialization_exception(cluster: Any, table_s: str) -> None:
    body = {"TableName": table_s, "ProvisionedThroughput": 5}
    status, out = raw_call(cluster, "UpdateTable", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_an_update_must_change_something(ddb: Any, table_s: str) -> None:
    assert validation(ddb.update_table, TableName=table_s) == (
        "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or "
        "SSESpecification or ReplicaUpdates is required"
    )


def test_provisioned_mode_needs_throughput(ddb: Any, table_s: str) -> None:
    assert validation(ddb.update_table, TableName=table_s, BillingMode="PROVISIONED") == (
        "One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is "
        "PROVISIONED"
    )


def test_throughput_on_an_on_demand_table_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=table_s,
        ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    )
    assert message == (
        "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be "
        "specified when BillingMode is PAY_PER_REQUEST"
    )


def test_unchanged_throughput_is_refused(ddb: Any) -> None:
    name = _provisioned(ddb, 3, 4)
    message = validation(
        ddb.update_table,
        TableName=name,
        ProvisionedThroughput={"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
    )
    assert message == (
        "The provisioned throughput for the table will not change. The requested value equals the current value. "
        "Current ReadCapacityUnits provisioned for the table: 3. Requested ReadCapacityUnits: 3. Current "
        "WriteCapacityUnits provisioned for the table: 4. Requested WriteCapacityUnits: 4. Refer to the Amazon "
        "DynamoDB Developer Guide for current limits and how to request higher limits."
    )


def test_throughput_above_the_table_limit_is_a_limit_exceeded(ddb: Any, table_s: str) -> None:
    code, message = error(
        ddb.update_table, TableName=table_s, BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 40_001, "WriteCapacityUnits": 1},
    )  # fmt: skip
    assert code == "LimitExceededException"
    assert "40000" in message


def test_a_missing_table_is_resource_not_found(ddb: Any) -> None:
    code, message = error(ddb.update_table, TableName="no-such-table", BillingMode="PAY_PER_REQUEST")
    assert (code, message) == (
        "ResourceNotFoundException",
        "Requested resource not found: Table: no-such-table not found",
    )


# --- functionality ---------------------------------------------------------------------------


def test_throughput_changes_are_recorded(ddb: Any) -> None:
    name = _provisioned(ddb)
    out = ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 7, "WriteCapacityUnits": 9}
    )
    # As DynamoDB: UPDATING while the change is applied, the answer still showing the
    # old throughput, then ACTIVE again with the new one.
    assert out["TableDescription"]["TableStatus"] == "UPDATING"
    assert out["TableDescription"]["ProvisionedThroughput"]["ReadCapacityUnits"] == 5
    described = wait_active(ddb, name, timeout=30)
    assert (described["ProvisionedThroughput"]["ReadCapacityUnits"],
            described["ProvisionedThroughput"]["WriteCapacityUnits"]) == (7, 9)  # fmt: skip


def test_increases_and_decreases_are_dated_and_the_days_decreases_counted(ddb: Any) -> None:
    # dynalite's DynamoDB-recorded "should triple rates and then reduce if requested".
    name = _provisioned(ddb)
    start = time.time()
    fresh = ddb.describe_table(TableName=name)["Table"]["ProvisionedThroughput"]
    assert "LastIncreaseDateTime" not in fresh and fresh["NumberOfDecreasesToday"] == 0
    up = ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 15, "WriteCapacityUnits": 15}
    )
    raised = up["TableDescription"]["ProvisionedThroughput"]
    assert raised["LastIncreaseDateTime"].timestamp() >= start - 5
    assert (raised["ReadCapacityUnits"], raised["NumberOfDecreasesToday"]) == (5, 0)
    increased_at = wait_active(ddb, name, timeout=30)["ProvisionedThroughput"]["LastIncreaseDateTime"]
    down = ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    )
    lowered = down["TableDescription"]["ProvisionedThroughput"]
    assert lowered["LastIncreaseDateTime"] == increased_at
    assert lowered["LastDecreaseDateTime"].timestamp() >= start - 5
    assert (lowered["ReadCapacityUnits"], lowered["NumberOfDecreasesToday"]) == (15, 0)
    after = wait_active(ddb, name, timeout=30)["ProvisionedThroughput"]
    assert (after["ReadCapacityUnits"], after["NumberOfDecreasesToday"]) == (5, 1)
    assert after["LastDecreaseDateTime"] == lowered["LastDecreaseDateTime"]


def test_switching_billing_modes_both_ways(ddb: Any) -> None:
    name = _provisioned(ddb)
    ddb.update_table(TableName=name, BillingMode="PAY_PER_REQUEST")
    described = wait_active(ddb, name, timeout=30)  # DynamoDB refuses a change while UPDATING
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert described["ProvisionedThroughput"]["ReadCapacityUnits"] == 0
    # Dated when the table became on-demand, not when it was created.
    assert (
        described["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"] > described["CreationDateTime"]
    )
    ddb.update_table(
        TableName=name, BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 2, "WriteCapacityUnits": 3},
    )  # fmt: skip
    described = ddb.describe_table(TableName=name)["Table"]
    assert (
        "BillingModeSummary" not in described
        or described["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
    )
    assert described["ProvisionedThroughput"]["WriteCapacityUnits"] == 3


def test_items_survive_a_table_update(ddb: Any) -> None:
    name = _provisioned(ddb)
    ddb.put_item(TableName=name, Item={"pk": {"S": "kept"}})
    ddb.update_table(TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 6, "WriteCapacityUnits": 6})
    assert ddb.get_item(TableName=name, Key={"pk": {"S": "kept"}})["Item"] == {"pk": {"S": "kept"}}


@pytest.mark.parametrize("member", ["ReadCapacityUnits", "WriteCapacityUnits"])
def test_capacity_beyond_a_trillion_units_is_out_of_bounds_not_over_a_limit(
    ddb: Any, table_s: str, member: str
) -> None:
    throughput = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1, member: 1_000_000_000_001}
    message = validation(
        ddb.update_table, TableName=table_s, BillingMode="PROVISIONED", ProvisionedThroughput=throughput
    )
    assert message == f"Given value 1000000000001 for {member} is out of bounds"


def test_an_index_the_table_lacks_is_not_found(ddb: Any, table_s: str) -> None:
    code, _ = error(
        ddb.update_table,
        TableName=table_s,
        GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "doesNotExist"}}],
    )
    assert code == "ResourceNotFoundException"


# --- OnDemandThroughput, as nubo-db's dynoxide captured DynamoDB's answers (eu-west-2) ---


def test_an_on_demand_maximum_is_described_merged_and_removed_member_by_member(ddb: Any) -> None:
    name = create_table(
        ddb,
        [("pk", "S")],
        prefix="odt",
        OnDemandThroughput={"MaxReadRequestUnits": 50, "MaxWriteRequestUnits": 20},
    )
    assert ddb.describe_table(TableName=name)["Table"]["OnDemandThroughput"] == {
        "MaxReadRequestUnits": 50,
        "MaxWriteRequestUnits": 20,
    }
    updated = ddb.update_table(TableName=name, OnDemandThroughput={"MaxReadRequestUnits": -1})
    # The answer echoes the merge, the removal as sent; the table then shows what is left.
    assert updated["TableDescription"]["OnDemandThroughput"] == {
        "MaxReadRequestUnits": -1,
        "MaxWriteRequestUnits": 20,
    }
    wait_active(ddb, name, timeout=30)
    assert ddb.describe_table(TableName=name)["Table"]["OnDemandThroughput"] == {"MaxWriteRequestUnits": 20}
    # Switching to provisioned billing drops it.
    ddb.update_table(
        TableName=name,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )
    wait_active(ddb, name, timeout=60)
    assert "OnDemandThroughput" not in ddb.describe_table(TableName=name)["Table"]


def test_an_on_demand_maximum_is_refused_with_provisioned_billing_or_out_of_range(
    ddb: Any, table_s: str
) -> None:
    invalid = "One or more parameter values were invalid: "
    assert error(
        ddb.create_table,
        TableName="odt-refused",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
        OnDemandThroughput={"MaxWriteRequestUnits": 5},
    ) == (
        "ValidationException",
        invalid
        + "MaxWriteRequestUnits for OnDemandThroughput cannot be specified when table BillingMode is PROVISIONED.",
    )
    assert error(ddb.update_table, TableName=table_s, OnDemandThroughput={"MaxReadRequestUnits": 0}) == (
        "ValidationException",
        invalid + "Requested MaxReadRequestUnits for OnDemandThroughput for table is outside of valid range",
    )
