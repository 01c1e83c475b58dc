"""Attribute values, items and item requests as clients send them: DynamoDB's errors."""

from __future__ import annotations

from typing import Any

import pytest

from partita.api import item
from partita.api.item import MAX_ITEM_BYTES, check_item, check_value
from partita.api.operations import delete_item, get_item, put_item
from partita.common.errors import DynamoError

INVALID = "One or more parameter values were invalid: "
EMPTY_AV = "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"


def failure(call: Any, *args: Any) -> DynamoError:
    with pytest.raises(DynamoError) as err:
        call(*args)
    return err.value


def nested(levels: int) -> dict[str, Any]:
    """A value `levels` maps deep around a string leaf (leaf at level levels + 1)."""
    v: dict[str, Any] = {"S": "leaf"}
    for _ in range(levels):
        v = {"M": {"n": v}}
    return v


# --- single values --------------------------------------------------------------------


@pytest.mark.parametrize(
    "av",
    [
        {"S": ""},
        {"S": "héllo"},
        {"B": "AAEC"},
        {"BOOL": False},
        {"NULL": True},
        {"SS": ["a", "b"]},
        {"BS": ["AA==", "AQ=="]},
        {"L": []},
        {"M": {}},
        {"L": [{"S": "x"}, {"M": {"k": {"BOOL": True}}}]},
    ],
)
def test_valid_values_are_returned_unchanged(av: dict[str, Any]) -> None:
    assert check_value(av) == av


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("1.50", "1.5"), ("0001", "1"), ("-0.0", "0"), ("1E+2", "100"), ("1.23e-3", "0.00123")],
)
def test_numbers_come_back_in_canonical_form(given: str, canonical: str) -> None:
    assert check_value({"N": given}) == {"N": canonical}


def test_numbers_inside_maps_lists_and_sets_are_canonical_too() -> None:
    av = {"M": {"a": {"L": [{"N": "2.50"}, {"NS": ["1.0", "3"]}]}}}
    assert check_value(av) == {"M": {"a": {"L": [{"N": "2.5"}, {"NS": ["1", "3"]}]}}}


@pytest.mark.parametrize("text", ["abc", "", "1e999", "NaN", " 1", "1_000"])
def test_invalid_numbers_are_validation_errors(text: str) -> None:
    assert failure(check_value, {"N": text}).code == "ValidationException"


def test_an_empty_attribute_value_is_refused() -> None:
    error = failure(check_value, {})
    assert (error.code, error.message) == ("ValidationException", EMPTY_AV)


def test_an_attribute_value_with_two_types_is_refused() -> None:
    error = failure(check_value, {"S": "a", "N": "1"})
    assert error.message == (
        "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"
    )


def test_an_unknown_type_is_an_empty_attribute_value() -> None:
    assert failure(check_value, {"X": "1"}).message == EMPTY_AV


@pytest.mark.parametrize(
    "av",
    [
        "a string",
        ["S", "a"],
        {"S": 1},
        {"N": 1},
        {"B": 5},
        {"BOOL": "true"},
        {"NULL": "yes"},
        {"M": []},
        {"L": {}},
        {"SS": "a"},
        {"SS": [1]},
        {"NS": [1]},
    ],
)
def test_values_of_the_wrong_json_type_are_serialization_errors(av: Any) -> None:
    assert failure(check_value, av).code == "SerializationException"


@pytest.mark.parametrize("text", ["A", "AAE", "!!!!", "AA=A"])
def test_malformed_base64_is_a_serialization_error(text: str) -> None:
    assert failure(check_value, {"B": text}).code == "SerializationException"
    assert failure(check_value, {"BS": [text]}).code == "SerializationException"


def test_null_false_is_refused_with_dynamodbs_message() -> None:
    assert failure(check_value, {"NULL": False}).message == (
        INVALID + "Null attribute value types must have the value of true"
    )


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("SS", "An string set  may not be empty"),
        ("NS", "An number set  may not be empty"),
        ("BS", "Binary sets should not be empty"),  # as recorded against DynamoDB (dynalite's tests)
    ],
)
def test_empty_sets_are_refused(kind: str, text: str) -> None:
    assert failure(check_value, {kind: []}).message == INVALID + text


def test_duplicate_binary_set_members_use_dynamodbs_bs_wording() -> None:
    assert failure(check_value, {"BS": ["Yg==", "Yg=="]}).message == (
        INVALID + "Input collection [Yg==, Yg==]of type BS contains duplicates."
    )


def test_duplicate_set_members_are_refused() -> None:
    assert failure(check_value, {"SS": ["a", "b", "a"]}).message == (
        INVALID + "Input collection [a, b, a] contains duplicates."
    )


def test_numbers_equal_after_canonicalisation_are_duplicates() -> None:
    assert failure(check_value, {"NS": ["1", "1.0"]}).code == "ValidationException"


def test_nesting_up_to_32_levels_is_accepted() -> None:
    assert check_value(nested(31)) == nested(31)


def test_nesting_beyond_32_levels_is_refused() -> None:
    error = failure(check_value, nested(32))
    assert error.code == "ValidationException"
    assert error.message.startswith(
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


def test_nesting_through_lists_counts_the_same() -> None:
    v: dict[str, Any] = {"N": "1"}
    for _ in range(32):
        v = {"L": [v]}
    assert failure(check_value, v).message.startswith(
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


# --- whole items ----------------------------------------------------------------------


def test_check_item_canonicalises_every_attribute() -> None:
    assert check_item({"pk": {"S": "a"}, "n": {"N": "10.0"}}) == {"pk": {"S": "a"}, "n": {"N": "10"}}


def test_an_item_that_is_not_a_map_is_a_serialization_error() -> None:
    assert failure(check_item, [{"S": "a"}]).code == "SerializationException"


def test_an_empty_attribute_name_is_refused() -> None:
    assert failure(check_item, {"": {"S": "a"}}).code == "ValidationException"


def test_an_item_of_exactly_400_kb_is_accepted() -> None:
    big = {"pk": {"S": "x" * (MAX_ITEM_BYTES - 2)}}  # name (2 bytes) + value
    assert check_item(big) == big


def test_an_item_over_400_kb_is_refused() -> None:
    error = failure(check_item, {"pk": {"S": "x" * (MAX_ITEM_BYTES - 1)}})
    assert (error.code, error.message) == (
        "ValidationException",
        "Item size has exceeded the maximum allowed size",
    )


def test_the_size_limit_counts_canonical_numbers() -> None:
    # "1.000...0" shrinks to "1": the item fits once canonical, as DynamoDB stores it.
    padding = "x" * (MAX_ITEM_BYTES - 2 - 1 - 3)
    fits = {"pk": {"S": padding}, "n": {"N": "1." + "0" * 30}}
    assert check_item(fits)["n"] == {"N": "1"}
    assert item.MAX_ITEM_BYTES == 400 * 1024


# --- PutItem / GetItem / DeleteItem requests ------------------------------------------


def put_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"TableName": "Orders", "Item": {"pk": {"S": "a"}, "n": {"N": "1.50"}}}
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


def test_put_item_request_is_validated_into_a_canonical_item() -> None:
    req = put_item.validate(put_body(ReturnValues="ALL_OLD"))
    assert req.table_name == "Orders"
    assert req.item == {"pk": {"S": "a"}, "n": {"N": "1.5"}}
    assert req.return_old is True
    assert put_item.validate(put_body()).return_old is False


def test_put_item_without_table_name_and_item_reports_both() -> None:
    error = failure(put_item.validate, {})
    assert error.message == (
        "2 validation errors detected: "
        "Value null at 'tableName' failed to satisfy constraint: Member must not be null; "
        "Value null at 'item' failed to satisfy constraint: Member must not be null"
    )


@pytest.mark.parametrize("rv", ["ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"])
def test_put_and_delete_accept_only_all_old_or_none(rv: str) -> None:
    expected = "ReturnValues can only be ALL_OLD or NONE"
    assert failure(put_item.validate, put_body(ReturnValues=rv)).message == expected
    delete = {"TableName": "Orders", "Key": {"pk": {"S": "a"}}, "ReturnValues": rv}
    assert failure(delete_item.validate, delete).message == expected


def test_a_return_values_outside_the_enum_is_a_constraint_violation() -> None:
    assert failure(put_item.validate, put_body(ReturnValues="SOME")).message == (
        "1 validation error detected: Value 'SOME' at 'returnValues' failed to satisfy constraint: "
        "Member must satisfy enum value set: [NONE, ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW]"
    )


def test_return_consumed_capacity_outside_the_enum_is_a_constraint_violation() -> None:
    assert failure(put_item.validate, put_body(ReturnConsumedCapacity="ALL")).message == (
        "1 validation error detected: Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: "
        "Member must satisfy enum value set: [INDEXES, TOTAL, NONE]"
    )


def test_get_item_takes_key_and_consistent_read() -> None:
    req = get_item.validate({"TableName": "Orders", "Key": {"pk": {"S": "a"}}, "ConsistentRead": True})
    assert (req.table_name, req.key, req.consistent) == ("Orders", {"pk": {"S": "a"}}, True)
    assert get_item.validate({"TableName": "Orders", "Key": {}}).consistent is False


def test_get_item_without_key_is_refused() -> None:
    assert failure(get_item.validate, {"TableName": "Orders"}).message == (
        "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null"
    )


def test_get_item_consistent_read_must_be_a_boolean() -> None:
    body = {"TableName": "Orders", "Key": {"pk": {"S": "a"}}, "ConsistentRead": "yes"}
    assert failure(get_item.validate, body).code == "SerializationException"


def test_get_item_ignores_return_values_which_it_does_not_have() -> None:
    # GetItem has no ReturnValues member; AWS JSON services ignore unknown members.
    req = get_item.validate({"TableName": "Orders", "Key": {"pk": {"S": "a"}}, "ReturnValues": "BOGUS"})
    assert req.table_name == "Orders"


def test_delete_item_with_all_old_returns_old() -> None:
    req = delete_item.validate({"TableName": "Orders", "Key": {"pk": {"S": "a"}}, "ReturnValues": "ALL_OLD"})
    assert req.return_old is True


def test_a_bad_table_name_in_an_item_request_is_a_constraint_violation() -> None:
    error = failure(get_item.validate, {"TableName": "a$", "Key": {}})
    assert error.message.startswith("2 validation errors detected: Value 'a$' at 'tableName'")
