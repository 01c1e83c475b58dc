"""DeleteItem: serialization, validation, functionality (conditions, return values, capacity)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, client_error, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK


# --- serialization ------------------------------------------------------------------------


def test_a_key_value_that_is_not_an_attribute_value_is_a_serialization_exception(
    cluster: Any, table_s: str
) -> None:
    status, out = raw_call(
        cluster, "DeleteItem", json.dumps({"TableName": table_s, "Key": {"pk": "x"}}).encode()
    )
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("rv", ["ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"])
def test_delete_accepts_only_all_old_or_none(ddb: Any, table_s: str, rv: str) -> None:
    message = validation(ddb.delete_item, TableName=table_s, Key={"pk": {"S": "x"}}, ReturnValues=rv)
    assert message == "ReturnValues can only be ALL_OLD or NONE"


def test_a_key_without_the_sort_key_does_not_match_the_schema(ddb: Any, table_sn: str) -> None:
    assert validation(ddb.delete_item, TableName=table_sn, Key={"pk": {"S": "x"}}) == (
        "The provided key element does not match the schema"
    )


def test_an_empty_string_key_is_refused(ddb: Any, table_s: str) -> None:
    assert validation(ddb.delete_item, TableName=table_s, Key={"pk": {"S": ""}}) == (
        "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an "
        "empty string value. Key: pk"
    )


def test_an_undefined_value_in_the_condition_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.delete_item, TableName=table_s, Key={"pk": {"S": "x"}}, ConditionExpression="a = :v"
    )
    assert message == (
        "Invalid ConditionExpression: An expression attribute value used in expression is not defined; "
        "attribute value: :v"
    )


# --- functionality ---------------------------------------------------------------------------


def test_delete_returns_the_old_item_when_asked(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "v": {"N": "1"}})
    out = ddb.delete_item(TableName=table_s, Key=k, ReturnValues="ALL_OLD")
    assert out["Attributes"] == {**k, "v": {"N": "1"}}
    assert "Item" not in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)


def test_a_conditional_delete_deletes_only_when_the_condition_holds(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "state": {"S": "open"}})
    code, _ = error(
        ddb.delete_item,
        TableName=table_s,
        Key=k,
        ConditionExpression="#s = :closed",
        ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":closed": {"S": "closed"}},
    )
    assert code == "ConditionalCheckFailedException"
    assert "Item" in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)
    ddb.delete_item(
        TableName=table_s,
        Key=k,
        ConditionExpression="#s = :open",
        ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":open": {"S": "open"}},
    )
    assert "Item" not in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)


def test_a_condition_on_a_missing_item_sees_no_attributes(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.delete_item(TableName=table_s, Key=k, ConditionExpression="attribute_not_exists(pk)")
    assert error(ddb.delete_item, TableName=table_s, Key=k, ConditionExpression="attribute_exists(pk)")[
        0
    ] == ("ConditionalCheckFailedException")


def test_failed_delete_condition_returns_the_item_when_asked(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "v": {"S": "keep"}})
    response = client_error(
        ddb.delete_item,
        TableName=table_s,
        Key=k,
        ConditionExpression="attribute_not_exists(v)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    assert response["Item"] == {**k, "v": {"S": "keep"}}
    # The text rides as "message", the service model's member (moto's verified tests).
    assert response["message"] == "The conditional request failed"


def test_deleting_costs_the_deleted_items_size_and_at_least_one_unit(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "big": {"S": "x" * 2100}})
    assert ddb.delete_item(TableName=table_s, Key=k, ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"] == {
        "TableName": table_s,
        "CapacityUnits": 3.0,
    }
    again = ddb.delete_item(TableName=table_s, Key=k, ReturnConsumedCapacity="TOTAL")
    assert again["ConsumedCapacity"]["CapacityUnits"] == 1.0


def test_legacy_expected_guards_a_delete(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "1"}})
    assert error(ddb.delete_item, TableName=table_s, Key=k, Expected={"a": {"Value": {"N": "2"}}})[0] == (
        "ConditionalCheckFailedException"
    )
    ddb.delete_item(TableName=table_s, Key=k, Expected={"a": {"Value": {"N": "1"}}})
    assert "Item" not in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)
