"""Query and Scan: where a page stops for size, to the byte.

DynamoDB stops a page once the items it read reach 1 MB, counted in its storage
encoding rather than as item sizes (names one byte each, values with length prefixes, a
header per 3 KB). These are the boundary cases dynalite verified against DynamoDB: 25
items of about 42 KB under one partition key, the last one or two a few bytes longer,
and the same items with attribute names of 255 characters, which count no more.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table

pytestmark = PYTESTMARK


@pytest.fixture(scope="module")
def table_ab(ddb: Any) -> str:
    return create_table(ddb, [("a", "S"), ("b", "S")])


def _items(name: str, lengths: list[int]) -> list[dict[str, Any]]:
    pk = uuid.uuid4().hex[:10]
    return [{"a": {"S": pk}, "b": {"S": f"{i:02d}"}, name: {"S": "e" * n}} for i, n in enumerate(lengths)]


def _write(ddb: Any, table: str, items: list[dict[str, Any]]) -> None:
    requests = [{"PutRequest": {"Item": item}} for item in items]
    out = ddb.batch_write_item(RequestItems={table: requests})
    assert not out["UnprocessedItems"]


def _clear(ddb: Any, table: str, items: list[dict[str, Any]]) -> None:
    requests = [{"DeleteRequest": {"Key": {"a": item["a"], "b": item["b"]}}} for item in items]
    out = ddb.batch_write_item(RequestItems={table: requests})
    assert not out["UnprocessedItems"]


def _query(ddb: Any, table: str, items: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    out: dict[str, Any] = ddb.query(
        TableName=table,
        KeyConditionExpression="a = :a",
        ExpressionAttributeValues={":a": items[0]["a"]},
        Select="COUNT",
        ReturnConsumedCapacity="TOTAL",
        **kwargs,
    )
    return out


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {"a": item["a"], "b": item["b"]}


def test_a_page_one_byte_short_of_1_mb_has_no_last_evaluated_key(ddb: Any, table_ab: str) -> None:
    items = _items("e" * 255, [41645] * 25)
    _write(ddb, table_ab, items)
    out = _query(ddb, table_ab, items, Limit=26)
    assert (out["Count"], out["ScannedCount"]) == (25, 25)
    assert "LastEvaluatedKey" not in out
    assert out["ConsumedCapacity"]["CapacityUnits"] == 128


def test_the_item_that_reaches_1_mb_ends_the_page_and_is_its_last_key(ddb: Any, table_ab: str) -> None:
    items = _items("e", [41645] * 24 + [41646])
    _write(ddb, table_ab, items)
    out = _query(ddb, table_ab, items)
    assert (out["Count"], out["ScannedCount"]) == (25, 25)
    assert out["LastEvaluatedKey"] == _key(items[24])
    assert out["ConsumedCapacity"]["CapacityUnits"] == 127.5


def test_an_item_that_crosses_1_mb_is_in_the_page(ddb: Any, table_ab: str) -> None:
    items = _items("e" * 255, [43372] * 23 + [43387, 44999])
    _write(ddb, table_ab, items)
    out = _query(ddb, table_ab, items)
    assert (out["Count"], out["ScannedCount"]) == (25, 25)
    assert out["LastEvaluatedKey"] == _key(items[24])
    assert out["ConsumedCapacity"]["CapacityUnits"] == 133.5


def test_a_page_reaching_1_mb_one_item_early_leaves_the_last_for_the_next(ddb: Any, table_ab: str) -> None:
    items = _items("e", [43372] * 23 + [43388, 44999])
    _write(ddb, table_ab, items)
    out = _query(ddb, table_ab, items)
    assert (out["Count"], out["ScannedCount"]) == (24, 24)
    assert out["LastEvaluatedKey"] == _key(items[23])
    assert out["ConsumedCapacity"]["CapacityUnits"] == 127.5
    rest = _query(ddb, table_ab, items, ExclusiveStartKey=out["LastEvaluatedKey"])
    assert (rest["Count"], "LastEvaluatedKey" in rest) == (1, False)


def test_a_scan_page_stops_where_a_query_page_does(ddb: Any) -> None:
    table = create_table(ddb, [("a", "S"), ("b", "S")])
    for name, lengths, count in (
        ("e" * 255, [41645] * 25, 25),
        ("e", [43372] * 23 + [43388, 44999], 24),
    ):
        items = _items(name, lengths)
        _write(ddb, table, items)
        out = ddb.scan(TableName=table, Select="COUNT", Limit=26)
        assert (out["Count"], out["ScannedCount"]) == (count, count)
        assert out.get("LastEvaluatedKey") == (None if count == 25 else _key(items[23]))
        _clear(ddb, table, items)
    ddb.delete_table(TableName=table)
