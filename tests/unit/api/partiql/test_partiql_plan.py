"""PartiQL statements planned as the DynamoDB requests that carry them out."""

from __future__ import annotations

from typing import Any

import pytest

from partita.api.partiql.parser import parse
from partita.api.partiql.plan import (
    BATCH_SELECT_LACKS_KEY,
    OVERLAPPING,
    TOO_MANY_READS,
    WHERE_LACKS_KEY,
    KeySchema,
    ReadPlan,
    WritePlan,
    batch_get,
    plan,
)
from partita.common.errors import DynamoError

SIMPLE = KeySchema("pk", None)
COMPOSITE = KeySchema("pk", "sk")


def _plan(statement: str, key: KeySchema = COMPOSITE, parameters: list[dict[str, Any]] | None = None) -> Any:
    return plan(parse(statement, parameters), key)


def test_a_select_on_the_partition_key_is_a_query_with_its_sort_key_condition_and_filter() -> None:
    got = _plan("SELECT a FROM t WHERE pk = 'k' AND v > 1 AND sk BETWEEN 1 AND 5 ORDER BY sk DESC")
    assert got == ReadPlan(
        "Query",
        (
            {
                "TableName": "t",
                "KeyConditionExpression": "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2",
                "FilterExpression": "#n2 > :v3",
                "ScanIndexForward": False,
                "ProjectionExpression": "#n3",
                "ExpressionAttributeNames": {"#n0": "pk", "#n1": "sk", "#n2": "v", "#n3": "a"},
                "ExpressionAttributeValues": {
                    ":v0": {"S": "k"},
                    ":v1": {"N": "1"},
                    ":v2": {"N": "5"},
                    ":v3": {"N": "1"},
                },
            },
        ),
    )


def test_a_value_on_the_left_of_a_sort_key_comparison_is_turned_around() -> None:
    got = _plan("SELECT * FROM t WHERE 'k' = pk AND 3 < sk")
    assert got.requests[0]["KeyConditionExpression"] == "#n0 = :v0 AND #n1 > :v1"


def test_partition_keys_in_a_list_or_joined_by_or_are_a_query_each() -> None:
    for statement in (
        "SELECT * FROM t WHERE pk IN ['a', 'b']",
        "SELECT * FROM t WHERE pk = 'a' OR pk = 'b'",
    ):
        got = _plan(statement, SIMPLE)
        assert got.operation == "Query"
        assert [r["ExpressionAttributeValues"][":v0"] for r in got.requests] == [{"S": "a"}, {"S": "b"}]


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELECT * FROM t WHERE pk IN ['a', 'a']", OVERLAPPING),
        ("SELECT * FROM t WHERE pk = 'a' OR pk = 'a'", OVERLAPPING),
        ("SELECT * FROM t WHERE pk IN [" + ", ".join(str(i) for i in range(51)) + "]", TOO_MANY_READS),
        (
            "SELECT * FROM t ORDER BY sk",
            "Must have WHERE clause in the statement when using ORDER BY clause.",
        ),
        (
            "SELECT * FROM t WHERE pk = 1 ORDER BY v",
            "Attribute v in ORDER BY clause must be part of the primary key",
        ),
        (
            "SELECT * FROM t WHERE v = 1 ORDER BY sk",
            "Must have at least one non-optional hash key condition in WHERE clause when using ORDER BY clause.",
        ),
        (
            "SELECT * FROM t WHERE pk IN [1, 2] ORDER BY sk",
            "Must have hash key in ORDER BY clause when more than one hash key condition specified in WHERE clause.",
        ),
        ("UPDATE t.i SET a = 1 WHERE pk = 1 AND sk = 1", "This operation is not supported on an index"),
        (
            "DELETE FROM t WHERE pk = 1 AND pk = 2 AND sk = 1",
            "Multiple conditions on same key pk. Only single item Update/Insert/Delete are supported",
        ),
        (
            "DELETE FROM t WHERE pk = 1 AND sk = 1 RETURNING MODIFIED OLD *",
            "Invalid returning clause: RETURNING MODIFIED OLD *. Only RETURNING ALL OLD * is allowed in DELETE statements.",
        ),
    ],
)
def test_selects_and_writes_dynamodb_refuses(statement: str, message: str) -> None:
    with pytest.raises(DynamoError) as err:
        _plan(statement)
    assert (err.value.code, err.value.message) == ("ValidationException", message)


def test_partition_keys_are_read_in_the_order_asked() -> None:
    got = _plan("SELECT * FROM t WHERE pk IN [10, 9, 100] ORDER BY pk DESC, sk")
    assert [r["ExpressionAttributeValues"][":v0"]["N"] for r in got.requests] == ["100", "10", "9"]
    assert "ScanIndexForward" not in got.requests[0]


def test_a_nested_projection_reads_whole_attributes_and_labels_each_value_by_its_last_name() -> None:
    got = _plan("SELECT profile.sub, tags[1], m.k[0], top FROM t WHERE pk = 'k'")
    assert got.requests[0]["ProjectionExpression"] == "#n1, #n2, #n3, #n4"
    assert [label for _, label in got.labels] == ["sub", "tags[1]", "k[0]", "top"]
    assert _plan("SELECT a, b FROM t WHERE pk = 'k'").labels is None


@pytest.mark.parametrize(
    "where",
    [
        "",
        " WHERE v = 1",
        " WHERE pk > 'a'",
        " WHERE pk = 'a' OR v = 1",
        " WHERE pk = 'a' AND sk > 1 AND sk < 5",  # a second sort key term: a Query's filter refuses it
    ],
)
def test_other_selects_scan_with_the_whole_where_clause(where: str) -> None:
    got = _plan(f"SELECT * FROM t{where}")
    assert got.operation == "Scan" and len(got.requests) == 1
    assert ("FilterExpression" in got.requests[0]) == bool(where)


def test_conditions_render_with_placeholders_and_the_grouping_they_need() -> None:
    got = _plan("SELECT * FROM t WHERE (a = 1 OR b IS MISSING) AND NOT (c IN [1, 2] AND size(d) <= 2)")
    assert got.requests[0]["FilterExpression"] == (
        "(#n0 = :v0 OR attribute_not_exists(#n1)) AND NOT (#n2 IN (:v1, :v2) AND size(#n3) <= :v3)"
    )


def test_is_a_type_is_an_attribute_type_test() -> None:
    got = _plan("SELECT * FROM t WHERE a IS NULL AND b IS NOT BOOLEAN AND c IS STRING AND d IS NOT MISSING")
    assert got.requests[0]["FilterExpression"] == (
        "attribute_type(#n0, :v0) AND NOT attribute_type(#n1, :v1) AND attribute_type(#n2, :v2) "
        "AND attribute_exists(#n3)"
    )
    assert [v["S"] for v in got.requests[0]["ExpressionAttributeValues"].values()] == ["NULL", "BOOL", "S"]
    with pytest.raises(DynamoError) as err:
        _plan("SELECT * FROM t WHERE a IS DATE")
    assert err.value.message == "Unsupported data type for IS operator: DATE"


def test_insert_is_a_put_that_must_not_find_the_key() -> None:
    got = _plan("INSERT INTO t VALUE {'pk': 'k', 'sk': 1}")
    assert got == WritePlan(
        "PutItem",
        {
            "TableName": "t",
            "Item": {"pk": {"S": "k"}, "sk": {"N": "1"}},
            "ConditionExpression": "attribute_not_exists(#n0)",
            "ExpressionAttributeNames": {"#n0": "pk"},
        },
        insert=True,
    )


def test_update_is_an_update_of_an_existing_item_with_the_other_terms_as_its_condition() -> None:
    got = _plan(
        "UPDATE t SET a = list_append(a, [1]) SET s = set_delete(s, <<'x'>>) REMOVE b "
        "WHERE sk = 2 AND pk = 'k' AND c <> 0 RETURNING ALL OLD *"
    )
    assert got == WritePlan(
        "UpdateItem",
        {
            "TableName": "t",
            "Key": {"pk": {"S": "k"}, "sk": {"N": "2"}},
            "UpdateExpression": "SET #n0 = list_append(#n0, :v0) REMOVE #n1 DELETE #n2 :v1",
            "ConditionExpression": "attribute_exists(#n3) AND (#n4 <> :v2)",
            "ReturnValues": "ALL_OLD",
            "ExpressionAttributeNames": {"#n0": "a", "#n1": "b", "#n2": "s", "#n3": "pk", "#n4": "c"},
            "ExpressionAttributeValues": {
                ":v0": {"L": [{"N": "1"}]},
                ":v1": {"SS": ["x"]},
                ":v2": {"N": "0"},
            },
        },
        returning=True,
    )


def test_delete_names_the_whole_key_and_its_other_terms_hold_only_for_an_item_there() -> None:
    got = _plan("DELETE FROM t WHERE pk = 'k' AND sk = 1")
    assert got == WritePlan("DeleteItem", {"TableName": "t", "Key": {"pk": {"S": "k"}, "sk": {"N": "1"}}})
    conditional = _plan("DELETE FROM t WHERE pk = 'k' AND sk = 1 AND v = 2")
    assert conditional.request["ConditionExpression"] == "attribute_not_exists(#n0) OR (#n1 = :v0)"
    for statement in ("DELETE FROM t WHERE pk = 'k'", "UPDATE t SET a = 1 WHERE pk > 'k' AND sk = 1"):
        with pytest.raises(DynamoError) as err:
            _plan(statement)
        assert err.value.message == WHERE_LACKS_KEY


def test_a_batch_select_is_a_get_of_one_whole_key_and_nothing_else() -> None:
    assert batch_get(parse("SELECT a FROM t WHERE pk = 'k' AND sk = 1"), COMPOSITE) == {
        "TableName": "t",
        "Key": {"pk": {"S": "k"}, "sk": {"N": "1"}},
        "ProjectionExpression": "#n0",
        "ExpressionAttributeNames": {"#n0": "a"},
    }
    for where in ("", " WHERE pk = 'k'", " WHERE pk = 'k' AND sk = 1 AND a = 2"):
        with pytest.raises(DynamoError) as err:
            batch_get(parse(f"SELECT * FROM t{where}"), COMPOSITE)
        assert err.value.message == BATCH_SELECT_LACKS_KEY


def test_a_select_of_an_index_is_a_query_or_scan_of_it_and_a_write_to_one_is_refused() -> None:
    by_group = KeySchema("g", "r")  # the index's keys, as the router gives them
    planned = plan(parse("SELECT * FROM t.\"idx\" WHERE g = 'x' AND r > 1"), by_group)
    assert isinstance(planned, ReadPlan) and planned.operation == "Query"
    assert planned.requests[0]["IndexName"] == "idx"
    assert planned.requests[0]["KeyConditionExpression"] == "#n0 = :v0 AND #n1 > :v1"
    scanned = plan(parse('SELECT * FROM t."idx" WHERE a = 1'), by_group)
    assert isinstance(scanned, ReadPlan) and scanned.operation == "Scan"
    assert scanned.requests[0]["IndexName"] == "idx"
    with pytest.raises(DynamoError) as err:
        plan(parse('DELETE FROM t."idx" WHERE pk = 1'), by_group)
    assert err.value.message == "This operation is not supported on an index"
