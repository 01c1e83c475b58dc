"""What a write costs a table's secondary indexes, in its ConsumedCapacity.

A write to a table with indexes costs each index the entries it puts or deletes, on top
of the table's own units, and ReturnConsumedCapacity INDEXES says which index took what.
The scenario is Alternator's DynamoDB-verified test_return_consumed_capacity_indexes_with_indexes:
a global and a local index, both keyed on `x`, both projecting everything.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK


@pytest.fixture(scope="module")
def table(ddb: Any) -> str:
    name = f"compat-{uuid.uuid4().hex[:10]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "c", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "p", "AttributeType": "S"},
            {"AttributeName": "c", "AttributeType": "S"},
            {"AttributeName": "x", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "gsi",
                "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        LocalSecondaryIndexes=[
            {
                "IndexName": "lsi",
                "KeySchema": [
                    {"AttributeName": "p", "KeyType": "HASH"},
                    {"AttributeName": "x", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    wait_active(ddb, name, timeout=30)
    return name


def _key() -> dict[str, Any]:
    return {"p": {"S": uuid.uuid4().hex}, "c": {"S": "c"}}


def _parts(consumed: dict[str, Any]) -> tuple[float, float, float, float]:
    """(total, table, global index, local index) units."""
    return (
        consumed["CapacityUnits"],
        consumed["Table"]["CapacityUnits"],
        consumed.get("GlobalSecondaryIndexes", {}).get("gsi", {}).get("CapacityUnits", 0.0),
        consumed.get("LocalSecondaryIndexes", {}).get("lsi", {}).get("CapacityUnits", 0.0),
    )


def test_putting_an_indexed_item_costs_both_indexes_an_entry(ddb: Any, table: str) -> None:
    item = {**_key(), "x": {"S": "v"}}
    out = ddb.put_item(TableName=table, Item=item, ReturnConsumedCapacity="INDEXES")
    assert _parts(out["ConsumedCapacity"]) == (3.0, 1.0, 1.0, 1.0)
    total = ddb.put_item(TableName=table, Item={**_key(), "x": {"S": "v"}}, ReturnConsumedCapacity="TOTAL")
    assert total["ConsumedCapacity"] == {"TableName": table, "CapacityUnits": 3.0}


def test_updating_a_projected_attribute_and_deleting_cost_the_indexes_too(ddb: Any, table: str) -> None:
    key = _key()
    ddb.put_item(TableName=table, Item={**key, "x": {"S": "v"}})
    out = ddb.update_item(
        TableName=table, Key=key, UpdateExpression="SET a = :v", ExpressionAttributeValues={":v": {"S": "hi"}},
        ReturnConsumedCapacity="INDEXES",
    )  # fmt: skip
    assert _parts(out["ConsumedCapacity"]) == (3.0, 1.0, 1.0, 1.0)
    out = ddb.update_item(
        TableName=table, Key=key, UpdateExpression="SET x = :v", ExpressionAttributeValues={":v": {"S": "w"}},
        ReturnConsumedCapacity="INDEXES",
    )  # fmt: skip
    assert _parts(out["ConsumedCapacity"]) == (5.0, 1.0, 2.0, 2.0)  # each entry deleted and put again
    out = ddb.delete_item(TableName=table, Key=key, ReturnConsumedCapacity="INDEXES")
    assert _parts(out["ConsumedCapacity"]) == (3.0, 1.0, 1.0, 1.0)


def test_an_item_outside_the_indexes_costs_them_only_to_leave(ddb: Any, table: str) -> None:
    key = _key()
    ddb.put_item(TableName=table, Item={**key, "x": {"S": "v"}})
    # The new item lacks x: its old entries are deleted.
    out = ddb.put_item(TableName=table, Item=key, ReturnConsumedCapacity="INDEXES")
    assert _parts(out["ConsumedCapacity"]) == (3.0, 1.0, 1.0, 1.0)
    # Neither the old item nor the new one has x: no index is written.
    out = ddb.put_item(
        TableName=table, Item={**key, "animal": {"S": "dog"}}, ReturnConsumedCapacity="INDEXES"
    )
    assert out["ConsumedCapacity"] == {
        "TableName": table,
        "CapacityUnits": 1.0,
        "Table": {"CapacityUnits": 1.0},
    }


def test_a_batch_write_sums_each_indexes_units(ddb: Any, table: str) -> None:
    puts = [{"PutRequest": {"Item": {**_key(), "x": {"S": "v"}}}} for _ in range(3)]
    out = ddb.batch_write_item(RequestItems={table: puts}, ReturnConsumedCapacity="INDEXES")
    assert [_parts(c) for c in out["ConsumedCapacity"]] == [(9.0, 3.0, 3.0, 3.0)]


def test_a_transaction_costs_each_index_twice_its_entries(ddb: Any, table: str) -> None:
    out = ddb.transact_write_items(
        TransactItems=[{"Put": {"TableName": table, "Item": {**_key(), "x": {"S": "v"}}}}],
        ReturnConsumedCapacity="INDEXES",
    )
    (consumed,) = out["ConsumedCapacity"]
    assert _parts(consumed) == (6.0, 2.0, 2.0, 2.0)
    assert consumed["GlobalSecondaryIndexes"]["gsi"]["WriteCapacityUnits"] == 2.0
