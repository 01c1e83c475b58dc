"""Ordering and equality of attribute values as DynamoDB defines them."""

from __future__ import annotations

import base64
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from partita.api.values import compare, set_contains, values_equal

_numbers = st.decimals(
    allow_nan=False, allow_infinity=False, places=None, min_value=-(10**30), max_value=10**30
)


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@given(_numbers, _numbers)
def test_numbers_order_numerically(a: Decimal, b: Decimal) -> None:
    expected = _sign((a > b) - (a < b))
    assert compare({"N": str(a)}, {"N": str(b)}) == expected


@given(st.text(), st.text())
def test_strings_order_by_utf8_bytes(a: str, b: str) -> None:
    x, y = a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    assert compare({"S": a}, {"S": b}) == _sign((x > y) - (x < y))


@given(st.binary(), st.binary())
def test_binaries_order_by_unsigned_bytes(a: bytes, b: bytes) -> None:
    wire_a = {"B": base64.b64encode(a).decode()}
    wire_b = {"B": base64.b64encode(b).decode()}
    assert compare(wire_a, wire_b) == _sign((a > b) - (a < b))


def test_byte_128_sorts_after_127() -> None:
    assert compare({"B": base64.b64encode(b"\x80").decode()}, {"B": base64.b64encode(b"\x7f").decode()}) == 1


def test_values_of_different_or_unordered_types_do_not_compare() -> None:
    assert compare({"N": "1"}, {"S": "1"}) is None
    assert compare({"BOOL": True}, {"BOOL": False}) is None
    assert compare({"SS": ["a"]}, {"SS": ["a"]}) is None


def test_numbers_equal_by_value() -> None:
    assert values_equal({"N": "1.50"}, {"N": "1.5"})
    assert not values_equal({"N": "1"}, {"S": "1"})


def test_sets_compare_as_sets() -> None:
    assert values_equal({"SS": ["a", "b"]}, {"SS": ["b", "a"]})
    assert values_equal({"NS": ["1", "2.0"]}, {"NS": ["2", "1"]})
    assert not values_equal({"SS": ["a", "b"]}, {"SS": ["a"]})
    assert values_equal({"BS": ["AQ==", "Ag=="]}, {"BS": ["Ag==", "AQ=="]})


def test_maps_and_lists_compare_deeply_and_lists_keep_order() -> None:
    assert values_equal({"M": {"a": {"L": [{"N": "1"}]}}}, {"M": {"a": {"L": [{"N": "1.0"}]}}})
    assert not values_equal({"L": [{"N": "1"}, {"N": "2"}]}, {"L": [{"N": "2"}, {"N": "1"}]})
    assert not values_equal({"M": {"a": {"N": "1"}}}, {"M": {"b": {"N": "1"}}})


def test_set_membership_matches_the_member_type() -> None:
    assert set_contains({"NS": ["1.0", "2"]}, {"N": "1"})
    assert not set_contains({"NS": ["1"]}, {"S": "1"})
    assert set_contains({"SS": ["a"]}, {"S": "a"})
