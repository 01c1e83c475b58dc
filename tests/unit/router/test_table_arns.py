"""A table's ARN stands for its name in TableName and in a batch's RequestItems."""

from __future__ import annotations

from typing import Any

import orjson

from partita.router.table_arns import keyed_by_arn, names_for_arns, request_item_arns, table_name_of

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/orders"


def test_a_tables_arn_names_the_table() -> None:
    assert table_name_of(ARN) == "orders"
    assert table_name_of("arn:aws-cn:dynamodb:cn-north-1:123456789012:table/t.1_x-y") == "t.1_x-y"


def test_what_is_not_a_tables_arn_is_left_as_sent() -> None:
    for value in (
        "orders",
        ARN + "/index/by-date",
        ARN + "/stream/2026-01-01T00:00:00.000",
        "arn:aws:s3:::bucket/orders",
        "arn:aws:dynamodb:us-east-1:000000000000:table/ab",  # too short for a table name
    ):
        assert table_name_of(value) == value


def test_a_request_by_arn_becomes_the_request_by_name() -> None:
    payload: dict[str, Any] = {"TableName": ARN, "Key": {"pk": {"S": "a"}}}
    assert names_for_arns(payload) == {"TableName": "orders", "Key": {"pk": {"S": "a"}}}
    batch = {"RequestItems": {ARN: {"Keys": [{"pk": {"S": "a"}}]}, "other": {"Keys": []}}}
    assert names_for_arns(batch) == {
        "RequestItems": {"orders": {"Keys": [{"pk": {"S": "a"}}]}, "other": {"Keys": []}}
    }


def test_a_request_without_arns_is_passed_through_untouched() -> None:
    payload: dict[str, Any] = {"TableName": "orders", "RequestItems": {"orders": {}}}
    assert names_for_arns(payload) is payload


def test_a_batch_naming_one_table_twice_is_not_merged() -> None:
    batch = {"RequestItems": {ARN: {"Keys": [1]}, "orders": {"Keys": [2]}}}
    assert names_for_arns(batch) == batch


def test_a_batch_by_arn_is_answered_by_arn() -> None:
    arns = request_item_arns({"RequestItems": {ARN: {"Keys": []}, "other": {"Keys": []}}})
    assert arns == {"orders": ARN}
    answer = orjson.dumps(
        {"Responses": {"orders": [1], "other": [2]}, "UnprocessedKeys": {"orders": {"Keys": []}}}
    )
    assert orjson.loads(keyed_by_arn(answer, arns)) == {
        "Responses": {ARN: [1], "other": [2]},
        "UnprocessedKeys": {ARN: {"Keys": []}},
    }
    # A transaction's tables are named by their ARNs too.
    transact = {"TransactItems": [{"Put": {"TableName": ARN, "Item": {}}}, {"Get": {"TableName": "other"}}]}
    assert names_for_arns(transact) == {
        "TransactItems": [{"Put": {"TableName": "orders", "Item": {}}}, {"Get": {"TableName": "other"}}]
    }
