"""Scan: serialization, validation, functionality (all partitions, paging, segments)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, all_pages, create_table, error_type, key, raw_call, validation

pytestmark = PYTESTMARK

ITEMS = 60


@pytest.fixture(scope="module")
def filled(ddb: Any) -> str:
    """A table of its own holding exactly ITEMS items, spread over every partition."""
    name = create_table(ddb, [("pk", "S")], prefix="scan")
    for i in range(ITEMS):
        ddb.put_item(
            TableName=name,
            Item={"pk": {"S": f"item-{i:03d}"}, "i": {"N": str(i)}, "odd": {"BOOL": i % 2 == 1}},
        )
    return name


def _ids(items: list[dict[str, Any]]) -> list[int]:
    return sorted(int(item["i"]["N"]) for item in items)


# --- serialization ------------------------------------------------------------------------


def test_a_segment_that_is_not_a_number_is_a_serialization_exception(cluster: Any, filled: str) -> None:
    status, out = raw_call(
        cluster, "Scan", json.dumps({"TableName": filled, "Segment": "1", "TotalSegments": 2}).encode()
    )
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_a_segment_needs_total_segments(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, Segment=1) == (
        "The TotalSegments parameter is required but was not present in the request when Segment parameter is "
        "present"
    )


def test_total_segments_needs_a_segment(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, TotalSegments=2) == (
        "The Segment parameter is required but was not present in the request when parameter TotalSegments is "
        "present"
    )


def test_a_segment_must_be_below_total_segments(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, Segment=2, TotalSegments=2) == (
        "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 2 is not less "
        "than TotalSegments: 2"
    )


def test_total_segments_above_a_million_is_a_constraint_violation(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, Segment=0, TotalSegments=1_000_001) == (
        "1 validation error detected: Value '1000001' at 'totalSegments' failed to satisfy constraint: "
        "Member must have value less than or equal to 1000000"
    )


def test_specific_attributes_without_a_projection_is_refused_bare(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, Select="SPECIFIC_ATTRIBUTES") == (
        "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"
    )


def test_attributes_to_get_with_count_is_refused(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, Select="COUNT", AttributesToGet=["i"]) == (
        "Cannot specify the AttributesToGet when choosing to get only the Count"
    )


def test_a_start_key_of_another_schema_is_invalid(ddb: Any, filled: str) -> None:
    assert validation(ddb.scan, TableName=filled, ExclusiveStartKey={"pk": {"N": "1"}}) == (
        "The provided starting key is invalid: The provided key element does not match the schema"
    )


def test_a_start_key_of_another_schema_is_reported_before_an_unknown_index(ddb: Any, filled: str) -> None:
    message = validation(
        ddb.scan, TableName=filled, IndexName="index1", ExclusiveStartKey={"other": {"S": "1"}}
    )
    assert (
        message == "The provided starting key is invalid: The provided key element does not match the schema"
    )


def test_a_start_key_from_another_segment_is_refused(ddb: Any, filled: str) -> None:
    first = ddb.scan(TableName=filled, Segment=0, TotalSegments=2, Limit=1)
    message = validation(
        ddb.scan, TableName=filled, Segment=1, TotalSegments=2, ExclusiveStartKey=first["LastEvaluatedKey"]
    )
    assert message == (
        "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct "
        "Segment. TotalSegments: 2 Segment: 1"
    )


def test_scan_filter_and_filter_expression_cannot_be_mixed(ddb: Any, filled: str) -> None:
    message = validation(
        ddb.scan, TableName=filled, FilterExpression="i > :v", ExpressionAttributeValues={":v": {"N": "1"}},
        ScanFilter={"i": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "1"}]}},
    )  # fmt: skip
    assert message == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {ScanFilter} Expression parameters: {FilterExpression}"
    )


# --- functionality ---------------------------------------------------------------------------


def test_a_scan_returns_every_item_of_every_partition(ddb: Any, filled: str) -> None:
    out = ddb.scan(TableName=filled)
    assert _ids(out["Items"]) == list(range(ITEMS))
    assert (out["Count"], out["ScannedCount"], "LastEvaluatedKey" in out) == (ITEMS, ITEMS, False)


@pytest.mark.parametrize("limit", [1, 7, 59, 60])
def test_paging_with_limit_resumes_anywhere_and_sees_each_item_once(
    ddb: Any, filled: str, limit: int
) -> None:
    items, pages = all_pages(ddb.scan, TableName=filled, Limit=limit)
    assert _ids(items) == list(range(ITEMS))
    assert pages == -(-ITEMS // limit) + (1 if ITEMS % limit == 0 else 0)


def test_limit_counts_items_read_before_the_filter(ddb: Any, filled: str) -> None:
    out = ddb.scan(
        TableName=filled,
        Limit=10,
        FilterExpression="odd = :t",
        ExpressionAttributeValues={":t": {"BOOL": True}},
    )
    assert out["ScannedCount"] == 10
    assert out["Count"] == sum(1 for item in out["Items"] if item["odd"]["BOOL"])
    assert "LastEvaluatedKey" in out


@pytest.mark.parametrize("total", [1, 2, 3, 7])
def test_parallel_segments_cover_the_table_exactly_once(ddb: Any, filled: str, total: int) -> None:
    seen: list[int] = []
    for segment in range(total):
        items, _ = all_pages(ddb.scan, TableName=filled, Segment=segment, TotalSegments=total, Limit=11)
        seen.extend(_ids(items))
    assert sorted(seen) == list(range(ITEMS))


def test_filter_projection_and_count(ddb: Any, filled: str) -> None:
    out = ddb.scan(
        TableName=filled, FilterExpression="i < :v", ProjectionExpression="i",
        ExpressionAttributeValues={":v": {"N": "5"}},
    )  # fmt: skip
    assert sorted(out["Items"], key=lambda item: int(item["i"]["N"])) == [
        {"i": {"N": str(i)}} for i in range(5)
    ]
    counted = ddb.scan(TableName=filled, Select="COUNT", FilterExpression="odd = :t",
                       ExpressionAttributeValues={":t": {"BOOL": True}})  # fmt: skip
    assert "Items" not in counted and counted["Count"] == ITEMS // 2


def test_count_with_limit_keeps_paging(ddb: Any, filled: str) -> None:
    out = ddb.scan(TableName=filled, Select="COUNT", Limit=1)
    assert (out["Count"], out["ScannedCount"], "Items" in out, "LastEvaluatedKey" in out) == (
        1,
        1,
        False,
        True,
    )


def test_legacy_scan_filter_and_attributes_to_get(ddb: Any, filled: str) -> None:
    out = ddb.scan(
        TableName=filled,
        ScanFilter={
            "i": {"ComparisonOperator": "IN", "AttributeValueList": [{"N": "3"}, {"N": "4"}, {"N": "99"}]}
        },
        AttributesToGet=["i"],
    )
    assert sorted(out["Items"], key=lambda item: item["i"]["N"]) == [{"i": {"N": "3"}}, {"i": {"N": "4"}}]


def test_a_legacy_in_is_not_held_to_the_expression_limits(ddb: Any, filled: str) -> None:
    # dynalite's suite, recorded against DynamoDB, scans with an IN of 27,500 values;
    # a FilterExpression takes at most 100 operands and 4 KB of text.
    values = [{"N": str(1000 + i)} for i in range(27_500)] + [{"N": "7"}]
    out = ddb.scan(
        TableName=filled, ScanFilter={"i": {"ComparisonOperator": "IN", "AttributeValueList": values}}
    )
    assert _ids(out["Items"]) == [7]


@pytest.mark.parametrize(("consistent", "units"), [(True, 4.0), (False, 2.0)])
def test_scan_capacity_rounds_each_partitions_read(
    ddb: Any, filled: str, consistent: bool, units: float
) -> None:
    out = ddb.scan(TableName=filled, ReturnConsumedCapacity="TOTAL", ConsistentRead=consistent)
    # 60 items of about 30 bytes each, under 4 KB in all, over the four partitions of a
    # new on-demand table: the minimum for each partition read. DynamoDB's own figure,
    # 4 and 2 for a Scan of a one-item table (Alternator's test_scan_consumed_capacity).
    assert out["ConsumedCapacity"] == {"TableName": filled, "CapacityUnits": units}


@pytest.mark.parametrize(("consistent", "units"), [(True, 4.0), (False, 2.0)])
def test_a_scan_of_a_new_one_item_table_costs_the_minimum_of_each_partition(
    ddb: Any, consistent: bool, units: float
) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="scan-one")
    ddb.put_item(TableName=name, Item={"pk": {"S": key()}, "animal": {"S": "cat"}})
    out = ddb.scan(TableName=name, ReturnConsumedCapacity="TOTAL", ConsistentRead=consistent)
    assert (out["Count"], out["ConsumedCapacity"]["CapacityUnits"]) == (1, units)


def test_a_scan_page_stops_after_one_megabyte_across_partitions(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="scan-mb")
    pad = "x" * 100_000
    for i in range(14):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"big-{i}"}, "pad": {"S": pad}})
    first = ddb.scan(TableName=name, ProjectionExpression="pk", ReturnConsumedCapacity="TOTAL")
    assert (first["Count"], "LastEvaluatedKey" in first) == (11, True)
    # 11 items of 100,010 bytes: 1,100,110 bytes, 269 started 4 KB blocks, halved, if
    # one partition held them; each of the (at most four) partitions read rounds its own
    # share up, so up to two units more.
    assert 134.5 <= first["ConsumedCapacity"]["CapacityUnits"] <= 136.5
    rest = ddb.scan(TableName=name, ProjectionExpression="pk", ExclusiveStartKey=first["LastEvaluatedKey"])
    assert rest["Count"] == 3 and "LastEvaluatedKey" not in rest
    keys = {i["pk"]["S"] for i in first["Items"]} | {i["pk"]["S"] for i in rest["Items"]}
    assert keys == {f"big-{i}" for i in range(14)}


KEY_PATH = "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: "


def test_a_path_into_a_key_attribute_is_refused_in_a_scan_projection_or_filter(
    ddb: Any, table_sn: str
) -> None:
    assert validation(ddb.scan, TableName=table_sn, ProjectionExpression="a, sk.b") == KEY_PATH + "sk"
    message = validation(
        ddb.scan,
        TableName=table_sn,
        FilterExpression="pk[1] = :v",
        ExpressionAttributeValues={":v": {"S": "x"}},
    )
    assert message == KEY_PATH + "pk"
