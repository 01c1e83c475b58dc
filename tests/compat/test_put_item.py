"""PutItem: serialization, validation, functionality (conditions, return values, capacity)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, client_error, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK


# --- serialization ------------------------------------------------------------------------


def test_an_item_that_is_not_a_map_is_a_serialization_exception(cluster: Any, table_s: str) -> None:
    status, body = raw_call(cluster, "PutItem", json.dumps({"TableName": table_s, "Item": "x"}).encode())
    assert (status, error_type(body)) == (400, "SerializationException")


def test_a_string_value_holding_a_number_is_a_serialization_exception(cluster: Any, table_s: str) -> None:
    item = {"pk": {"S": key()}, "a": {"S": 5}}
    status, body = raw_call(cluster, "PutItem", json.dumps({"TableName": table_s, "Item": item}).encode())
    assert (status, error_type(body)) == (400, "SerializationException")


def test_condition_expression_that_is_not_a_string_is_a_serialization_exception(
    cluster: Any, table_s: str
) -> None:
    body = {"TableName": table_s, "Item": {"pk": {"S": key()}}, "ConditionExpression": 3}
    status, out = raw_call(cluster, "PutItem", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_missing_table_name_and_item_are_reported_together(cluster: Any) -> None:
    status, body = raw_call(cluster, "PutItem", b"{}")
    assert status == 400
    assert body["message"] == (
        "2 validation errors detected: "
        "Value null at 'tableName' failed to satisfy constraint: Member must not be null; "
        "Value null at 'item' failed to satisfy constraint: Member must not be null"
    )


@pytest.mark.parametrize("rv", ["ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"])
def test_put_accepts_only_all_old_or_none_return_values(ddb: Any, table_s: str, rv: str) -> None:
    message = validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}}, ReturnValues=rv)
    assert message == "ReturnValues can only be ALL_OLD or NONE"


def test_return_values_on_condition_check_failure_outside_the_enum_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ReturnValuesOnConditionCheckFailure="ALL_NEW",
    )
    assert message == (
        "1 validation error detected: Value 'ALL_NEW' at 'returnValuesOnConditionCheckFailure' failed to "
        "satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]"
    )


def test_expression_and_legacy_condition_cannot_be_mixed(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ConditionExpression="attribute_not_exists(pk)",
        Expected={"pk": {"Exists": False}},
    )
    assert message == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"
    )


def test_attribute_values_without_an_expression_are_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ExpressionAttributeValues={":a": {"S": "x"}},
    )
    assert message == (
        "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null"
    )


def test_attribute_names_without_an_expression_are_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}}, ExpressionAttributeNames={"#a": "a"}
    )
    assert message == "ExpressionAttributeNames can only be specified when using expressions"


def test_an_unused_expression_value_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ConditionExpression="attribute_not_exists(pk)",
        ExpressionAttributeValues={":unused": {"S": "x"}},
    )
    # A list of one for PutItem, UpdateItem and DeleteItem (moto's AWS-verified
    # test_put_item_unused_attributes, 2026); GetItem and Scan answer it without.
    assert message == (
        "1 validation error detected: Value provided in ExpressionAttributeValues unused in expressions: "
        "keys: {:unused}"
    )


def test_a_reserved_word_in_a_condition_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ConditionExpression="attribute_exists(name)",
    )
    assert (
        message == "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: name"
    )


def test_a_syntax_error_in_a_condition_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}}, ConditionExpression="a = "
    )
    assert message.startswith("Invalid ConditionExpression: Syntax error; token: ")


def test_a_bad_expression_is_reported_before_a_missing_table(ddb: Any) -> None:
    message = validation(
        ddb.put_item, TableName="no-such-table", Item={"pk": {"S": "x"}}, ConditionExpression="("
    )
    assert message.startswith("Invalid ConditionExpression: Syntax error")


def test_a_missing_table_is_resource_not_found(ddb: Any) -> None:
    code, message = error(ddb.put_item, TableName="no-such-table", Item={"pk": {"S": "x"}})
    assert (code, message) == ("ResourceNotFoundException", "Requested resource not found")


def test_a_bad_expression_value_names_its_placeholder(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ConditionExpression="a = :v",
        ExpressionAttributeValues={":v": {"N": "dog"}},
    )
    assert message.startswith("ExpressionAttributeValues contains invalid value: ")
    assert message.endswith(" for key :v")


# --- functionality ---------------------------------------------------------------------------


def test_a_conditional_put_creates_once_and_then_fails(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(
        TableName=table_s, Item={**k, "v": {"N": "1"}}, ConditionExpression="attribute_not_exists(pk)"
    )
    code, message = error(
        ddb.put_item,
        TableName=table_s,
        Item={**k, "v": {"N": "2"}},
        ConditionExpression="attribute_not_exists(pk)",
    )
    assert (code, message) == ("ConditionalCheckFailedException", "The conditional request failed")
    assert ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]["v"] == {"N": "1"}


def test_a_condition_on_values_compares_the_stored_item(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "n": {"N": "5"}})
    ddb.put_item(
        TableName=table_s,
        Item={**k, "n": {"N": "6"}},
        ConditionExpression="#n < :limit AND size(pk) > :zero",
        ExpressionAttributeNames={"#n": "n"},
        ExpressionAttributeValues={":limit": {"N": "6"}, ":zero": {"N": "0"}},
    )
    assert (
        error(
            ddb.put_item,
            TableName=table_s,
            Item={**k, "n": {"N": "7"}},
            ConditionExpression="n < :limit",
            ExpressionAttributeValues={":limit": {"N": "6"}},
        )[0]
        == "ConditionalCheckFailedException"
    )


def test_failed_condition_returns_the_old_item_when_asked(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "v": {"S": "old"}})
    response = client_error(
        ddb.put_item,
        TableName=table_s,
        Item={**k, "v": {"S": "new"}},
        ConditionExpression="attribute_not_exists(pk)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    assert response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert response["Item"] == {**k, "v": {"S": "old"}}


def test_failed_condition_on_a_missing_item_returns_no_item(ddb: Any, table_s: str) -> None:
    response = client_error(
        ddb.put_item,
        TableName=table_s,
        Item={"pk": {"S": key()}},
        ConditionExpression="attribute_exists(pk)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    assert response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert "Item" not in response


def test_failed_condition_without_the_option_returns_no_item(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item=k)
    response = client_error(
        ddb.put_item, TableName=table_s, Item=k, ConditionExpression="attribute_not_exists(pk)"
    )
    assert "Item" not in response


def test_put_replaces_the_whole_item(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "x"}})
    old = ddb.put_item(TableName=table_s, Item={**k, "b": {"S": "y"}}, ReturnValues="ALL_OLD")
    assert old["Attributes"] == {**k, "a": {"S": "x"}}
    assert ddb.get_item(TableName=table_s, Key=k)["Item"] == {**k, "b": {"S": "y"}}


def test_consumed_capacity_counts_started_kilobytes(ddb: Any, table_s: str) -> None:
    pk = key()
    # pk (2 + 32) + "pad" (3) + value: 1024 bytes in all is exactly one unit.
    exact = 1024 - (2 + len(pk) + 3)
    out = ddb.put_item(
        TableName=table_s, Item={"pk": {"S": pk}, "pad": {"S": "x" * exact}}, ReturnConsumedCapacity="TOTAL"
    )
    assert out["ConsumedCapacity"] == {"TableName": table_s, "CapacityUnits": 1.0}
    out = ddb.put_item(
        TableName=table_s,
        Item={"pk": {"S": pk}, "pad": {"S": "x" * (exact + 1)}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert out["ConsumedCapacity"]["CapacityUnits"] == 2.0


def test_consumed_capacity_charges_the_larger_of_old_and_new(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "big": {"S": "x" * 2500}})
    out = ddb.put_item(TableName=table_s, Item=k, ReturnConsumedCapacity="TOTAL")
    assert out["ConsumedCapacity"]["CapacityUnits"] == 3.0


def test_consumed_capacity_indexes_reports_the_table_part(ddb: Any, table_s: str) -> None:
    out = ddb.put_item(TableName=table_s, Item={"pk": {"S": key()}}, ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"] == {
        "TableName": table_s,
        "CapacityUnits": 1.0,
        "Table": {"CapacityUnits": 1.0},
    }


def test_no_consumed_capacity_unless_asked(ddb: Any, table_s: str) -> None:
    out = ddb.put_item(TableName=table_s, Item={"pk": {"S": key()}}, ReturnConsumedCapacity="NONE")
    assert "ConsumedCapacity" not in out


def test_item_collection_metrics_are_accepted_and_absent_without_indexes(ddb: Any, table_s: str) -> None:
    out = ddb.put_item(TableName=table_s, Item={"pk": {"S": key()}}, ReturnItemCollectionMetrics="SIZE")
    assert "ItemCollectionMetrics" not in out


def test_legacy_expected_guards_a_put(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "1"}})
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "2"}}, Expected={"a": {"Value": {"N": "1"}}})
    code, _ = error(
        ddb.put_item, TableName=table_s, Item={**k, "a": {"N": "3"}}, Expected={"a": {"Value": {"N": "1"}}}
    )
    assert code == "ConditionalCheckFailedException"
    assert ddb.get_item(TableName=table_s, Key=k)["Item"]["a"] == {"N": "2"}


def test_a_legacy_expected_in_of_many_values_guards_a_put(ddb: Any, table_s: str) -> None:
    # The legacy IN is not held to an expression's 100 operands.
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "150"}})
    many = [{"N": str(i)} for i in range(200)]
    ddb.put_item(
        TableName=table_s,
        Item={**k, "a": {"N": "1"}},
        Expected={"a": {"ComparisonOperator": "IN", "AttributeValueList": many}},
    )
    code, _ = error(
        ddb.put_item,
        TableName=table_s,
        Item={**k, "a": {"N": "2"}},
        Expected={"a": {"ComparisonOperator": "IN", "AttributeValueList": many[100:]}},
    )
    assert code == "ConditionalCheckFailedException"
    assert ddb.get_item(TableName=table_s, Key=k)["Item"]["a"] == {"N": "1"}


# --- round 3: numbers and names as DynamoDB words them ---------------------------------------


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "dog", " 1", "1 ", "0x10"])
def test_a_number_dynamodb_cannot_parse_is_named_in_the_error(ddb: Any, table_s: str, text: str) -> None:
    message = validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "n": {"N": text}})
    assert message == f"The parameter cannot be converted to a numeric value: {text}"


def test_an_empty_number_is_refused_without_a_value(ddb: Any, table_s: str) -> None:
    message = validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "n": {"N": ""}})
    assert message == "The parameter cannot be converted to a numeric value"


@pytest.mark.parametrize("text", ["3", "-7.1234", "-17e5", "-17.4E37", "+3", ".123", "0001.23", "1e+5"])
def test_numbers_in_every_notation_dynamodb_accepts_are_stored(ddb: Any, table_s: str, text: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "n": {"N": text}})
    stored = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]["n"]["N"]
    assert Decimal(stored) == Decimal(text)


def test_a_huge_exponent_is_an_overflow_not_a_server_error(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "n": {"N": "1.0e100000000"}}
    )
    assert (
        message == "Number overflow. Attempting to store a number with magnitude larger than supported range"
    )


def test_an_empty_attribute_name_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "": {"N": "1"}})
    assert message == "One or more parameter values were invalid: Empty attribute name"
