"""UpdateTable's GlobalSecondaryIndexUpdates: adding a global index to a table holding
items, updating its throughput, deleting it; and the refusals of each.

Written to pass against DynamoDB too (README.md here): there an index added to a table
takes minutes to build (CREATING, then ACTIVE), a deleted one seconds to go, and an
index is read eventually consistently, so the tests wait for DescribeTable to show the
index ACTIVE (or gone) as SDK waiters do, with DynamoDB's patience, and retry a read
that should see a write just made. In Partita the index is ACTIVE, or gone, at the next
DescribeTable. The error texts are DynamoDB's: sources in
tests/unit/api/test_update_table_indexes.py and api/operations/update_table.py.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, error, validation
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK

INDEX_BUILD_SECONDS = 1800  # DynamoDB took 8-17 minutes to build an index on a small table
INDEX_DELETE_SECONDS = 120
ONE_UNIT = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}


def _table(ddb: Any, *, provisioned: bool = False, indexes: list[dict[str, Any]] | None = None) -> str:
    """A pk (S) table; with `indexes` (keyed on `colour`, S) given to CreateTable."""
    name = f"compat-uti-{uuid.uuid4().hex[:10]}"
    definitions = [{"AttributeName": "pk", "AttributeType": "S"}]
    kwargs: dict[str, Any] = {"BillingMode": "PAY_PER_REQUEST"}
    if provisioned:
        kwargs = {"BillingMode": "PROVISIONED", "ProvisionedThroughput": ONE_UNIT}
    if indexes:
        definitions.append({"AttributeName": "colour", "AttributeType": "S"})
        kwargs["GlobalSecondaryIndexes"] = indexes
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=definitions,
        **kwargs,
    )
    wait_active(ddb, name, timeout=120)
    return name


def _by_colour(**extra: Any) -> dict[str, Any]:
    return {
        "IndexName": "by_colour",
        "KeySchema": [{"AttributeName": "colour", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
        **extra,
    }


def _create_by_colour(ddb: Any, table: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = ddb.update_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "colour", "AttributeType": "S"}],
        GlobalSecondaryIndexUpdates=[{"Create": _by_colour(**extra)}],
    )
    return out["TableDescription"]


def _index(description: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((i for i in description.get("GlobalSecondaryIndexes", []) if i["IndexName"] == name), None)


def _wait_until(
    ddb: Any, table: str, done: Callable[[dict[str, Any]], bool], timeout: float
) -> dict[str, Any]:
    """DescribeTable until the table is ACTIVE and `done`: often at first, then every
    few seconds (as SDK waiters poll DynamoDB's minutes-long index builds)."""
    start = time.monotonic()
    while True:
        described: dict[str, Any] = ddb.describe_table(TableName=table)["Table"]
        if described["TableStatus"] == "ACTIVE" and done(described):
            return described
        waited = time.monotonic() - start
        assert waited < timeout, f"{table} did not settle: {described}"
        time.sleep(0.1 if waited < 5 else 5)


def _wait_index_active(ddb: Any, table: str, name: str) -> dict[str, Any]:
    def active(described: dict[str, Any]) -> bool:
        index = _index(described, name)
        return index is not None and index["IndexStatus"] == "ACTIVE"

    return _wait_until(ddb, table, active, INDEX_BUILD_SECONDS)


def _wait_index_gone(ddb: Any, table: str, name: str) -> dict[str, Any]:
    return _wait_until(ddb, table, lambda d: _index(d, name) is None, INDEX_DELETE_SECONDS)


def _query_colour(ddb: Any, table: str, colour: str) -> list[str]:
    out = ddb.query(
        TableName=table,
        IndexName="by_colour",
        KeyConditionExpression="colour = :c",
        ExpressionAttributeValues={":c": {"S": colour}},
    )
    return sorted(item["pk"]["S"] for item in out["Items"])


def _eventually(read: Callable[[], Any], expected: Any, attempts: int = 20) -> None:
    """`read()` until it returns `expected` (an index is read eventually consistently)."""
    got = read()
    for _ in range(attempts):
        if got == expected:
            return
        time.sleep(0.5)
        got = read()
    assert got == expected


# --- functionality ---------------------------------------------------------------------------


def test_an_index_added_to_a_table_holding_items_serves_them_and_later_ones(ddb: Any) -> None:
    table = _table(ddb)
    for pk, colour in [("red-1", {"S": "red"}), ("red-2", {"S": "red"}), ("blue-1", {"S": "blue"})]:
        ddb.put_item(TableName=table, Item={"pk": {"S": pk}, "colour": colour})
    ddb.put_item(TableName=table, Item={"pk": {"S": "colourless"}})
    # Of another type than the index's key: allowed before the index, and left out of it.
    ddb.put_item(TableName=table, Item={"pk": {"S": "numbered"}, "colour": {"N": "7"}})

    answered = _create_by_colour(ddb, table)
    index = _index(answered, "by_colour")
    assert index is not None and index["IndexStatus"] == "CREATING"
    assert index["KeySchema"] == [{"AttributeName": "colour", "KeyType": "HASH"}]
    assert {"AttributeName": "colour", "AttributeType": "S"} in answered["AttributeDefinitions"]

    described = _wait_index_active(ddb, table, "by_colour")
    assert _index(described, "by_colour") is not None
    assert _query_colour(ddb, table, "red") == ["red-1", "red-2"]
    scanned = ddb.scan(TableName=table, IndexName="by_colour")["Items"]
    assert sorted(item["pk"]["S"] for item in scanned) == ["blue-1", "red-1", "red-2"]

    ddb.put_item(TableName=table, Item={"pk": {"S": "red-3"}, "colour": {"S": "red"}})
    _eventually(lambda: _query_colour(ddb, table, "red"), ["red-1", "red-2", "red-3"])
    # Now that the index exists, its key attribute must have its type.
    message = validation(ddb.put_item, TableName=table, Item={"pk": {"S": "n2"}, "colour": {"N": "8"}})
    assert message == (
        "One or more parameter values were invalid: Type mismatch for Index Key colour Expected: S Actual: N "
        "IndexName: by_colour"
    )


def test_an_index_throughput_update_on_a_provisioned_table(ddb: Any) -> None:
    table = _table(ddb, provisioned=True)
    created = _index(_create_by_colour(ddb, table, ProvisionedThroughput=ONE_UNIT), "by_colour")
    assert created is not None and created["ProvisionedThroughput"]["ReadCapacityUnits"] == 1
    _wait_index_active(ddb, table, "by_colour")

    out = ddb.update_table(
        TableName=table,
        GlobalSecondaryIndexUpdates=[
            {
                "Update": {
                    "IndexName": "by_colour",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3},
                }
            }
        ],
    )
    # As DynamoDB's answer: the index UPDATING with its old throughput, the table ACTIVE.
    index = _index(out["TableDescription"], "by_colour")
    assert index is not None and index["IndexStatus"] == "UPDATING"
    assert (index["ProvisionedThroughput"]["ReadCapacityUnits"], out["TableDescription"]["TableStatus"]) == (
        1,
        "ACTIVE",
    )
    described = _wait_index_active(ddb, table, "by_colour")
    updated = _index(described, "by_colour")
    assert updated is not None
    assert (
        updated["ProvisionedThroughput"]["ReadCapacityUnits"],
        updated["ProvisionedThroughput"]["WriteCapacityUnits"],
    ) == (2, 3)
    # The table's own throughput is untouched.
    assert described["ProvisionedThroughput"]["ReadCapacityUnits"] == 1

    message = validation(
        ddb.update_table,
        TableName=table,
        GlobalSecondaryIndexUpdates=[
            {
                "Update": {
                    "IndexName": "by_colour",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3},
                }
            }
        ],
    )
    assert message.startswith(
        "The provisioned throughput for the index by_colour will not change. The requested value equals the "
        "current value. Current ReadCapacityUnits provisioned for index by_colour: 2. Requested "
        "ReadCapacityUnits: 2. Current WriteCapacityUnits"
    )


def test_a_deleted_index_is_gone_with_the_definition_only_it_used(ddb: Any) -> None:
    table = _table(ddb, indexes=[_by_colour()])
    _wait_index_active(ddb, table, "by_colour")
    ddb.put_item(TableName=table, Item={"pk": {"S": "red-1"}, "colour": {"S": "red"}})
    _eventually(lambda: _query_colour(ddb, table, "red"), ["red-1"])

    out = ddb.update_table(
        TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "by_colour"}}]
    )
    index = _index(out["TableDescription"], "by_colour")
    assert index is not None and index["IndexStatus"] == "DELETING"

    described = _wait_index_gone(ddb, table, "by_colour")
    assert described["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
    message = validation(
        ddb.query,
        TableName=table,
        IndexName="by_colour",
        KeyConditionExpression="colour = :c",
        ExpressionAttributeValues={":c": {"S": "red"}},
    )
    assert message == "The table does not have the specified index: by_colour"
    # No index holds colour to a type any more.
    ddb.put_item(TableName=table, Item={"pk": {"S": "n"}, "colour": {"N": "7"}})
    # And it is not there to delete again (Alternator's test_gsi_delete_with_lsi).
    code, _ = error(
        ddb.update_table,
        TableName=table,
        GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "by_colour"}}],
    )
    assert code == "ResourceNotFoundException"


def test_an_index_deleted_can_be_created_again(ddb: Any) -> None:
    # Alternator's test_gsi_creates_and_deletes: re-adding an index under its old name.
    table = _table(ddb, indexes=[_by_colour()])
    _wait_index_active(ddb, table, "by_colour")
    ddb.put_item(TableName=table, Item={"pk": {"S": "red-1"}, "colour": {"S": "red"}})
    ddb.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "by_colour"}}])
    _wait_index_gone(ddb, table, "by_colour")
    _create_by_colour(ddb, table)
    _wait_index_active(ddb, table, "by_colour")
    assert _query_colour(ddb, table, "red") == ["red-1"]


# --- validation --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(ddb: Any) -> str:
    """An on-demand table with the global index `by_colour`, ACTIVE."""
    table = _table(ddb, indexes=[_by_colour()])
    _wait_index_active(ddb, table, "by_colour")
    return table


def test_a_name_an_index_already_has_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=indexed,
        AttributeDefinitions=[{"AttributeName": "size", "AttributeType": "N"}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "by_colour",
                    "KeySchema": [{"AttributeName": "size", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            }
        ],
    )
    assert message == "Attempting to create an index which already exists"


def test_a_create_needs_attribute_definitions(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=indexed,
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "by_size",
                    "KeySchema": [{"AttributeName": "size", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            }
        ],
    )
    assert (
        message
        == "One or more parameter values were invalid: AttributeDefinitions is not specified for index: by_size"
    )


def test_a_key_attribute_may_not_be_redefined(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=indexed,
        AttributeDefinitions=[{"AttributeName": "colour", "AttributeType": "N"}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "by_colour_number",
                    "KeySchema": [{"AttributeName": "colour", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            }
        ],
    )
    assert message == (
        "One or more parameter values were invalid: Attributes cannot be redefined. Please check that your "
        "attribute has the same type as previously defined. Existing schema: Schema:[SchemaElement: "
        "key{colour:S:HASH}] New schema: Schema:[SchemaElement: key{colour:N:HASH}]"
    )


def test_an_on_demand_tables_new_index_may_not_have_throughput(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=indexed,
        AttributeDefinitions=[{"AttributeName": "size", "AttributeType": "N"}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "by_size",
                    "KeySchema": [{"AttributeName": "size", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                    "ProvisionedThroughput": ONE_UNIT,
                }
            }
        ],
    )
    assert message == (
        "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be "
        "specified for index: by_size when BillingMode is PAY_PER_REQUEST"
    )


def test_an_on_demand_tables_index_takes_no_throughput_update(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=indexed,
        GlobalSecondaryIndexUpdates=[
            {"Update": {"IndexName": "by_colour", "ProvisionedThroughput": ONE_UNIT}}
        ],
    )
    assert message == (
        "One or more parameter values were invalid: The only Updates for index: by_colour when "
        "TableThroughputMode is PAY_PER_REQUEST can be to OnDemandThroughput, WarmThroughput"
    )


def test_one_index_named_twice_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table,
        TableName=indexed,
        GlobalSecondaryIndexUpdates=[
            {"Delete": {"IndexName": "by_colour"}},
            {"Delete": {"IndexName": "by_colour"}},
        ],
    )
    assert message == (
        "One or more parameter values were invalid: Only one global secondary index update per index is allowed "
        "simultaneously. Index: by_colour"
    )


def test_two_creates_or_deletes_in_one_request_are_a_limit_exceeded(ddb: Any, indexed: str) -> None:
    code, message = error(
        ddb.update_table,
        TableName=indexed,
        AttributeDefinitions=[{"AttributeName": "size", "AttributeType": "N"}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "by_size",
                    "KeySchema": [{"AttributeName": "size", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            },
            {"Delete": {"IndexName": "by_colour"}},
        ],
    )
    assert (code, message) == (
        "LimitExceededException",
        "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table",
    )


def test_an_empty_list_with_another_change_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.update_table, TableName=indexed, GlobalSecondaryIndexUpdates=[], DeletionProtectionEnabled=False
    )
    assert (
        message == "One or more parameter values were invalid: List of GlobalSecondaryIndexUpdates is empty"
    )
