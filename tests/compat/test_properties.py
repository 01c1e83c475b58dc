"""Properties over random data: items round-trip unchanged; Query order is sort-key order.

Example counts are bounded so each property runs in a few seconds against the cluster.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from partita.common import numbers
from tests.compat.helpers import PYTESTMARK, key

pytestmark = PYTESTMARK

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text without lone surrogates (JSON cannot carry them; DynamoDB refuses them).
texts = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
names = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8)


@st.composite
def number_texts(draw: st.DrawFn) -> str:
    """A storable DynamoDB number, as canonical text (what the service answers)."""
    mantissa = draw(st.integers(-(10**20), 10**20))
    exponent = draw(st.integers(-60, 60))
    return numbers.format_number(numbers.check_limits(Decimal(mantissa).scaleb(exponent)))


def scalar_values() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        texts.map(lambda s: {"S": s}),
        number_texts().map(lambda n: {"N": n}),
        st.binary(max_size=12).map(lambda b: {"B": b}),
        st.booleans().map(lambda b: {"BOOL": b}),
        st.just({"NULL": True}),
        st.lists(texts, min_size=1, max_size=4, unique=True).map(lambda v: {"SS": v}),
        st.lists(number_texts(), min_size=1, max_size=4, unique_by=lambda n: Decimal(n)).map(
            lambda v: {"NS": v}
        ),
        st.lists(st.binary(max_size=6), min_size=1, max_size=4, unique=True).map(lambda v: {"BS": v}),
    )


attribute_values = st.recursive(
    scalar_values(),
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(names, children, max_size=3).map(lambda v: {"M": v}),
    ),
    max_leaves=8,
)


def _comparable(av: dict[str, Any]) -> Any:
    """A value with set members in a canonical order (DynamoDB keeps no set order)."""
    ((kind, value),) = av.items()
    if kind in ("SS", "BS"):
        return (kind, sorted(value))
    if kind == "NS":
        return (kind, sorted(value, key=Decimal))
    if kind == "L":
        return (kind, [_comparable(v) for v in value])
    if kind == "M":
        return (kind, {k: _comparable(v) for k, v in value.items()})
    return (kind, value)


@SETTINGS
@given(attributes=st.dictionaries(names.filter(lambda n: n != "pk"), attribute_values, max_size=6))
def test_random_items_round_trip_unchanged(ddb: Any, table_s: str, attributes: dict[str, Any]) -> None:
    k = {"pk": {"S": key()}}
    item = {**k, **attributes}
    ddb.put_item(TableName=table_s, Item=item)
    got = ddb.get_item(TableName=table_s, Key=k, ConsistentRead=True)["Item"]
    assert {n: _comparable(v) for n, v in got.items()} == {n: _comparable(v) for n, v in item.items()}


def _write_all(ddb: Any, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        assert ddb.batch_write_item(RequestItems={table: batch})["UnprocessedItems"] == {}


def _query_sort_keys(ddb: Any, table: str, pk: str, kind: str, forward: bool) -> list[Any]:
    out = ddb.query(
        TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": pk}},
        ScanIndexForward=forward, ConsistentRead=True,
    )  # fmt: skip
    return [item["sk"][kind] for item in out["Items"]]


QUERY_SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@QUERY_SETTINGS
@given(sort_keys=st.lists(number_texts(), min_size=1, max_size=20, unique_by=lambda n: Decimal(n)))
def test_query_order_is_numeric_order_of_number_sort_keys(
    ddb: Any, table_sn: str, sort_keys: list[str]
) -> None:
    pk = key()
    _write_all(ddb, table_sn, [{"pk": {"S": pk}, "sk": {"N": n}} for n in sort_keys])
    expected = sorted(sort_keys, key=Decimal)
    assert _query_sort_keys(ddb, table_sn, pk, "N", True) == expected
    assert _query_sort_keys(ddb, table_sn, pk, "N", False) == expected[::-1]


@QUERY_SETTINGS
@given(sort_keys=st.lists(texts.filter(bool), min_size=1, max_size=20, unique=True))
def test_query_order_is_utf8_byte_order_of_string_sort_keys(
    ddb: Any, table_ss: str, sort_keys: list[str]
) -> None:
    pk = key()
    _write_all(ddb, table_ss, [{"pk": {"S": pk}, "sk": {"S": s}} for s in sort_keys])
    expected = sorted(sort_keys, key=lambda s: s.encode())
    assert _query_sort_keys(ddb, table_ss, pk, "S", True) == expected


@QUERY_SETTINGS
@given(sort_keys=st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=20, unique=True))
def test_query_order_is_unsigned_byte_order_of_binary_sort_keys(
    ddb: Any, table_sb: str, sort_keys: list[bytes]
) -> None:
    pk = key()
    _write_all(ddb, table_sb, [{"pk": {"S": pk}, "sk": {"B": b}} for b in sort_keys])
    assert _query_sort_keys(ddb, table_sb, pk, "B", True) == sorted(sort_keys)
