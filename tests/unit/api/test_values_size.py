"""Item sizes as DynamoDB counts them (400 KB limit, capacity units)."""

from __future__ import annotations

import math

import pytest

from partita.api.values import item_size, number_size, value_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("0", 1),
        ("1", 2),
        ("12", 2),
        ("123", 3),
        ("1.2", 3),
        ("12.3", 3),
        ("1.23", 3),
        ("1234", 3),
        ("120", 3),
        ("1200", 2),
        ("-1", 3),
        ("0.001", 2),
        ("1.50", 3),
        ("99999999999999999999999999999999999999", 20),
    ],
)
def test_number_size_counts_base100_digit_pairs_plus_exponent(text: str, size: int) -> None:
    assert number_size(text) == size


def test_string_size_is_utf8_length() -> None:
    assert value_size({"S": "héllo"}) == 6
    assert value_size({"S": ""}) == 0


def test_binary_size_is_decoded_length() -> None:
    assert value_size({"B": "AAEC"}) == 3
    assert value_size({"B": "AAE="}) == 2
    assert value_size({"B": "AA=="}) == 1


def test_bool_and_null_take_one_byte() -> None:
    assert value_size({"BOOL": False}) == 1
    assert value_size({"NULL": True}) == 1


def test_list_and_map_have_three_bytes_overhead_plus_one_per_element() -> None:
    assert value_size({"L": []}) == 3
    assert value_size({"M": {}}) == 3
    assert value_size({"L": [{"S": "aa"}, {"S": "b"}]}) == 3 + 3 + 2
    assert value_size({"M": {"k": {"S": "v"}, "kk": {"N": "1"}}}) == 3 + (1 + 1 + 1) + (1 + 2 + 2)


def test_sets_are_the_sum_of_their_members() -> None:
    assert value_size({"SS": ["a", "bc"]}) == 3
    assert value_size({"NS": ["1", "12.3"]}) == 5
    assert value_size({"BS": ["AAEC", "AA=="]}) == 4


def test_item_size_adds_utf8_attribute_names() -> None:
    assert item_size({"pk": {"S": "x"}, "é": {"BOOL": True}}) == 3 + 3


# Capacity figures measured on real DynamoDB by the ExtendDB project (1 WCU per KB).
@pytest.mark.parametrize(
    ("item", "wcu"),
    [
        ({"pk": {"S": "l500"}, "data": {"L": [{"S": "aa"}] * 500}}, 2),
        ({"pk": {"S": "l1500"}, "data": {"L": [{"S": "aa"}] * 1500}}, 5),
        ({"pk": {"S": "l3000"}, "data": {"L": [{"S": "aa"}] * 3000}}, 9),
        ({"pk": {"S": "under"}, "data": {"L": [{"S": "aa"}] * 130_000}}, 381),
        ({"pk": {"S": "m800"}, "data": {"M": {f"k{i}": {"S": "v"} for i in range(800)}}}, 5),
        ({"pk": {"S": "nest"}, "data": {"L": [{"M": {"a": {"S": "b"}}} for _ in range(500)]}}, 4),
        ({"pk": {"S": "mapl"}, "data": {"M": {f"k{i}": {"L": [{"S": "b"}]} for i in range(500)}}}, 5),
        ({"pk": {"S": "scalar"}, "n": {"N": "1"}, "s": {"S": "hello"}}, 1),
    ],
)
def test_item_size_matches_capacity_measured_on_dynamodb(item: dict[str, object], wcu: int) -> None:
    assert math.ceil(item_size(item) / 1024) == wcu  # type: ignore[arg-type]


def test_item_size_of_example_from_ddbitemsizer_is_141() -> None:
    item = {
        "itemType": {"S": "SLOT"},
        "id": {"S": "abc1231"},
        "hostName": {"S": "Harry Mason"},
        "timeSlot": {"S": "February 23, 1999"},
        "slotStatus": {"S": "OPEN"},
        "createdAt": {"S": "February 1, 1999"},
        "updatedAt": {"S": "February 1, 1999"},
        "expiresAt": {"N": "2099"},
    }
    assert item_size(item) == 141
