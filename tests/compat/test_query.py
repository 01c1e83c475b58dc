"""Query: serialization, validation, functionality (key ranges, order, paging, filters)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, all_pages, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK


def _fill(ddb: Any, table: str, pk: str, sort_keys: list[Any], kind: str = "N", **extra: Any) -> None:
    for sk in sort_keys:
        ddb.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {kind: str(sk)}, **extra})


def _query(ddb: Any, table: str, pk: str, condition: str = "", values: dict[str, Any] | None = None,
           **kwargs: Any) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = ddb.query(
        TableName=table,
        KeyConditionExpression="pk = :pk" + (f" AND {condition}" if condition else ""),
        ExpressionAttributeValues={":pk": {"S": pk}, **(values or {})},
        **kwargs,
    )
    return out


def _sks(out: dict[str, Any]) -> list[str]:
    return [item["sk"]["N"] for item in out["Items"]]


# --- serialization ------------------------------------------------------------------------


def test_a_limit_that_is_not_a_number_is_a_serialization_exception(cluster: Any, table_sn: str) -> None:
    body = {"TableName": table_sn, "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": "x"}}, "Limit": "10"}  # fmt: skip
    status, out = raw_call(cluster, "Query", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_a_query_needs_a_key_condition(ddb: Any, table_sn: str) -> None:
    assert validation(ddb.query, TableName=table_sn) == (
        "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
    )


def test_a_key_condition_without_the_partition_key_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query,
        TableName=table_sn,
        KeyConditionExpression="sk = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    assert message == "Query condition missed key schema element: pk"


def test_a_key_condition_on_a_non_key_attribute_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p AND attr1 = :v",
        ExpressionAttributeValues={":p": {"S": "x"}, ":v": {"N": "1"}},
    )  # fmt: skip
    assert message == "Query condition missed key schema element: sk"


def test_a_key_condition_with_or_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p OR sk = :v",
        ExpressionAttributeValues={":p": {"S": "x"}, ":v": {"N": "1"}},
    )  # fmt: skip
    assert message == "Invalid operator used in KeyConditionExpression: OR"


def test_a_key_value_of_the_wrong_type_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p AND sk > :v",
        ExpressionAttributeValues={":p": {"S": "x"}, ":v": {"S": "1"}},
    )  # fmt: skip
    assert (
        message
        == "One or more parameter values were invalid: Condition parameter type does not match schema type"
    )


def test_a_filter_on_a_key_attribute_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p", FilterExpression="sk > :v",
        ExpressionAttributeValues={":p": {"S": "x"}, ":v": {"N": "1"}},
    )  # fmt: skip
    assert (
        message == "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk"
    )


def test_specific_attributes_without_a_projection_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}},
        Select="SPECIFIC_ATTRIBUTES",
    )  # fmt: skip
    assert message == (
        "1 validation error detected: Must specify the AttributesToGet or ProjectionExpression when choosing to "
        "get SPECIFIC_ATTRIBUTES"
    )


def test_count_with_a_projection_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}},
        Select="COUNT", ProjectionExpression="a",
    )  # fmt: skip
    assert (
        message
        == "1 validation error detected: Cannot specify the ProjectionExpression when choosing to get only the Count"
    )


def test_all_projected_attributes_needs_an_index(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}},
        Select="ALL_PROJECTED_ATTRIBUTES",
    )  # fmt: skip
    assert (
        message
        == "1 validation error detected: ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"
    )


def test_select_is_case_sensitive(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}},
        Select="count",
    )  # fmt: skip
    assert message == (
        "1 validation error detected: Value 'count' at 'select' failed to satisfy constraint: Member must satisfy "
        "enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"
    )


def test_an_unknown_index_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, IndexName="byOther", KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "x"}},
    )  # fmt: skip
    assert message == "The table does not have the specified index: byOther"


def test_a_start_key_outside_the_partition_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.query, TableName=table_s, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}},
        ExclusiveStartKey={"pk": {"S": "y"}},
    )  # fmt: skip
    assert message == "The provided starting key is outside query boundaries based on provided conditions"


@pytest.mark.parametrize(
    ("table", "value", "shown"),
    [("table_s", {"S": "x"}, "{S:x}"), ("table_n", {"N": "5"}, "{N:5}")],
)
def test_a_start_key_in_the_one_item_partition_of_a_table_without_a_sort_key_is_invalid(
    request: pytest.FixtureRequest, ddb: Any, table: str, value: dict[str, str], shown: str
) -> None:
    # Exclusive of the partition's only item, such a page would be empty by definition.
    message = validation(
        ddb.query, TableName=request.getfixturevalue(table), KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": value}, ExclusiveStartKey={"pk": value},
    )  # fmt: skip
    assert (
        message
        == f"The provided exclusive start key is invalid: ExclusiveStartKey: {{pk=AttributeValue: {shown}}}"
    )


def test_a_query_of_a_table_without_a_sort_key_never_says_a_page_follows(ddb: Any, table_s: str) -> None:
    # Limit 1 reaches the partition's one item, and nothing can follow it: no
    # LastEvaluatedKey, so a paginator never sends the start key refused above.
    k = key()
    ddb.put_item(TableName=table_s, Item={"pk": {"S": k}})
    out = ddb.query(
        TableName=table_s,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": k}},
        Limit=1,
    )
    assert (out["Count"], "LastEvaluatedKey" in out) == (1, False)


def test_a_start_key_without_the_tables_key_is_reported_before_the_index(ddb: Any, table_sn: str) -> None:
    # An index the table does not have: the start key lacking the table's key comes first.
    message = validation(
        ddb.query, TableName=table_sn, IndexName="index1", KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "x"}}, ExclusiveStartKey={"other": {"S": "x"}},
    )  # fmt: skip
    assert message == "The provided starting key is invalid"


def test_a_start_key_outside_the_sort_condition_is_refused(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p AND sk > :v",
        ExpressionAttributeValues={":p": {"S": "x"}, ":v": {"N": "5"}},
        ExclusiveStartKey={"pk": {"S": "x"}, "sk": {"N": "1"}},
    )  # fmt: skip
    assert message == "The provided starting key does not match the range key predicate"


def test_a_start_key_with_more_than_the_key_is_reported_before_the_key_condition(
    ddb: Any, table_s: str
) -> None:
    # dynalite's recorded test: the key condition names no key attribute at all.
    message = validation(
        ddb.query, TableName=table_s, KeyConditionExpression="z = :a", ExpressionAttributeValues={":a": {"N": "1"}},
        ExclusiveStartKey={"pk": {"S": "a"}, "b": {"S": "a"}},
    )  # fmt: skip
    assert message == "The provided starting key is invalid"


def test_a_start_key_missing_the_sort_key_is_invalid(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "x"}},
        ExclusiveStartKey={"pk": {"S": "x"}},
    )  # fmt: skip
    assert message == "The provided starting key is invalid"


def test_a_limit_below_one_is_a_constraint_violation(cluster: Any, table_sn: str) -> None:
    body = {"TableName": table_sn, "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": "x"}}, "Limit": 0}  # fmt: skip
    _, out = raw_call(cluster, "Query", json.dumps(body).encode())
    # DynamoDB's newer front end names Query's Limit without its value (nubo-db's
    # conformance suite, run against DynamoDB in 2026); Scan's still has Coral's form.
    assert out["message"] == (
        "1 validation error detected: Value at 'Limit' failed to satisfy constraint: "
        "Member must have value greater than or equal to 1"
    )


# --- functionality ---------------------------------------------------------------------------


def test_items_come_in_sort_key_order_and_reverse(ddb: Any, table_sn: str) -> None:
    pk = key()
    numbers = ["-7.5", "10", "2", "0", "1e3", "-100", "0.001"]
    _fill(ddb, table_sn, pk, numbers)
    expected = sorted(numbers, key=float)
    canonical = {
        "-7.5": "-7.5",
        "10": "10",
        "2": "2",
        "0": "0",
        "1e3": "1000",
        "-100": "-100",
        "0.001": "0.001",
    }
    assert _sks(_query(ddb, table_sn, pk)) == [canonical[n] for n in expected]
    assert _sks(_query(ddb, table_sn, pk, ScanIndexForward=False)) == [
        canonical[n] for n in reversed(expected)
    ]


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        ("sk = :a", {":a": {"N": "3"}}, ["3"]),
        ("sk < :a", {":a": {"N": "3"}}, ["1", "2"]),
        ("sk <= :a", {":a": {"N": "3"}}, ["1", "2", "3"]),
        ("sk > :a", {":a": {"N": "3"}}, ["4", "5"]),
        ("sk >= :a", {":a": {"N": "3"}}, ["3", "4", "5"]),
        (":a < sk", {":a": {"N": "3"}}, ["4", "5"]),
        ("sk BETWEEN :a AND :b", {":a": {"N": "2"}, ":b": {"N": "4"}}, ["2", "3", "4"]),
    ],
)
def test_sort_key_conditions_select_a_range(
    ddb: Any, table_sn: str, condition: str, values: dict[str, Any], expected: list[str]
) -> None:
    pk = key()
    _fill(ddb, table_sn, pk, [1, 2, 3, 4, 5])
    assert _sks(_query(ddb, table_sn, pk, condition, values)) == expected


def test_begins_with_selects_a_string_prefix(ddb: Any, table_ss: str) -> None:
    pk = key()
    for sk in ["apple", "apricot", "banana", "ap", "a"]:
        ddb.put_item(TableName=table_ss, Item={"pk": {"S": pk}, "sk": {"S": sk}})
    out = _query(ddb, table_ss, pk, "begins_with(sk, :p)", {":p": {"S": "ap"}})
    assert [i["sk"]["S"] for i in out["Items"]] == ["ap", "apple", "apricot"]


def test_binary_sort_keys_order_as_unsigned_bytes(ddb: Any, table_sb: str) -> None:
    pk = key()
    values = [b"\x00", b"\x7f", b"\x80", b"\xff", b"\x00\x01"]
    for v in values:
        ddb.put_item(TableName=table_sb, Item={"pk": {"S": pk}, "sk": {"B": v}})
    out = ddb.query(
        TableName=table_sb, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": pk}}
    )
    assert [i["sk"]["B"] for i in out["Items"]] == sorted(values)


def test_limit_counts_items_read_before_the_filter(ddb: Any, table_sn: str) -> None:
    pk = key()
    for i in range(10):
        ddb.put_item(
            TableName=table_sn, Item={"pk": {"S": pk}, "sk": {"N": str(i)}, "even": {"BOOL": i % 2 == 0}}
        )
    out = _query(ddb, table_sn, pk, values={":t": {"BOOL": True}}, FilterExpression="even = :t", Limit=4)
    assert (out["Count"], out["ScannedCount"]) == (2, 4)
    assert _sks(out) == ["0", "2"]
    assert out["LastEvaluatedKey"] == {"pk": {"S": pk}, "sk": {"N": "3"}}


def test_paging_with_limit_returns_every_item_once_forward_and_backward(ddb: Any, table_sn: str) -> None:
    pk = key()
    _fill(ddb, table_sn, pk, list(range(11)))
    for forward in (True, False):
        items, pages = all_pages(
            ddb.query, TableName=table_sn, KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": pk}}, Limit=3, ScanIndexForward=forward,
        )  # fmt: skip
        expected = [str(i) for i in range(11)]
        assert [i["sk"]["N"] for i in items] == (expected if forward else expected[::-1])
        assert pages == 4


def test_a_page_ending_exactly_at_the_limit_still_has_a_last_key(ddb: Any, table_sn: str) -> None:
    pk = key()
    _fill(ddb, table_sn, pk, [1, 2])
    out = _query(ddb, table_sn, pk, Limit=2)
    assert out["LastEvaluatedKey"] == {"pk": {"S": pk}, "sk": {"N": "2"}}
    rest = _query(ddb, table_sn, pk, Limit=2, ExclusiveStartKey=out["LastEvaluatedKey"])
    assert (rest["Count"], "LastEvaluatedKey" in rest) == (0, False)


def test_a_page_stops_after_one_megabyte_of_items(ddb: Any, table_sn: str) -> None:
    pk = key()
    pad = "x" * 100_000  # about 100 KB per item: the 11th item crosses 1 MB
    _fill(ddb, table_sn, pk, list(range(14)), pad={"S": pad})
    out = _query(ddb, table_sn, pk, ProjectionExpression="sk")
    assert out["Count"] == 11 and out["ScannedCount"] == 11
    assert out["LastEvaluatedKey"]["sk"] == {"N": "10"}
    rest = _query(ddb, table_sn, pk, ProjectionExpression="sk", ExclusiveStartKey=out["LastEvaluatedKey"])
    assert _sks(rest) == ["11", "12", "13"]


def test_select_count_returns_counts_without_items(ddb: Any, table_sn: str) -> None:
    pk = key()
    _fill(ddb, table_sn, pk, [1, 2, 3])
    out = _query(ddb, table_sn, pk, Select="COUNT")
    assert "Items" not in out
    assert (out["Count"], out["ScannedCount"]) == (3, 3)


def test_projection_with_specific_attributes(ddb: Any, table_sn: str) -> None:
    pk = key()
    _fill(ddb, table_sn, pk, [1, 2], a={"S": "x"}, b={"S": "y"})
    out = _query(ddb, table_sn, pk, Select="SPECIFIC_ATTRIBUTES", ProjectionExpression="b")
    assert out["Items"] == [{"b": {"S": "y"}}, {"b": {"S": "y"}}]


def test_query_capacity_rounds_the_total_size_once(ddb: Any, table_sn: str) -> None:
    pk = key()
    _fill(ddb, table_sn, pk, list(range(10)))  # ten tiny items: well under 4 KB together
    out = _query(ddb, table_sn, pk, ReturnConsumedCapacity="TOTAL", ConsistentRead=True)
    assert out["ConsumedCapacity"] == {"TableName": table_sn, "CapacityUnits": 1.0}
    out = _query(ddb, table_sn, pk, ReturnConsumedCapacity="TOTAL")
    assert out["ConsumedCapacity"]["CapacityUnits"] == 0.5


def test_an_empty_query_costs_the_minimum_read(ddb: Any, table_sn: str) -> None:
    out = _query(ddb, table_sn, key(), ReturnConsumedCapacity="TOTAL")
    assert (out["Count"], out["ConsumedCapacity"]["CapacityUnits"]) == (0, 0.5)


def test_legacy_key_conditions_and_query_filter(ddb: Any, table_sn: str) -> None:
    pk = key()
    for i in range(6):
        ddb.put_item(TableName=table_sn, Item={"pk": {"S": pk}, "sk": {"N": str(i)}, "v": {"N": str(i * 10)}})
    out = ddb.query(
        TableName=table_sn,
        KeyConditions={
            "pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": pk}]},
            "sk": {"ComparisonOperator": "GE", "AttributeValueList": [{"N": "1"}]},
        },
        QueryFilter={
            "v": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "20"}, {"N": "40"}]}
        },
        AttributesToGet=["sk"],
    )
    assert out["Items"] == [{"sk": {"N": "2"}}, {"sk": {"N": "3"}}, {"sk": {"N": "4"}}]
    assert out["ScannedCount"] == 5


def test_legacy_key_conditions_refuse_a_non_indexable_operator(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn,
        KeyConditions={"pk": {"ComparisonOperator": "NE", "AttributeValueList": [{"S": "x"}]}},
    )  # fmt: skip
    assert message == "Attempted conditional constraint is not an indexable operation"


def test_a_condition_no_key_can_be_read_by_is_reported_after_the_table_and_the_start_key(
    ddb: Any, table_s: str
) -> None:
    # dynalite's recorded tests: a missing table first, then an invalid start key.
    conditions = {"z": {"ComparisonOperator": "NULL"}}
    code, _ = error(ddb.query, TableName="no-such-table-here", KeyConditions=conditions, QueryFilter={})
    assert code == "ResourceNotFoundException"
    for start in ({"b": {"S": "a"}}, {"pk": {"S": "a"}, "b": {"S": "a"}}):
        message = validation(
            ddb.query, TableName=table_s, KeyConditions=conditions, QueryFilter={}, ExclusiveStartKey=start
        )
        assert message == "The provided starting key is invalid"
    # A condition on no key attribute: the missing partition key is what is reported.
    assert validation(ddb.query, TableName=table_s, KeyConditions=conditions) == (
        "Query condition missed key schema element: pk"
    )


def test_query_filter_on_a_key_names_the_legacy_parameter(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query, TableName=table_sn,
        KeyConditions={"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "x"}]}},
        QueryFilter={"sk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}},
    )  # fmt: skip
    assert message == "QueryFilter can only contain non-primary key attributes: Primary key attribute: sk"


def test_query_on_a_missing_table_is_resource_not_found(ddb: Any) -> None:
    code, _ = error(
        ddb.query, TableName="no-such-table", KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "x"}},
    )  # fmt: skip
    assert code == "ResourceNotFoundException"


def test_a_path_into_a_key_attribute_is_refused_in_a_query_projection(ddb: Any, table_sn: str) -> None:
    message = validation(
        ddb.query,
        TableName=table_sn,
        KeyConditionExpression="pk = :p",
        ProjectionExpression="pk.x",
        ExpressionAttributeValues={":p": {"S": key()}},
    )
    assert message == (
        "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: pk"
    )


def test_a_key_condition_naming_two_attributes_names_the_expression_twice(ddb: Any, table_sn: str) -> None:
    # DynamoDB's words as captured in October 2025 (moto's AWS-verified tests).
    message = validation(ddb.query, TableName=table_sn, KeyConditionExpression="pk = sk")
    assert message == (
        "Invalid KeyConditionExpression: Invalid condition in KeyConditionExpression: Multiple attribute names "
        "used in one condition"
    )


def test_a_filter_expression_beside_key_conditions_is_held_to_the_expression_limits(
    ddb: Any, table_sn: str
) -> None:
    # Alternator's test_limit_expression_len (run against DynamoDB): the legacy
    # KeyConditions do not lift the FilterExpression's 4 KB.
    message = validation(
        ddb.query, TableName=table_sn,
        KeyConditions={"pk": {"AttributeValueList": [{"S": key()}], "ComparisonOperator": "EQ"}},
        FilterExpression="a" + " " * 4092 + "= :v", ExpressionAttributeValues={":v": {"N": "1"}},  # 4,097 bytes
    )  # fmt: skip
    assert message.startswith(
        "Invalid FilterExpression: Expression size has exceeded the maximum allowed size"
    )
