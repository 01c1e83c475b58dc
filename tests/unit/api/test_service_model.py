"""Coral's deserialization stage, compiled from botocore's DynamoDB service model.

Each case is a request body and the SerializationException text DynamoDB's framework
gives for it; the member paths cover the deep shapes the issue names (Expected.<attr>,
ExclusiveStartKey.<attr>, nested AttributeValues, RequestItems).
"""

from __future__ import annotations

from typing import Any

import pytest

from partita.api import service_model
from partita.api.service_model import MAX_NESTING, check_request
from partita.common.errors import DynamoError

LIST = "Start of list found where not expected"
MAP = "Start of structure or map found where not expected."


def serialization_message(operation: str, body: dict[str, Any]) -> str:
    with pytest.raises(DynamoError) as info:
        check_request(operation, body)
    assert info.value.code == "SerializationException"
    assert info.value.namespace == "com.amazon.coral.service"
    assert "Message" in info.value.body()  # the framework's capitalised key
    return info.value.message


@pytest.mark.parametrize(
    ("operation", "body", "message"),
    [
        ("GetItem", {"TableName": 5}, "NUMBER_VALUE cannot be converted to String"),
        ("GetItem", {"TableName": True}, "TRUE_VALUE cannot be converted to String"),
        ("GetItem", {"TableName": ["t"]}, LIST),
        ("GetItem", {"TableName": {"a": 1}}, MAP),
        ("GetItem", {"ConsistentRead": "yes"}, "STRING_VALUE cannot be converted to Boolean"),
        ("GetItem", {"ConsistentRead": 1}, "NUMBER_VALUE cannot be converted to Boolean"),
        ("GetItem", {"Key": "k"}, "Expected map or null"),
        ("GetItem", {"Key": ["k"]}, LIST),
        ("GetItem", {"Key": {"pk": "text"}}, "Expected null"),
        ("GetItem", {"Key": {"pk": {"S": 5}}}, "NUMBER_VALUE cannot be converted to String"),
        ("GetItem", {"Key": {"pk": {"B": False}}}, "FALSE_VALUE cannot be converted to Blob"),
        ("GetItem", {"AttributesToGet": "a"}, "Expected list or null"),
        ("GetItem", {"AttributesToGet": {"a": "b"}}, MAP),
        ("Scan", {"Limit": "10"}, "STRING_VALUE cannot be converted to Integer"),
        ("Scan", {"Limit": False}, "FALSE_VALUE cannot be converted to Integer"),
        ("Scan", {"ExclusiveStartKey": {"pk": {"N": 1}}}, "NUMBER_VALUE cannot be converted to String"),
        ("PutItem", {"Expected": {"a": {"Exists": "no"}}}, "STRING_VALUE cannot be converted to Boolean"),
        ("PutItem", {"Item": {"m": {"M": {"x": {"L": [{"SS": ["a", 1]}]}}}}}, "NUMBER_VALUE cannot be converted to String"),
        ("PutItem", {"Item": {"n": {"NULL": "true"}}}, "STRING_VALUE cannot be converted to Boolean"),
        ("CreateTable", {"BillingMode": [[[[]]]]}, LIST),
        ("CreateTable", {"Tags": [{"Key": None, "Value": {"a": 1}}]}, MAP),
        ("CreateTable", {"ProvisionedThroughput": {"ReadCapacityUnits": "5"}}, "STRING_VALUE cannot be converted to Long"),
        ("BatchGetItem", {"RequestItems": {"T": {"Keys": [{"pk": {"S": []}}]}}}, LIST),
        ("BatchWriteItem", {"RequestItems": {"T": [{"PutRequest": 3}]}}, "Expected null"),
    ],
)  # fmt: skip
def test_a_wrongly_typed_member_gets_corals_serialization_message(
    operation: str, body: dict[str, Any], message: str
) -> None:
    assert serialization_message(operation, body) == message


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("GetItem", {"TableName": "tab", "Key": {"pk": {"S": "a"}}, "ConsistentRead": True}),
        ("GetItem", {"TableName": "tab", "Key": {}, "Unknown": [1, {"x": 2}]}),  # unknown members are ignored
        ("PutItem", {"TableName": "tab", "Item": {"pk": {"S": "a"}, "n": {"N": "1"}, "m": {"M": {}}}}),
        ("Query", {"TableName": "tab", "Limit": 10, "ScanIndexForward": False}),
        (
            "BatchGetItem",
            {"RequestItems": {"tab": {"Keys": [None]}}},
        ),  # the operation decides on nulls in lists
        ("DescribeEndpoints", {}),
    ],
)
def test_a_well_typed_request_passes(operation: str, body: dict[str, Any]) -> None:
    check_request(operation, body)


def test_documents_nested_past_the_bound_get_the_nesting_error_not_a_recursion_error() -> None:
    value: dict[str, Any] = {"S": "leaf"}
    for _ in range(600):  # far past Python's default recursion limit in checker frames
        value = {"L": [value]}
    with pytest.raises(DynamoError) as info:
        check_request("PutItem", {"TableName": "t", "Item": {"pk": value}})
    assert (info.value.code, info.value.message) == (
        "ValidationException",
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit",
    )


def test_a_document_of_dynamodbs_32_levels_is_within_the_bound() -> None:
    value: dict[str, Any] = {"S": "leaf"}
    for _ in range(32):
        value = {"M": {"k": value}}
    check_request("BatchWriteItem", {"RequestItems": {"tab": [{"PutRequest": {"Item": {"a": value}}}]}})
    assert MAX_NESTING >= 2 * 32 + 6


def test_every_operation_partita_serves_has_a_plan_from_the_model() -> None:
    from partita.router.app import OPERATIONS

    assert set(OPERATIONS) <= set(service_model._PLANS)


# --- stage (b): constraint validation, every violation at once ----------------------------


def validation_message(operation: str, body: dict[str, Any]) -> str:
    with pytest.raises(DynamoError) as info:
        check_request(operation, body)
    assert info.value.code == "ValidationException"
    return info.value.message


def test_a_missing_required_member_is_a_not_null_violation() -> None:
    assert validation_message("GetItem", {"TableName": "tab"}) == (
        "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null"
    )


def test_null_counts_as_missing() -> None:
    assert "Value null at 'tableName'" in validation_message("GetItem", {"TableName": None, "Key": {}})


def test_every_violation_is_reported_together_with_its_member_path() -> None:
    message = validation_message(
        "Scan",
        {"TableName": "a!", "Limit": 0, "Select": "SOME", "Segment": -1, "ReturnConsumedCapacity": "ALL"},
    )
    assert message.startswith("6 validation errors detected: ")
    for part in (
        "Value 'a!' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
        "Value 'a!' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3",
        "Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1",
        "Value 'SOME' at 'select' failed to satisfy constraint: Member must satisfy enum value set: "
        "[SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]",  # DynamoDB's order
        "Value '-1' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0",
        "Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: "
        "[INDEXES, TOTAL, NONE]",
    ):
        assert part in message


def test_nested_paths_name_list_elements_and_map_entries() -> None:
    message = validation_message(
        "CreateTable",
        {
            "TableName": "tab",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "PRIMARY"}],
            "Tags": [{"Key": "", "Value": "v"}],
        },
    )
    assert "Value 'PRIMARY' at 'keySchema.1.member.keyType' failed to satisfy constraint" in message
    assert (
        "Value '' at 'tags.1.member.key' failed to satisfy constraint: Member must have length greater than or equal to 1"
        in message
    )
    # BatchGetItem's Keys, as DynamoDB's newer front end names them: by the request's
    # member names and without the value (nubo-db's conformance suite, 2026).
    batch = validation_message("BatchGetItem", {"RequestItems": {"tab": {"Keys": []}}})
    assert batch == (
        "1 validation error detected: Value at 'RequestItems.tab.member.Keys' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1"
    )


@pytest.mark.parametrize(
    ("operation", "body", "message"),
    [
        (
            "Query",
            {"TableName": "tab", "Limit": 0},
            "1 validation error detected: Value at 'Limit' failed to satisfy constraint: "
            "Member must have value greater than or equal to 1",
        ),
        (  # Scan's Limit keeps Coral's form
            "Scan",
            {"TableName": "tab", "Limit": 0},
            "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: "
            "Member must have value greater than or equal to 1",
        ),
        (
            "PutItem",
            {"TableName": "", "Item": {}},
            "1 validation error detected: Value '' at 'tableName' failed to satisfy constraint: "
            "Member must have length greater than or equal to 1",
        ),
        ("BatchGetItem", {"RequestItems": {}}, "The requestItems parameter is required for BatchGetItem"),
        ("BatchWriteItem", {}, "The requestItems parameter is required for BatchWriteItem"),
        (
            "CreateTable",
            {"KeySchema": [], "AttributeDefinitions": []},
            "The parameter 'TableName' is required but was not present in the request",
        ),
    ],
)
def test_messages_of_dynamodbs_newer_front_end(operation: str, body: dict[str, Any], message: str) -> None:
    assert validation_message(operation, body) == message


def test_map_keys_and_map_values_are_reported_on_the_map() -> None:
    message = validation_message("BatchWriteItem", {"RequestItems": {"x": [], "ok-name": [{}] * 26}})
    assert (
        "Value 'x' at 'requestItems' failed to satisfy constraint: Map keys must satisfy constraint: ["
        in message
    )
    assert "at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [" in message


def test_a_type_error_anywhere_wins_over_any_constraint_violation() -> None:
    with pytest.raises(DynamoError) as info:
        check_request("Scan", {"TableName": "a!", "Limit": 0, "ConsistentRead": "yes"})
    assert info.value.code == "SerializationException"


def test_attribute_name_keys_are_left_to_dynamodbs_own_message() -> None:
    check_request("PutItem", {"TableName": "tab", "Item": {"n" * 70000: {"S": "v"}}})
