"""DynamoDB's item and request limits, with its messages, across the data operations."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, key, validation

pytestmark = PYTESTMARK

KB = 1024


def _nested(depth: int) -> dict[str, Any]:
    """An attribute value nested `depth` levels deep (a scalar is depth 1)."""
    value: dict[str, Any] = {"S": "leaf"}
    for _ in range(depth - 1):
        value = {"M": {"m": value}}
    return value


def test_an_item_of_exactly_400_kb_is_stored(ddb: Any, table_s: str) -> None:
    pk = key()
    pad = 400 * KB - (2 + len(pk)) - 3  # "pk" + value + "pad" + value
    ddb.put_item(TableName=table_s, Item={"pk": {"S": pk}, "pad": {"S": "x" * pad}})
    got = ddb.get_item(TableName=table_s, Key={"pk": {"S": pk}})["Item"]
    assert len(got["pad"]["S"]) == pad


def test_an_item_one_byte_over_400_kb_is_refused(ddb: Any, table_s: str) -> None:
    pk = key()
    pad = 400 * KB - (2 + len(pk)) - 3 + 1
    assert validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": pk}, "pad": {"S": "x" * pad}}) == (
        "Item size has exceeded the maximum allowed size"
    )


def test_nesting_to_32_levels_is_allowed_and_33_refused(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "deep": _nested(32)})
    assert validation(ddb.put_item, TableName=table_s, Item={**k, "deep": _nested(33)}) == (
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


def test_an_update_cannot_nest_past_32_levels(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "m": _nested(2)})
    message = validation(
        ddb.update_item, TableName=table_s, Key=k, UpdateExpression="SET m.inside = :v",
        ExpressionAttributeValues={":v": _nested(32)},
    )  # fmt: skip
    assert (
        message
        == "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


@pytest.mark.parametrize(
    ("number", "message"),
    [
        ("1" * 39, "Attempting to store more than 38 significant digits in a Number"),
        ("1e126", "Number overflow. Attempting to store a number with magnitude larger than supported range"),
        (
            "1e-131",
            "Number underflow. Attempting to store a number with magnitude smaller than supported range",
        ),
        ("12abc", "The parameter cannot be converted to a numeric value: 12abc"),
        ("", "The parameter cannot be converted to a numeric value"),
        (" 1", "The parameter cannot be converted to a numeric value:  1"),
        ("NaN", "The parameter cannot be converted to a numeric value: NaN"),
        (
            "1.0e100000000",
            "Number overflow. Attempting to store a number with magnitude larger than supported range",
        ),
    ],
)
def test_numbers_beyond_dynamodb_limits_are_refused(
    ddb: Any, table_s: str, number: str, message: str
) -> None:
    assert (
        validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "n": {"N": number}}) == message
    )


def test_numbers_at_the_limits_are_stored_exactly(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    values = {
        "a": "9" * 38,
        "b": "9.9999999999999999999999999999999999999e125",
        "c": "1e-130",
        "d": "-0.000100",
    }
    ddb.put_item(TableName=table_s, Item={**k, **{n: {"N": v} for n, v in values.items()}})
    got = ddb.get_item(TableName=table_s, Key=k)["Item"]
    assert got["a"] == {"N": "9" * 38}
    assert got["c"] == {"N": "0." + "0" * 129 + "1"}
    assert got["d"] == {"N": "-0.0001"}


def test_partition_keys_up_to_2048_bytes(ddb: Any, table_s: str) -> None:
    ddb.put_item(TableName=table_s, Item={"pk": {"S": "é" * 1024}})  # 2048 UTF-8 bytes
    assert validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": "é" * 1024 + "x"}}) == (
        "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
    )


def test_sort_keys_up_to_1024_bytes(ddb: Any, table_sb: str) -> None:
    ddb.put_item(TableName=table_sb, Item={"pk": {"S": key()}, "sk": {"B": b"\x01" * 1024}})
    assert validation(
        ddb.put_item, TableName=table_sb, Item={"pk": {"S": key()}, "sk": {"B": b"\x01" * 1025}}
    ) == (
        "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit "
        "of 1024 bytes"
    )


def test_empty_strings_and_binaries_are_allowed_outside_keys(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item={**k, "s": {"S": ""}, "b": {"B": b""}, "m": {"M": {"e": {"S": ""}}}})
    got = ddb.get_item(TableName=table_s, Key=k)["Item"]
    assert (got["s"], got["b"], got["m"]) == ({"S": ""}, {"B": b""}, {"M": {"e": {"S": ""}}})


def test_an_empty_binary_key_is_refused(ddb: Any, table_b: str) -> None:
    assert validation(ddb.put_item, TableName=table_b, Item={"pk": {"B": b""}}) == (
        "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an "
        "empty binary value. Key: pk"
    )


def test_an_empty_set_is_refused(ddb: Any, table_s: str) -> None:
    # PutItem words it as a list of one (moto's AWS-verified test_put_item_empty_set, 2026).
    assert validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "s": {"SS": []}}) == (
        "1 validation error detected: One or more parameter values were invalid: An string set  may not be empty"
    )


def test_a_set_with_duplicates_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}, "s": {"SS": ["a", "a"]}})
    assert (
        message == "One or more parameter values were invalid: Input collection [a, a] contains duplicates."
    )


def test_an_expression_over_4_kb_is_refused(ddb: Any, table_s: str) -> None:
    condition = "attribute_not_exists(pk)" + " AND attribute_not_exists(pk)" * 150
    assert len(condition) > 4096
    message = validation(
        ddb.put_item, TableName=table_s, Item={"pk": {"S": key()}}, ConditionExpression=condition
    )
    assert message == (
        f"Invalid ConditionExpression: Expression size has exceeded the maximum allowed size; "
        f"expression size: {len(condition)}"
    )


def test_an_expression_of_4_kb_is_accepted(ddb: Any, table_s: str) -> None:
    base = "attribute_not_exists(pk)"
    condition = base + " OR attribute_not_exists(pk)" * ((4096 - len(base)) // 28)
    condition += " " * (4096 - len(condition))
    assert len(condition) == 4096
    ddb.put_item(TableName=table_s, Item={"pk": {"S": key()}}, ConditionExpression=condition)
