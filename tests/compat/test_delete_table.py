"""DeleteTable: DynamoDB's reduced description of a DELETING table, and a local table
gone by the time a waiter asks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table

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
    assert not {"KeySchema", "AttributeDefinitions", "CreationDateTime"} & set(deleted)


@pytest.mark.partita_only
def test_the_table_not_exists_waiter_succeeds_on_its_first_attempt(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")])
    ddb.put_item(TableName=name, Item={"pk": {"S": "x"}})
    ddb.delete_table(TableName=name)
    # MaxAttempts=1: a first DescribeTable still saying DELETING would fail the waiter.
    ddb.get_waiter("table_not_exists").wait(TableName=name, WaiterConfig={"MaxAttempts": 1})
    with pytest.raises(ddb.exceptions.ResourceNotFoundException):
        ddb.describe_table(TableName=name)
