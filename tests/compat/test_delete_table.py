"""DeleteTable: DynamoDB's reduced description of a DELETING table, and a local table
gone by the time a waiter asks."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table, error_type, raw_call, validation
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK


def test_the_answer_describes_the_deleting_table_without_its_schema(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S"), ("sk", "N")])
    described = ddb.describe_table(TableName=name)["Table"]
    deleted = ddb.delete_table(TableName=name)["TableDescription"]
    assert deleted["TableStatus"] == "DELETING"
    assert deleted["TableName"] == name
    assert deleted["TableArn"] == described["TableArn"]
    assert deleted["TableId"] == described["TableId"]
    assert {"ItemCount", "TableSizeBytes", "ProvisionedThroughput"} <= set(deleted)
    assert not {"KeySchema", "AttributeDefinitions", "CreationDateTime", "WarmThroughput"} & set(deleted)


def test_the_answer_of_a_table_with_indexes_leaves_them_out(ddb: Any) -> None:
    """DescribeTable describes the indexes; DeleteTable's answer does not (Alternator's
    test_delete_table_description_with_si, run against DynamoDB)."""
    name = f"compat-del-si-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "x")],
        GlobalSecondaryIndexes=[
            {"IndexName": "gsi", "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}],
             "Projection": {"ProjectionType": "ALL"}}
        ],
        LocalSecondaryIndexes=[
            {"IndexName": "lsi", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                             {"AttributeName": "x", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}}
        ],
    )  # fmt: skip
    wait_active(ddb, name)
    described = ddb.describe_table(TableName=name)["Table"]
    assert {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} <= set(described)
    deleted = ddb.delete_table(TableName=name)["TableDescription"]
    assert not {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} & set(deleted)


@pytest.mark.partita_only
def test_the_table_not_exists_waiter_succeeds_on_its_first_attempt(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")])
    ddb.put_item(TableName=name, Item={"pk": {"S": "x"}})
    ddb.delete_table(TableName=name)
    # MaxAttempts=1: a first DescribeTable still saying DELETING would fail the waiter.
    ddb.get_waiter("table_not_exists").wait(TableName=name, WaiterConfig={"MaxAttempts": 1})
    with pytest.raises(ddb.exceptions.ResourceNotFoundException):
        ddb.describe_table(TableName=name)


# --- deletion protection ------------------------------------------------------------------

PROTECTED = (
    "Resource cannot be deleted as it is currently protected against deletion. "
    "Disable deletion protection first."
)


def test_a_protected_table_is_not_deleted_until_its_protection_is_turned_off(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], DeletionProtectionEnabled=True)
    assert ddb.describe_table(TableName=name)["Table"]["DeletionProtectionEnabled"] is True
    ddb.put_item(TableName=name, Item={"pk": {"S": "kept"}})
    assert validation(ddb.delete_table, TableName=name) == PROTECTED
    # Refused whole: the table still serves its items.
    assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
    assert ddb.get_item(TableName=name, Key={"pk": {"S": "kept"}})["Item"] == {"pk": {"S": "kept"}}
    updated = ddb.update_table(TableName=name, DeletionProtectionEnabled=False)["TableDescription"]
    assert updated["DeletionProtectionEnabled"] is False
    assert ddb.delete_table(TableName=name)["TableDescription"]["TableStatus"] == "DELETING"


def test_protection_turned_on_by_update_table_holds_a_later_delete(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")])
    assert ddb.describe_table(TableName=name)["Table"]["DeletionProtectionEnabled"] is False
    answer = ddb.update_table(TableName=name, DeletionProtectionEnabled=True)["TableDescription"]
    assert answer["DeletionProtectionEnabled"] is True
    wait_active(ddb, name)
    assert ddb.describe_table(TableName=name)["Table"]["DeletionProtectionEnabled"] is True
    assert validation(ddb.delete_table, TableName=name) == PROTECTED
    ddb.update_table(TableName=name, DeletionProtectionEnabled=False)
    wait_active(ddb, name)
    ddb.delete_table(TableName=name)


def test_deletion_protection_alone_leaves_throughput_and_status_as_they_were(ddb: Any) -> None:
    name = create_table(
        ddb, [("pk", "S")], BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 7, "WriteCapacityUnits": 3},
    )  # fmt: skip
    answer = ddb.update_table(TableName=name, DeletionProtectionEnabled=True)["TableDescription"]
    throughput = answer["ProvisionedThroughput"]
    assert (throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"]) == (7, 3)
    wait_active(ddb, name)
    ddb.update_table(TableName=name, DeletionProtectionEnabled=False)
    wait_active(ddb, name)
    ddb.delete_table(TableName=name)


def test_deletion_protection_that_is_not_a_boolean_is_a_serialization_exception(
    cluster: Any, table_s: str
) -> None:
    body = {"TableName": table_s, "DeletionProtectionEnabled": "yes"}
    status, out = raw_call(cluster, "UpdateTable", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")
