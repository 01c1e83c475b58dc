"""UpdateItem: serialization, validation, functionality (expressions, return values, RMW)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, client_error, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK


def _update(ddb: Any, table: str, k: dict[str, Any], expression: str, **kwargs: Any) -> dict[str, Any]:
    out: dict[str, Any] = ddb.update_item(TableName=table, Key=k, UpdateExpression=expression, **kwargs)
    return out


# --- serialization ------------------------------------------------------------------------


def test_an_update_expression_that_is_not_a_string_is_a_serialization_exception(
    cluster: Any, table_s: str
) -> None:
    body = {"TableName": table_s, "Key": {"pk": {"S": "x"}}, "UpdateExpression": ["SET a = :v"]}
    status, out = raw_call(cluster, "UpdateItem", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_updating_the_partition_key_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_sn,
        Key={"pk": {"S": key()}, "sk": {"N": "1"}},
        UpdateExpression="SET pk = :v",
        ExpressionAttributeValues={":v": {"S": "other"}},
    )
    assert (
        message
        == "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key"
    )


def test_updating_the_sort_key_through_a_name_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_sn,
        Key={"pk": {"S": key()}, "sk": {"N": "1"}},
        UpdateExpression="REMOVE #s",
        ExpressionAttributeNames={"#s": "sk"},
    )
    assert message.endswith("Cannot update attribute sk. This attribute is part of the key")


def test_overlapping_update_paths_are_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        UpdateExpression="SET a = :v REMOVE a.b",
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    # UpdateItem words it as a list of one (moto's AWS-verified tests, 2026).
    assert message == (
        "1 validation error detected: Invalid UpdateExpression: Two document paths overlap with each other; "
        "must remove or rewrite one of these paths; path one: [a], path two: [a, b]"
    )


def test_a_repeated_section_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        UpdateExpression="SET a = :v SET b = :v",
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    assert message == (
        '1 validation error detected: Invalid UpdateExpression: The "SET" section can only be used once in an '
        "update expression;"
    )


def test_add_of_a_string_is_refused_before_reading_the_item(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        UpdateExpression="ADD a :v",
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    assert message == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: STRING"
    )


def test_update_expression_and_attribute_updates_cannot_be_mixed(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        UpdateExpression="SET a = :v",
        ExpressionAttributeValues={":v": {"S": "x"}},
        AttributeUpdates={"b": {"Action": "DELETE"}},
    )
    assert message == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}"
    )


def test_values_without_update_or_condition_name_both_in_the_message(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    assert message == (
        "ExpressionAttributeValues can only be specified when using expressions: "
        "UpdateExpression and ConditionExpression are null"
    )


def test_legacy_put_without_a_value_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item, TableName=table_s, Key={"pk": {"S": "x"}}, AttributeUpdates={"a": {"Action": "PUT"}}
    )
    assert message == (
        "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified"
    )


def test_legacy_update_of_a_key_attribute_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": "x"}},
        AttributeUpdates={"pk": {"Action": "PUT", "Value": {"S": "y"}}},
    )
    assert (
        message
        == "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key"
    )


# --- functionality ---------------------------------------------------------------------------


def test_update_creates_a_missing_item_with_its_key(ddb: Any, table_sn: str) -> None:
    k = {"pk": {"S": key()}, "sk": {"N": "7"}}
    _update(ddb, table_sn, k, "SET a = :v", ExpressionAttributeValues={":v": {"S": "x"}})
    assert ddb.get_item(TableName=table_sn, Key=k, ConsistentRead=True)["Item"] == {**k, "a": {"S": "x"}}


def test_update_without_an_expression_creates_the_bare_item(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.update_item(TableName=table_s, Key=k)
    assert ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"] == k


def test_set_remove_add_delete_in_one_expression(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(
        TableName=table_s,
        Item={
            **k,
            "n": {"N": "10"},
            "gone": {"S": "x"},
            "tags": {"SS": ["a", "b", "c"]},
            "l": {"L": [{"N": "1"}]},
        },
    )
    _update(
        ddb,
        table_s,
        k,
        "SET n = n - :one, l = list_append(l, :more), fresh = if_not_exists(fresh, :zero) "
        "REMOVE gone ADD cnt :one DELETE tags :b",
        ExpressionAttributeValues={
            ":one": {"N": "1"},
            ":more": {"L": [{"N": "2"}]},
            ":zero": {"N": "0"},
            ":b": {"SS": ["b"]},
        },
    )
    item = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]
    assert item["n"] == {"N": "9"}
    assert item["l"] == {"L": [{"N": "1"}, {"N": "2"}]}
    assert item["fresh"] == {"N": "0"}
    assert item["cnt"] == {"N": "1"}
    assert sorted(item["tags"]["SS"]) == ["a", "c"]
    assert "gone" not in item


def test_nested_paths_and_list_indexes_update_in_place(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(
        TableName=table_s, Item={**k, "m": {"M": {"l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}]}}}}
    )
    _update(ddb, table_s, k, "SET m.l[0] = :x, m.kid = :y REMOVE m.l[1]", ExpressionAttributeValues={
        ":x": {"S": "A"}, ":y": {"M": {}}})  # fmt: skip
    item = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]
    assert item["m"] == {"M": {"l": {"L": [{"S": "A"}, {"S": "c"}]}, "kid": {"M": {}}}}


@pytest.mark.parametrize(
    ("return_values", "expected"),
    [
        ("NONE", None),
        ("ALL_OLD", {"a": {"N": "1"}, "b": {"N": "2"}}),
        ("UPDATED_OLD", {"a": {"N": "1"}}),
        ("ALL_NEW", {"a": {"N": "5"}, "b": {"N": "2"}, "c": {"N": "3"}}),
        ("UPDATED_NEW", {"a": {"N": "5"}, "c": {"N": "3"}}),
    ],
)
def test_return_values_show_old_or_new_all_or_updated(
    ddb: Any, table_s: str, return_values: str, expected: dict[str, Any] | None
) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "1"}, "b": {"N": "2"}})
    out = _update(
        ddb, table_s, k, "SET a = :five, c = :three",
        ExpressionAttributeValues={":five": {"N": "5"}, ":three": {"N": "3"}}, ReturnValues=return_values,
    )  # fmt: skip
    if expected is None:
        assert "Attributes" not in out
    else:
        if return_values.startswith("ALL"):
            expected = {**k, **expected}
        assert out["Attributes"] == expected


def test_updated_old_of_a_new_item_returns_nothing(ddb: Any, table_s: str) -> None:
    out = _update(
        ddb, table_s, {"pk": {"S": key()}}, "SET a = :v", ExpressionAttributeValues={":v": {"N": "1"}},
        ReturnValues="UPDATED_OLD",
    )  # fmt: skip
    assert "Attributes" not in out


def test_a_failed_condition_leaves_the_item_and_can_return_it(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "version": {"N": "3"}})
    response = client_error(
        ddb.update_item,
        TableName=table_s,
        Key=k,
        UpdateExpression="SET version = :new",
        ConditionExpression="version = :expected",
        ExpressionAttributeValues={":new": {"N": "4"}, ":expected": {"N": "2"}},
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    assert response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert response["Item"] == {**k, "version": {"N": "3"}}
    assert ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]["version"] == {"N": "3"}


def test_an_arithmetic_on_a_missing_attribute_is_refused_and_writes_nothing(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    message = validation(
        ddb.update_item, TableName=table_s, Key=k, UpdateExpression="SET a = nope + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )  # fmt: skip
    assert message == "The provided expression refers to an attribute that does not exist in the item"
    assert "Item" not in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)


def test_add_to_a_string_attribute_is_an_operand_type_error(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "text"}})
    message = validation(
        ddb.update_item, TableName=table_s, Key=k, UpdateExpression="ADD a :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )  # fmt: skip
    assert message == "An operand in the update expression has an incorrect data type"


def test_an_update_growing_the_item_past_400_kb_is_refused(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "x" * 300_000}})
    message = validation(
        ddb.update_item, TableName=table_s, Key=k, UpdateExpression="SET b = :big",
        ExpressionAttributeValues={":big": {"S": "y" * 200_000}},
    )  # fmt: skip
    assert message == "Item size to update has exceeded the maximum allowed size"
    assert "b" not in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]


# Concurrent read-modify-writes on one key, many landing in the same storage batch.
def test_concurrent_increments_are_not_lost(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}

    def bump(_: int) -> None:
        ddb.update_item(
            TableName=table_s,
            Key=k,
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(bump, range(80)))
    assert ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]["n"] == {"N": "80"}


def test_concurrent_conditional_creates_let_exactly_one_win(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}

    def claim(i: int) -> bool:
        try:
            ddb.update_item(
                TableName=table_s, Key=k, UpdateExpression="SET holder = :me",
                ConditionExpression="attribute_not_exists(holder)", ExpressionAttributeValues={":me": {"N": str(i)}},
            )  # fmt: skip
            return True
        except ddb.exceptions.ConditionalCheckFailedException:
            return False

    with ThreadPoolExecutor(8) as pool:
        wins = list(pool.map(claim, range(16)))
    assert sum(wins) == 1


def test_write_capacity_is_the_larger_of_the_item_before_and_after(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "big": {"S": "x" * 2100}})
    out = _update(ddb, table_s, k, "REMOVE big", ReturnConsumedCapacity="TOTAL")
    assert out["ConsumedCapacity"] == {"TableName": table_s, "CapacityUnits": 3.0}
    out = _update(
        ddb,
        table_s,
        k,
        "SET a = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert out["ConsumedCapacity"]["CapacityUnits"] == 1.0


def test_legacy_attribute_updates_put_add_and_delete(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "gone": {"S": "x"}, "s": {"SS": ["a", "b"]}, "n": {"N": "1"}})
    out = ddb.update_item(
        TableName=table_s,
        Key=k,
        AttributeUpdates={
            "new": {"Action": "PUT", "Value": {"S": "v"}},
            "gone": {"Action": "DELETE"},
            "s": {"Action": "DELETE", "Value": {"SS": ["a"]}},
            "n": {"Action": "ADD", "Value": {"N": "2"}},
            "l": {"Action": "ADD", "Value": {"L": [{"S": "x"}]}},
        },
        ReturnValues="ALL_NEW",
    )
    assert out["Attributes"] == {
        **k, "new": {"S": "v"}, "s": {"SS": ["b"]}, "n": {"N": "3"}, "l": {"L": [{"S": "x"}]},
    }  # fmt: skip


def test_legacy_add_on_another_type_is_a_type_mismatch(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "text"}})
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key=k,
        AttributeUpdates={"a": {"Action": "ADD", "Value": {"N": "1"}}},
    )
    assert message == "Type mismatch for attribute to update"


def test_legacy_expected_not_contains_fails_on_a_missing_attribute(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"S": "hello"}})
    ddb.update_item(
        TableName=table_s, Key=k, AttributeUpdates={"z": {"Action": "PUT", "Value": {"N": "1"}}},
        Expected={"a": {"ComparisonOperator": "NOT_CONTAINS", "AttributeValueList": [{"S": "xyz"}]}},
    )  # fmt: skip
    assert error(
        ddb.update_item, TableName=table_s, Key=k, AttributeUpdates={"z": {"Action": "PUT", "Value": {"N": "2"}}},
        Expected={"q": {"ComparisonOperator": "NOT_CONTAINS", "AttributeValueList": [{"N": "1"}]}},
    )[0] == "ConditionalCheckFailedException"  # fmt: skip


def test_legacy_expected_ne_passes_on_a_missing_attribute_and_or_combines(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "1"}})
    ddb.update_item(
        TableName=table_s, Key=k, AttributeUpdates={"z": {"Action": "PUT", "Value": {"N": "1"}}},
        Expected={"q": {"ComparisonOperator": "NE", "AttributeValueList": [{"N": "1"}]}},
    )  # fmt: skip
    ddb.update_item(
        TableName=table_s, Key=k, AttributeUpdates={"z": {"Action": "PUT", "Value": {"N": "2"}}},
        Expected={"a": {"Value": {"N": "9"}}, "b": {"Exists": False}}, ConditionalOperator="OR",
    )  # fmt: skip
    assert ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]["z"] == {"N": "2"}


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ({"a": {"Exists": True}}, "Value must be provided when Exists is true for Attribute: a"),
        ({"a": {"Exists": False, "Value": {"N": "1"}}}, "Value cannot be used when Exists is false for Attribute: a"),
        ({"a": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}, {"N": "2"}]}},
         "Invalid number of argument(s) for the EQ ComparisonOperator"),
        ({"a": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"N": "1"}]}},
         "ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"),
        ({"a": {"ComparisonOperator": "IN", "AttributeValueList": [{"N": "1"}, {"S": "x"}]}},
         "AttributeValues inside AttributeValueList must be of same type"),
        ({"a": {"Exists": False, "ComparisonOperator": "NULL"}},
         "Exists and ComparisonOperator cannot be used together for Attribute: a"),
    ],
)  # fmt: skip
def test_legacy_expected_is_validated_with_its_own_messages(
    ddb: Any, table_s: str, expected: dict[str, Any], message: str
) -> None:
    got = validation(
        ddb.update_item, TableName=table_s, Key={"pk": {"S": "x"}},
        AttributeUpdates={"z": {"Action": "PUT", "Value": {"N": "1"}}}, Expected=expected,
    )  # fmt: skip
    assert got == "One or more parameter values were invalid: " + message


# --- an update that only takes away does not create the item -----------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"UpdateExpression": "REMOVE a, b"},
        # Nested paths too: on a missing item there is nothing whose path could be invalid.
        {"UpdateExpression": "REMOVE x.y"},
        {"UpdateExpression": "REMOVE x[0]"},
        {"UpdateExpression": "DELETE tags :t", "ExpressionAttributeValues": {":t": {"SS": ["x"]}}},
        {"UpdateExpression": "REMOVE a DELETE tags :t", "ExpressionAttributeValues": {":t": {"SS": ["x"]}}},
        {"AttributeUpdates": {"a": {"Action": "DELETE"}}},
        {
            "AttributeUpdates": {
                "a": {"Action": "DELETE"},
                "tags": {"Action": "DELETE", "Value": {"SS": ["x"]}},
            }
        },
    ],
)
def test_a_remove_only_update_of_a_missing_item_creates_nothing(
    ddb: Any, table_s: str, kwargs: dict[str, Any]
) -> None:
    k = {"pk": {"S": key()}}
    out = ddb.update_item(TableName=table_s, Key=k, ReturnValues="ALL_NEW", **kwargs)
    assert "Attributes" not in out
    assert "Item" not in ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)


@pytest.mark.parametrize("expression", ["REMOVE x.y", "REMOVE x[0]"])
def test_a_nested_remove_under_a_missing_attribute_of_an_existing_item_is_an_invalid_path(
    ddb: Any, table_s: str, expression: str
) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "1"}})
    message = validation(ddb.update_item, TableName=table_s, Key=k, UpdateExpression=expression)
    assert message == "The document path provided in the update expression is invalid for update"


def test_a_remove_only_update_of_an_existing_item_still_applies(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "a": {"N": "1"}, "b": {"S": "keep"}})
    out = _update(ddb, table_s, k, "REMOVE a", ReturnValues="ALL_NEW")
    assert out["Attributes"] == {**k, "b": {"S": "keep"}}


def test_an_update_that_sets_something_still_creates_the_item(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    out = _update(
        ddb,
        table_s,
        k,
        "SET a = :v REMOVE b",
        ExpressionAttributeValues={":v": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )
    assert out["Attributes"] == {**k, "a": {"N": "1"}}


def test_a_remove_only_update_whose_condition_fails_on_a_missing_item_is_refused(
    ddb: Any, table_s: str
) -> None:
    k = {"pk": {"S": key()}}
    code, _ = error(
        ddb.update_item,
        TableName=table_s,
        Key=k,
        UpdateExpression="REMOVE a",
        ConditionExpression="attribute_exists(pk)",
    )
    assert code == "ConditionalCheckFailedException"


# --- attribute names ----------------------------------------------------------------------


def test_attribute_names_of_65535_bytes_work_and_longer_are_refused(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    longest = "n" * 65535
    ddb.put_item(TableName=table_s, Item={**k, longest: {"N": "1"}})
    got = ddb.get_item(
        TableName=table_s,
        Key=k,
        ProjectionExpression="#n",
        ExpressionAttributeNames={"#n": longest},
        ConsistentRead=True,
    )
    assert got["Item"] == {longest: {"N": "1"}}
    too_long = "n" * 65536
    for call, kwargs in (
        (ddb.put_item, {"Item": {**k, too_long: {"N": "1"}}}),
        (
            ddb.get_item,
            {"Key": k, "ProjectionExpression": "#n", "ExpressionAttributeNames": {"#n": too_long}},
        ),
        (ddb.get_item, {"Key": k, "AttributesToGet": [too_long]}),
        (
            ddb.update_item,
            {
                "Key": k,
                "UpdateExpression": "SET #n = :v",
                "ExpressionAttributeNames": {"#n": too_long},
                "ExpressionAttributeValues": {":v": {"N": "2"}},
            },
        ),
        (ddb.update_item, {"Key": k, "AttributeUpdates": {too_long: {"Value": {"N": "2"}, "Action": "PUT"}}}),
    ):
        message = validation(call, TableName=table_s, **kwargs)
        assert "Attribute name" in message


# --- round 3: numbers, functions and names as DynamoDB words them ----------------------------


def test_an_unparseable_number_in_expression_values_names_its_placeholder(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": key()}},
        UpdateExpression="SET a = :val",
        ExpressionAttributeValues={":val": {"N": "dog"}},
    )
    assert message == (
        "ExpressionAttributeValues contains invalid value: "
        "The parameter cannot be converted to a numeric value: dog for key :val"
    )


def test_adding_a_huge_exponent_is_an_overflow_not_a_server_error(ddb: Any, table_s: str) -> None:
    # Alternator's test_number_magnitude_not_allowed_dos: the operand itself is refused.
    code, message = error(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": key()}},
        UpdateExpression="SET x = :a + :b",
        ExpressionAttributeValues={":a": {"N": "1.0"}, ":b": {"N": "1.0e100000000"}},
    )
    assert code == "ValidationException"
    assert "Number overflow" in message


@pytest.mark.parametrize("op", ["+", "-"])
def test_arithmetic_that_needs_a_39th_digit_is_reported_as_an_overflow(
    ddb: Any, table_s: str, op: str
) -> None:
    # DynamoDB's (surprising) words, recorded by Alternator's test_update_expression_plus_imprecise.
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": key()}},
        UpdateExpression=f"SET b = :v1 {op} :v2",
        ExpressionAttributeValues={":v1": {"N": "1e50"}, ":v2": {"N": "1"}},
    )
    assert (
        message == "Number overflow. Attempting to store a number with magnitude larger than supported range"
    )


@pytest.mark.parametrize("function", ["if_not_exists(a, a)", "list_append(a, a)"])
def test_update_functions_in_a_condition_are_not_allowed(ddb: Any, table_s: str, function: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": key()}},
        UpdateExpression="SET z = :val",
        ConditionExpression=f"{function} = :arg",
        ExpressionAttributeValues={":val": {"N": "1"}, ":arg": {"N": "5"}},
    )
    name = function.split("(")[0]
    assert message == (
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; "
        f"function: {name}"
    )


def test_an_empty_name_in_attribute_updates_is_refused_in_its_own_terms(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_item,
        TableName=table_s,
        Key={"pk": {"S": key()}},
        AttributeUpdates={"": {"Value": {"N": "2"}, "Action": "PUT"}},
    )
    assert message == "One or more parameter values were invalid: Empty attribute name"


# --- the write operations' list-of-one wording (moto's AWS-verified tests, 2026) -------------


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        (
            {"UpdateExpression": "ADD s :empty", "ExpressionAttributeValues": {":empty": {"SS": []}}},
            "One or more parameter values were invalid: An string set  may not be empty",
        ),
        ({"UpdateExpression": ""}, "Invalid UpdateExpression: The expression can not be empty;"),
        (
            {"UpdateExpression": "SET a = :v", "ExpressionAttributeValues": {}},
            "ExpressionAttributeValues must not be empty",
        ),
        (
            {
                "UpdateExpression": "SET a = :v",
                "ExpressionAttributeValues": {":v": {"N": "1"}},
                "ExpressionAttributeNames": {"#count": "count"},
            },
            "Value provided in ExpressionAttributeNames unused in expressions: keys: {#count}",
        ),
    ],
    ids=["empty-set-value", "empty-expression", "empty-values", "unused-name"],
)
def test_update_item_lists_these_faults_as_one_validation_error(
    ddb: Any, table_s: str, request_fields: dict[str, Any], message: str
) -> None:
    got = validation(ddb.update_item, TableName=table_s, Key={"pk": {"S": key()}}, **request_fields)
    assert got == "1 validation error detected: " + message


def test_delete_item_lists_an_unused_name_and_get_item_and_scan_do_not(ddb: Any, table_s: str) -> None:
    unused = "Value provided in ExpressionAttributeNames unused in expressions: keys: {#count}"
    names = {"#pk": "pk", "#count": "count"}
    k = {"pk": {"S": key()}}
    deleted = validation(
        ddb.delete_item, TableName=table_s, Key=k, ConditionExpression="attribute_exists(#pk)",
        ExpressionAttributeNames=names,
    )  # fmt: skip
    assert deleted == "1 validation error detected: " + unused
    got = validation(
        ddb.get_item, TableName=table_s, Key=k, ProjectionExpression="#pk", ExpressionAttributeNames=names
    )
    scanned = validation(
        ddb.scan, TableName=table_s, ProjectionExpression="#pk", ExpressionAttributeNames=names
    )
    assert got == scanned == unused
