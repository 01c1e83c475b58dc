"""Per-operation request validation (pure): shapes, DynamoDB's messages, their order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from partita.api.operations import (
    batch_get_item,
    batch_write_item,
    delete_item,
    get_item,
    put_item,
    query,
    scan,
    tag_resource,
    untag_resource,
    update_item,
    update_table,
)
from partita.common.errors import DynamoError
from partita.control.model import KeyElement, TableRecord

T = "Orders"


def failure(validate: Callable[[Any], Any], body: Any) -> DynamoError:
    with pytest.raises(DynamoError) as err:
        validate(body)
    return err.value


def record(sort: bool = True) -> TableRecord:
    return TableRecord(
        name=T, table_id=3, status="ACTIVE", partition_key=KeyElement("pk", "S"),
        sort_key=KeyElement("sk", "N") if sort else None, attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST", read_capacity=0, write_capacity=0, created_at=0.0, partitions=(),
    )  # fmt: skip


# --- PutItem / DeleteItem / GetItem ---------------------------------------------------------


def test_put_item_resolves_its_condition_and_measures_the_item() -> None:
    req = put_item.validate({
        "TableName": T, "Item": {"pk": {"S": "a"}, "n": {"N": "1.50"}}, "ConditionExpression": "#n < :v",
        "ExpressionAttributeNames": {"#n": "n"}, "ExpressionAttributeValues": {":v": {"N": "2.0"}},
        "ReturnConsumedCapacity": "TOTAL", "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    })  # fmt: skip
    assert req.item == {"pk": {"S": "a"}, "n": {"N": "1.5"}}
    assert req.size == 2 + 1 + 1 + 3  # "pk" "a" "n" 1.5
    assert (req.capacity, req.return_old_on_failure) == ("TOTAL", True)
    assert req.expressions.storage_body() == {
        "condition": "#n < :v", "names": {"#n": "n"}, "values": {":v": {"N": "2"}},
    }  # fmt: skip
    assert req.expressions.resolved.condition is not None


def test_put_item_translates_expected_into_a_legacy_condition() -> None:
    req = put_item.validate(
        {"TableName": T, "Item": {"pk": {"S": "a"}}, "Expected": {"pk": {"Exists": False}}}
    )
    body = req.expressions.storage_body()
    assert body["condition"] == "attribute_not_exists(#l0)" and body["names"] == {"#l0": "pk"}
    assert body["legacy"] is True


def test_put_item_checks_expression_params_before_attribute_values() -> None:
    error = failure(put_item.validate, {
        "TableName": T, "Item": {"pk": {"S": ""}, "bad": {"SS": []}}, "ConditionExpression": "a = :v",
        "Expected": {"a": {"Exists": False}},
    })  # fmt: skip
    assert error.message.startswith("Can not use both expression and non-expression parameters")


def test_a_put_item_without_condition_sends_no_expression_fields() -> None:
    req = put_item.validate({"TableName": T, "Item": {"pk": {"S": "a"}}})
    assert req.expressions.storage_body() == {}


def test_delete_item_refuses_updated_return_values_after_the_shape_checks() -> None:
    error = failure(
        delete_item.validate, {"TableName": "x", "Key": {"pk": {"S": "a"}}, "ReturnValues": "ALL_NEW"}
    )
    assert error.message.startswith("1 validation error detected: Value 'x' at 'tableName'")
    error = failure(
        delete_item.validate, {"TableName": T, "Key": {"pk": {"S": "a"}}, "ReturnValues": "ALL_NEW"}
    )
    assert error.message == "ReturnValues can only be ALL_OLD or NONE"


def test_get_item_translates_attributes_to_get() -> None:
    req = get_item.validate({"TableName": T, "Key": {"pk": {"S": "a"}}, "AttributesToGet": ["x", "y"]})
    assert req.expressions.storage_body()["projection"] == "#l0, #l1"


def test_get_item_refuses_an_empty_attributes_to_get() -> None:
    error = failure(get_item.validate, {"TableName": T, "Key": {"pk": {"S": "a"}}, "AttributesToGet": []})
    assert error.message == (
        "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1"
    )


def test_expression_attribute_values_are_canonical_and_named_on_error() -> None:
    error = failure(put_item.validate, {
        "TableName": T, "Item": {"pk": {"S": "a"}}, "ConditionExpression": "a = :v",
        "ExpressionAttributeValues": {":v": {"N": "abc"}},
    })  # fmt: skip
    assert error.message == (
        "ExpressionAttributeValues contains invalid value: The parameter cannot be converted to a numeric value: abc "
        "for key :v"
    )


# --- UpdateItem ------------------------------------------------------------------------------


def test_update_item_knows_the_attributes_it_modifies() -> None:
    req = update_item.validate({
        "TableName": T, "Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET a.b = :v REMOVE c ADD #d :n",
        "ExpressionAttributeNames": {"#d": "d"}, "ExpressionAttributeValues": {":v": {"S": "x"}, ":n": {"N": "1"}},
        "ReturnValues": "UPDATED_NEW",
    })  # fmt: skip
    assert req.modified == frozenset({"a", "c", "d"})
    assert req.return_values == "UPDATED_NEW"
    req.check_key_untouched(record())


@pytest.mark.parametrize("expression", ["SET pk = :v", "SET sk = :v", "REMOVE sk", "SET pk.x = :v"])
def test_update_item_refuses_to_touch_a_key_attribute(expression: str) -> None:
    body: dict[str, Any] = {"TableName": T, "Key": {"pk": {"S": "a"}}, "UpdateExpression": expression}
    if ":v" in expression:
        body["ExpressionAttributeValues"] = {":v": {"S": "x"}}
    req = update_item.validate(body)
    with pytest.raises(DynamoError) as err:
        req.check_key_untouched(record())
    assert err.value.message.endswith("This attribute is part of the key")


def test_update_item_without_update_is_a_bare_write() -> None:
    req = update_item.validate({"TableName": T, "Key": {"pk": {"S": "a"}}})
    assert (req.modified, req.expressions.storage_body()) == (frozenset(), {})


# --- Query and Scan ---------------------------------------------------------------------------


def _query(**extra: Any) -> dict[str, Any]:
    return {
        "TableName": T,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "a"}},
        **extra,
    }


def test_query_select_defaults_follow_the_projection() -> None:
    assert query.validate(_query()).read.select == "ALL_ATTRIBUTES"
    assert query.validate(_query(ProjectionExpression="a")).read.select == "SPECIFIC_ATTRIBUTES"
    assert query.validate(_query(Select="COUNT")).read.select == "COUNT"


def test_query_reports_select_problems_among_the_constraints() -> None:
    error = failure(query.validate, _query(Select="SPECIFIC_ATTRIBUTES", Limit=0))
    assert error.message == (
        "2 validation errors detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value "
        "greater than or equal to 1; Must specify the AttributesToGet or ProjectionExpression when choosing to get "
        "SPECIFIC_ATTRIBUTES"
    )


def test_query_plans_the_key_condition_against_the_schema() -> None:
    req = query.validate(_query(KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :b",
                                ExpressionAttributeValues={":p": {"S": "a"}, ":a": {"N": "1"}, ":b": {"N": "2"}}))  # fmt: skip
    condition = req.key_condition(record())
    assert (condition.sort_op, condition.sort_values) == ("BETWEEN", ({"N": "1"}, {"N": "2"}))


def test_query_with_key_conditions_and_a_filter_expression_shares_the_maps() -> None:
    req = query.validate({
        "TableName": T, "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]}},
        "FilterExpression": "#x > :l0", "ExpressionAttributeNames": {"#x": "x"},
        "ExpressionAttributeValues": {":l0": {"N": "1"}},
    })  # fmt: skip
    assert req.expressions.values == {":l0": {"N": "1"}, ":l1": {"S": "a"}}
    assert req.key_condition(record()).partition_value == {"S": "a"}


def test_query_start_key_values_are_checked_with_the_starting_key_prefix() -> None:
    error = failure(query.validate, _query(ExclusiveStartKey={"pk": {"S": "a"}, "sk": {"B": "!!"}}))
    assert error.code == "SerializationException"
    error = failure(query.validate, _query(ExclusiveStartKey={"pk": {}}))
    assert error.message.startswith("The provided starting key is invalid: Supplied AttributeValue is empty")


def test_scan_segments_must_come_together_and_in_range() -> None:
    assert scan.validate({"TableName": T, "Segment": 3, "TotalSegments": 4}).segment == 3
    assert scan.validate({"TableName": T}).total_segments == 1
    assert (
        "must be less than"
        in failure(scan.validate, {"TableName": T, "Segment": 4, "TotalSegments": 4}).message
    )


# --- batches ----------------------------------------------------------------------------------


def test_batch_get_item_collects_tables_and_counts_keys_across_them() -> None:
    req = batch_get_item.validate({"RequestItems": {
        "aaa": {"Keys": [{"pk": {"S": "1"}}], "ConsistentRead": True, "ProjectionExpression": "pk"},
        "bbb": {"Keys": [{"pk": {"N": "1.0"}}]},
    }})  # fmt: skip
    assert [(t.table_name, t.consistent, t.keys) for t in req.tables] == [
        ("aaa", True, [{"pk": {"S": "1"}}]), ("bbb", False, [{"pk": {"N": "1"}}]),
    ]  # fmt: skip


def test_batch_get_item_refuses_a_bad_table_name_as_a_map_key_constraint() -> None:
    error = failure(batch_get_item.validate, {"RequestItems": {"a": {"Keys": [{"pk": {"S": "1"}}]}}})
    assert "Map keys must satisfy constraint" in error.message


def test_batch_write_item_accepts_25_and_refuses_26_requests() -> None:
    puts = [{"PutRequest": {"Item": {"pk": {"S": str(i)}}}} for i in range(26)]
    assert len(batch_write_item.validate({"RequestItems": {"aaa": puts[:25]}}).requests) == 25
    assert (
        "less than or equal to 25"
        in failure(batch_write_item.validate, {"RequestItems": {"aaa": puts}}).message
    )


def test_batch_write_item_needs_exactly_one_of_put_and_delete() -> None:
    both = {"PutRequest": {"Item": {"pk": {"S": "1"}}}, "DeleteRequest": {"Key": {"pk": {"S": "1"}}}}
    error = failure(batch_write_item.validate, {"RequestItems": {"aaa": [both]}})
    assert error.message.startswith("Supplied AttributeValue has more than one datatypes set")


# --- tables and tags ----------------------------------------------------------------------------


def test_update_table_refuses_what_partita_does_not_do_yet() -> None:
    error = failure(update_table.validate, {"TableName": T, "SSESpecification": {"Enabled": True}})
    assert error.message == "Partita does not support updating SSESpecification yet"


def test_update_table_reads_mode_and_throughput() -> None:
    req = update_table.validate({"TableName": T, "BillingMode": "PROVISIONED",
                                 "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4}})  # fmt: skip
    assert (req.billing_mode, req.read_capacity, req.write_capacity) == ("PROVISIONED", 3, 4)


def test_tag_arns_name_the_table() -> None:
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"
    req = tag_resource.validate({"ResourceArn": arn, "Tags": [{"Key": "a", "Value": "b"}]})
    assert (req.table_name, req.tags) == ("Orders", [("a", "b")])
    assert untag_resource.validate({"ResourceArn": arn, "TagKeys": ["a"]}).keys == ["a"]
    assert failure(tag_resource.validate, {"Tags": []}).message == "Invalid TableArn"
