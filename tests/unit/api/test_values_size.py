"""Item sizes as DynamoDB counts them (400 KB limit, capacity units)."""

from __future__ import annotations

import base64
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partita.api.values import (
    PAGE_CHUNK_BYTES,
    PAGE_CHUNK_HEADER_BYTES,
    item_size,
    number_size,
    sizes,
    value_size,
)


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


# --- what an item counts toward a Query's or Scan's 1 MB page ----------------------------

PAGE = 1024 * 1024


def _dynalite_item(name: str, length: int) -> dict[str, dict[str, str]]:
    """The items of dynalite's DynamoDB-verified page-limit tests: a 10-character
    partition key `a`, a 2-character sort key `b`, one long string."""
    return {"a": {"S": "A" * 10}, "b": {"S": "07"}, name: {"S": "e" * length}}


def _page_stops_after(items: list[dict[str, dict[str, str]]]) -> int | None:
    """How many items a page holds before it stops for size (None: it never does)."""
    total = 0
    for read, item in enumerate(items, 1):
        total += sizes(item, "b")[1]
        if total >= PAGE:
            return read
    return None


def test_a_top_level_name_counts_one_byte_toward_a_page_whatever_its_length() -> None:
    assert sizes(_dynalite_item("e", 41645), "b")[1] == sizes(_dynalite_item("e" * 255, 41645), "b")[1]
    assert item_size(_dynalite_item("e", 41645)) != item_size(_dynalite_item("e" * 255, 41645))


def test_a_string_counts_its_length_prefix_and_the_item_a_header_per_3_kb_with_the_sort_key() -> None:
    # a: 1 + 10 + 1; e: 1 + 41645 + 3 (a prefix of 3 bytes from 16 KB); the sort key
    # apart; 2 bytes, then 14 chunks of 3 KB, each 18 bytes plus the sort key's 2.
    assert sizes(_dynalite_item("e", 41645), "b")[1] == 2 + 12 + 41649 + 14 * 20
    short = {"a": {"S": "x"}}
    assert sizes(short, None)[1] == 2 + (1 + 1 + 1) + 18
    assert sizes({"a": {"S": "x" * 127}}, None)[1] == 2 + 1 + 128 + 18
    assert sizes({"a": {"S": "x" * 128}}, None)[1] == 2 + 1 + 130 + 18


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ({"N": "12"}, 2 + 1),
        ({"B": "AAEC"}, 3 + 1),
        ({"BOOL": True}, 1),
        ({"NULL": True}, 0),
        ({"SS": ["ab", "c"]}, 3 + 2 + 1),
        ({"L": [{"S": "ab"}, {"BOOL": False}]}, 3 + (1 + 3) + (1 + 1)),
        ({"M": {"k": {"S": "ab"}}}, 3 + 1 + (1 + 3)),
    ],
)
def test_each_type_counts_its_stored_encoding_toward_a_page(value: dict[str, object], stored: int) -> None:
    assert sizes({"x": value}, None)[1] == 2 + 1 + stored + 18  # type: ignore[dict-item]


def test_the_header_grows_every_3_kb_of_the_item() -> None:
    below = {"a": {"S": "x" * (PAGE_CHUNK_BYTES - 8)}}  # 1 + 3064 + 2 = 3067 bytes, +1 < 3072
    above = {"a": {"S": "x" * (PAGE_CHUNK_BYTES - 2)}}
    assert sizes(below, None)[1] == 2 + 3067 + 18
    assert sizes(above, None)[1] == 2 + 3073 + 2 * 18


@pytest.mark.parametrize(
    ("name", "lengths", "stops_after"),
    [
        # "should not return LastEvaluatedKey if just under limit": 25 long names, 1 MB less one byte.
        ("e" * 255, [41645] * 25, None),
        # "should return LastEvaluatedKey if just over limit": the 25th item reaches 1 MB.
        ("e", [41645] * 24 + [41646], 25),
        # "should return all if just under limit": the 24th item falls one byte short, the 25th crosses.
        ("e" * 255, [43372] * 23 + [43387, 44999], 25),
        # "should return one less than all if just over limit": the 24th item reaches 1 MB.
        ("e", [43372] * 23 + [43388, 44999], 24),
    ],
)
def test_dynalites_dynamodb_verified_page_boundaries(
    name: str, lengths: list[int], stops_after: int | None
) -> None:
    assert _page_stops_after([_dynalite_item(name, n) for n in lengths]) == stops_after


_scalar_values = st.one_of(
    st.text(max_size=300).map(lambda v: {"S": v}),
    st.integers(-(10**30), 10**30).map(lambda v: {"N": str(v)}),
    st.binary(max_size=40).map(lambda v: {"B": base64.b64encode(v).decode()}),
    st.booleans().map(lambda v: {"BOOL": v}),
    st.just({"NULL": True}),
    st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3, unique=True).map(lambda v: {"SS": v}),
)
_any_values = st.recursive(
    _scalar_values,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.text(min_size=1, max_size=20), inner, max_size=3).map(lambda v: {"M": v}),
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(min_size=1, max_size=30), _any_values, min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_one_pass_gives_the_items_size_and_its_page_size(item: dict[str, Any]) -> None:
    sort_key = next(iter(item))
    size, page = sizes(item, sort_key)
    assert size == item_size(item)
    # Every attribute but the sort key costs at least its name's byte and its value's
    # shortest encoding (a NULL's nothing), and the item at least one chunk header.
    floor = 2 + PAGE_CHUNK_HEADER_BYTES + sum(1 for name in item if name != sort_key)
    assert page >= floor
