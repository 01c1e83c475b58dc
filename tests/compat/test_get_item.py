"""GetItem: serialization, validation, functionality (projection, consistency, capacity)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK

KB = 1024


# --- serialization ------------------------------------------------------------------------


def test_consistent_read_that_is_not_a_boolean_is_a_serialization_exception(
    cluster: Any, table_s: str
) -> None:
    body = {"TableName": table_s, "Key": {"pk": {"S": "x"}}, "ConsistentRead": "yes"}
    status, out = raw_call(cluster, "GetItem", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


def test_a_key_that_is_a_list_is_a_serialization_exception(cluster: Any, table_s: str) -> None:
    status, out = raw_call(cluster, "GetItem", json.dumps({"TableName": table_s, "Key": []}).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_a_missing_key_is_a_constraint_violation(cluster: Any, table_s: str) -> None:
    status, out = raw_call(cluster, "GetItem", json.dumps({"TableName": table_s}).encode())
    assert status == 400
    assert out["message"] == (
        "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null"
    )


def test_a_key_with_an_extra_attribute_does_not_match_the_schema(ddb: Any, table_s: str) -> None:
    message = validation(ddb.get_item, TableName=table_s, Key={"pk": {"S": "x"}, "other": {"S": "y"}})
    assert message == "The provided key element does not match the schema"


def test_a_key_of_the_wrong_type_does_not_match_the_schema(ddb: Any, table_sn: str) -> None:
    message = validation(ddb.get_item, TableName=table_sn, Key={"pk": {"S": "x"}, "sk": {"S": "1"}})
    assert message == "The provided key element does not match the schema"


def test_projection_and_attributes_to_get_cannot_be_mixed(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.get_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        ProjectionExpression="a",
        AttributesToGet=["a"],
    )
    assert message == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"
    )


def test_duplicate_attributes_to_get_are_refused(ddb: Any, table_s: str) -> None:
    message = validation(ddb.get_item, TableName=table_s, Key={"pk": {"S": "x"}}, AttributesToGet=["a", "a"])
    assert message == "One or more parameter values were invalid: Duplicate value in attribute name: a"


def test_overlapping_projection_paths_are_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.get_item, TableName=table_s, Key={"pk": {"S": "x"}}, ProjectionExpression="a, a.b"
    )
    assert message == (
        "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one "
        "of these paths; path one: [a], path two: [a, b]"
    )


def test_an_undefined_name_in_a_projection_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(ddb.get_item, TableName=table_s, Key={"pk": {"S": "x"}}, ProjectionExpression="#a")
    assert message == (
        "Invalid ProjectionExpression: An expression attribute name used in the document path is not defined; "
        "attribute name: #a"
    )


def test_a_missing_table_is_resource_not_found(ddb: Any) -> None:
    code, _ = error(ddb.get_item, TableName="no-such-table", Key={"pk": {"S": "x"}})
    assert code == "ResourceNotFoundException"


# --- functionality ---------------------------------------------------------------------------


def test_get_of_a_missing_item_has_no_item(ddb: Any, table_s: str) -> None:
    assert "Item" not in ddb.get_item(TableName=table_s, Key={"pk": {"S": key()}})


def test_projection_returns_nested_paths_in_the_items_shape(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(
        TableName=table_s,
        Item={
            **k,
            "a": {"M": {"b": {"N": "1"}, "c": {"L": [{"S": "x"}, {"S": "y"}, {"S": "z"}]}}},
            "d": {"S": "gone"},
        },
    )
    got = ddb.get_item(
        TableName=table_s,
        Key=k,
        ProjectionExpression="a.b, a.c[2], #p",
        ExpressionAttributeNames={"#p": "pk"},
    )
    assert got["Item"] == {**k, "a": {"M": {"b": {"N": "1"}, "c": {"L": [{"S": "z"}]}}}}


def test_attributes_to_get_selects_top_level_attributes(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "1"}, "b": {"S": "2"}})
    assert ddb.get_item(TableName=table_s, Key=k, AttributesToGet=["b", "zz"])["Item"] == {"b": {"S": "2"}}


def test_a_projection_matching_nothing_returns_an_empty_item(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item=k)
    assert ddb.get_item(TableName=table_s, Key=k, ProjectionExpression="nothing")["Item"] == {}


def test_consistent_read_sees_the_last_write(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    for i in range(5):
        ddb.put_item(TableName=table_s, Item={**k, "i": {"N": str(i)}})
        assert ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]["i"] == {"N": str(i)}


def test_read_capacity_is_four_kilobyte_units_halved_when_eventually_consistent(
    ddb: Any, table_s: str
) -> None:
    pk = key()
    exact = 4 * KB - (2 + len(pk) + 3)  # "pk" + value + "pad" + value == 4096 bytes
    k = {"pk": {"S": pk}}
    ddb.put_item(TableName=table_s, Item={**k, "pad": {"S": "x" * exact}})
    strong = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True, ReturnConsumedCapacity="TOTAL")
    weak = ddb.get_item(TableName=table_s, Key=k, ReturnConsumedCapacity="TOTAL")
    assert (strong["ConsumedCapacity"]["CapacityUnits"], weak["ConsumedCapacity"]["CapacityUnits"]) == (
        1.0,
        0.5,
    )
    ddb.put_item(TableName=table_s, Item={**k, "pad": {"S": "x" * (exact + 1)}})
    strong = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True, ReturnConsumedCapacity="TOTAL")
    assert strong["ConsumedCapacity"]["CapacityUnits"] == 2.0
    # The projection does not change what the read costs.
    projected = ddb.get_item(
        TableName=table_s,
        Key=k,
        ConsistentRead=True,
        ProjectionExpression="pk",
        ReturnConsumedCapacity="TOTAL",
    )
    assert projected["ConsumedCapacity"]["CapacityUnits"] == 2.0


def test_reading_a_missing_item_costs_the_minimum(ddb: Any, table_s: str) -> None:
    out = ddb.get_item(TableName=table_s, Key={"pk": {"S": key()}}, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"] == {
        "TableName": table_s,
        "CapacityUnits": 0.5,
        "Table": {"CapacityUnits": 0.5},
    }


def test_a_list_index_beyond_32_bits_is_refused(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"L": [{"N": "7"}, {"N": "42"}]}})
    assert ddb.get_item(TableName=table_s, Key=k, ProjectionExpression="a[999]")["Item"] == {}
    message = validation(ddb.get_item, TableName=table_s, Key=k, ProjectionExpression="a[99999999999999]")
    assert message == (
        "Invalid ProjectionExpression: List index is not within the allowable range; index: [99999999999999]"
    )


@pytest.mark.parametrize("projection", ["#k.b.c", "#k[0]"])
def test_a_path_into_a_key_attribute_is_refused_as_keys_are_scalars(
    ddb: Any, table_s: str, projection: str
) -> None:
    message = validation(
        ddb.get_item,
        TableName=table_s,
        Key={"pk": {"S": key()}},
        ProjectionExpression=projection,
        ExpressionAttributeNames={"#k": "pk"},
    )
    assert message == (
        "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: pk"
    )


def test_a_tables_arn_stands_for_its_name(ddb: Any, table_s: str) -> None:
    # Since resource-based policies, DynamoDB takes a table's ARN wherever a TableName
    # goes (moto's AWS-verified test_batch_write_with_binary_data scans by ARN).
    arn = ddb.describe_table(TableName=table_s)["Table"]["TableArn"]
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=arn, Item={**k, "a": {"S": "by-arn"}})
    assert ddb.get_item(TableName=table_s, Key=k)["Item"]["a"] == {"S": "by-arn"}
    assert ddb.get_item(TableName=arn, Key=k, ConsistentRead=True)["Item"]["a"] == {"S": "by-arn"}
    got = ddb.batch_get_item(RequestItems={arn: {"Keys": [k]}})["Responses"]
    assert [item["a"] for items in got.values() for item in items] == [{"S": "by-arn"}]
    assert ddb.describe_table(TableName=arn)["Table"]["TableName"] == table_s
