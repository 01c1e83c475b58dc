"""BatchWriteItem: serialization, validation, functionality (puts, deletes, all-or-nothing checks)."""

from __future__ import annotations

import json
from typing import Any

from tests.compat.helpers import PYTESTMARK, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK


def _put(item: dict[str, Any]) -> dict[str, Any]:
    return {"PutRequest": {"Item": item}}


def _delete(k: dict[str, Any]) -> dict[str, Any]:
    return {"DeleteRequest": {"Key": k}}


def _exists(ddb: Any, table: str, k: dict[str, Any]) -> bool:
    return "Item" in ddb.get_item(TableName=table, Key=k, ConsistentRead=True)


# --- serialization ------------------------------------------------------------------------


def test_requests_that_are_not_a_list_are_a_serialization_exception(cluster: Any, table_s: str) -> None:
    body = {"RequestItems": {table_s: {"PutRequest": {"Item": {"pk": {"S": "x"}}}}}}
    status, out = raw_call(cluster, "BatchWriteItem", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_more_than_25_requests_in_a_table_is_a_length_violation(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.batch_write_item, RequestItems={table_s: [_put({"pk": {"S": str(i)}}) for i in range(26)]}
    )
    assert message.startswith("1 validation error detected: ")
    assert "Member must have length less than or equal to 25" in message


def test_more_than_25_requests_across_tables_is_refused(ddb: Any, table_s: str, table_n: str) -> None:
    message = validation(
        ddb.batch_write_item,
        RequestItems={
            table_s: [_put({"pk": {"S": str(i)}}) for i in range(13)],
            table_n: [_put({"pk": {"N": str(i)}}) for i in range(13)],
        },
    )
    assert message == "Too many items requested for the BatchWriteItem call"


def test_a_put_and_a_delete_of_one_key_are_duplicates(ddb: Any, table_s: str) -> None:
    k = {"pk": {"S": key()}}
    assert validation(ddb.batch_write_item, RequestItems={table_s: [_put(k), _delete(k)]}) == (
        "Provided list of item keys contains duplicates"
    )


def test_a_request_with_neither_put_nor_delete_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(ddb.batch_write_item, RequestItems={table_s: [{}]})
    assert message == (
        "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"
    )


def test_one_bad_item_writes_nothing(ddb: Any, table_s: str) -> None:
    good = {"pk": {"S": key()}}
    message = validation(
        ddb.batch_write_item, RequestItems={table_s: [_put(good), _put({"other": {"S": "x"}})]}
    )
    assert message == "The provided key element does not match the schema"
    assert not _exists(ddb, table_s, good)


def test_an_oversized_item_writes_nothing(ddb: Any, table_s: str) -> None:
    good = {"pk": {"S": key()}}
    big = {"pk": {"S": key()}, "pad": {"S": "x" * (400 * 1024)}}
    assert validation(ddb.batch_write_item, RequestItems={table_s: [_put(good), _put(big)]}) == (
        "Item size has exceeded the maximum allowed size"
    )
    assert not _exists(ddb, table_s, good)


def test_a_missing_table_writes_nothing(ddb: Any, table_s: str) -> None:
    good = {"pk": {"S": key()}}
    code, _ = error(ddb.batch_write_item, RequestItems={table_s: [_put(good)], "no-such-table": [_put(good)]})
    assert code == "ResourceNotFoundException"
    assert not _exists(ddb, table_s, good)


# --- functionality ---------------------------------------------------------------------------


def test_puts_and_deletes_across_tables(ddb: Any, table_s: str, table_sn: str) -> None:
    old = {"pk": {"S": key()}}
    ddb.put_item(TableName=table_s, Item=old)
    new = [{"pk": {"S": key()}, "v": {"N": str(i)}} for i in range(10)]
    ranged = {"pk": {"S": key()}, "sk": {"N": "1"}}
    out = ddb.batch_write_item(
        RequestItems={table_s: [_delete(old)] + [_put(i) for i in new], table_sn: [_put(ranged)]}
    )
    assert out["UnprocessedItems"] == {}
    assert not _exists(ddb, table_s, old)
    assert all(_exists(ddb, table_s, {"pk": i["pk"]}) for i in new)
    assert _exists(ddb, table_sn, ranged)


def test_the_same_key_in_two_tables_is_not_a_duplicate(ddb: Any, table_s: str) -> None:
    from tests.compat.helpers import create_table

    other = create_table(ddb, [("pk", "S")], prefix="bw-other")
    k = {"pk": {"S": key()}}
    ddb.batch_write_item(
        RequestItems={table_s: [_put({**k, "a": {"S": "1"}})], other: [_put({**k, "b": {"S": "2"}})]}
    )
    assert ddb.get_item(TableName=other, Key=k)["Item"] == {**k, "b": {"S": "2"}}


def test_capacity_is_reported_per_table(ddb: Any, table_s: str, table_sn: str) -> None:
    gone = {"pk": {"S": key()}, "sk": {"N": "1"}}
    ddb.put_item(TableName=table_sn, Item={**gone, "pad": {"S": "x" * 1500}})
    out = ddb.batch_write_item(
        RequestItems={
            table_s: [_put({"pk": {"S": key()}}), _put({"pk": {"S": key()}, "pad": {"S": "x" * 1100}})],
            table_sn: [_delete(gone)],
        },
        ReturnConsumedCapacity="TOTAL",
    )
    by_table = {c["TableName"]: c["CapacityUnits"] for c in out["ConsumedCapacity"]}
    assert by_table == {table_s: 3.0, table_sn: 2.0}
