"""Scan: the order DynamoDB returns a table's items in, and its parallel-scan segments.

DynamoDB places a partition key by the MD5 of "Outliers" and the key's bytes, and a Scan
walks that hash space in order; Segment i of T holds the i-th T-th of it. The expected
orders are DynamoDB's own: dynalite's scan tests, run against DynamoDB, and moto's
AWS-verified test_scan_with_alternating_hash_keys.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, all_pages, create_table

pytestmark = PYTESTMARK


def _fresh(ddb: Any, kind: str, values: list[str]) -> str:
    table = create_table(ddb, [("a", kind)])
    requests = [{"PutRequest": {"Item": {"a": {kind: v}}}} for v in values]
    assert not ddb.batch_write_item(RequestItems={table: requests})["UnprocessedItems"]
    return table


def _scanned(ddb: Any, table: str, kind: str, **kwargs: Any) -> list[str]:
    items, _ = all_pages(ddb.scan, TableName=table, **kwargs)
    return [item["a"][kind] for item in items]


@pytest.mark.parametrize(
    ("kind", "values", "order"),
    [
        (
            "S",
            [str(i) for i in range(10)] + ["aardman", "hello", "zapf", "äáöü"],
            ["2", "8", "9", "1", "6", "hello", "0", "5", "4", "äáöü", "aardman", "7", "3", "zapf"],
        ),
        (
            "N",
            [str(i) for i in range(10)] + ["-0.09", "999.9", "0.012345", "-999.9"],
            ["7", "999.9", "8", "3", "2", "-999.9", "9", "4", "-0.09", "6", "1", "0", "0.012345", "5"],
        ),
    ],
    ids=["string", "number"],
)
def test_keys_come_back_in_dynamodbs_hash_order(
    ddb: Any, kind: str, values: list[str], order: list[str]
) -> None:
    table = _fresh(ddb, kind, values)
    assert _scanned(ddb, table, kind) == order
    # Three at a time, as moto's verified test pages: the same order across pages.
    assert _scanned(ddb, table, kind, Limit=3) == order


@pytest.mark.parametrize(
    ("kind", "where"),
    [("S", {"3635": 0, "228": 0, "1668": 1, "3435": 4}), ("N", {"251": 1, "2388": 4095})],
)
def test_a_key_is_in_dynamodbs_parallel_scan_segment(ddb: Any, kind: str, where: dict[str, int]) -> None:
    table = _fresh(ddb, kind, list(where))
    for value, segment in where.items():
        assert value in _scanned(ddb, table, kind, Segment=segment, TotalSegments=4096)


def test_items_of_one_partition_key_come_back_together_in_sort_key_order(ddb: Any) -> None:
    # moto's AWS-verified test: "A" hashes before "B".
    table = create_table(ddb, [("pk", "S"), ("sk", "S")])
    items = [("A" if i % 2 else "B", str(i)) for i in range(8)] + [("A", str(i)) for i in range(20, 15, -1)]
    requests = [{"PutRequest": {"Item": {"pk": {"S": pk}, "sk": {"S": sk}}}} for pk, sk in items]
    assert not ddb.batch_write_item(RequestItems={table: requests})["UnprocessedItems"]
    items, pages = all_pages(ddb.scan, TableName=table, Limit=3)
    got = [(i["pk"]["S"], i["sk"]["S"]) for i in items]
    assert pages == 5
    assert got == [("A", s) for s in ("1", "16", "17", "18", "19", "20", "3", "5", "7")] + [
        ("B", s) for s in ("0", "2", "4", "6")
    ]
