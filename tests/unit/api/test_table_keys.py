"""From items and Keys to storage keys, following a table's key schema."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from partita.api.table_keys import key_of_item, key_of_key
from partita.common import keys
from partita.common.errors import DynamoError
from partita.common.partition_map import Partition
from partita.control.model import KeyElement, TableRecord

MISMATCH = "The provided key element does not match the schema"


def table(pk: str = "S", sk: str | None = None, table_id: int = 0xABC1) -> TableRecord:
    sort_key = KeyElement("sk", sk) if sk else None  # type: ignore[arg-type]
    return TableRecord(
        name="T",
        table_id=table_id,
        status="ACTIVE",
        partition_key=KeyElement("pk", pk),  # type: ignore[arg-type]
        sort_key=sort_key,
        attribute_definitions=(("pk", pk),) + ((("sk", sk),) if sk else ()),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
        partitions=(Partition("p0", 0, 2**64, ("n1",), "n1"),),
    )


def failure(call: Any, *args: Any) -> DynamoError:
    with pytest.raises(DynamoError) as err:
        call(*args)
    return err.value


def test_a_hash_key_item_maps_to_its_hash_and_storage_key() -> None:
    record = table()
    key = key_of_item(record, {"pk": {"S": "alice"}, "other": {"N": "1"}})
    h = keys.key_hash("S", b"alice")
    assert key.hash == h
    assert key.storage_key == keys.item_key(record.table_id, h, b"alice", None)
    assert key.storage_key.startswith(keys.table_prefix(record.table_id))


def test_a_composite_key_item_appends_the_encoded_sort_key() -> None:
    record = table(sk="N")
    key = key_of_item(record, {"pk": {"S": "alice"}, "sk": {"N": "42"}})
    h = keys.key_hash("S", b"alice")
    assert key.storage_key == keys.item_key(
        record.table_id, h, b"alice", keys.encode_sort_key({"N": "42"}, "N")
    )


def test_key_of_key_and_key_of_item_agree() -> None:
    record = table(pk="B", sk="S")
    pk = base64.b64encode(b"\x00\x01bin").decode()
    item = {"pk": {"B": pk}, "sk": {"S": "2024-01-01"}, "payload": {"S": "x"}}
    assert key_of_key(record, {"pk": {"B": pk}, "sk": {"S": "2024-01-01"}}) == key_of_item(record, item)


def test_equal_numbers_written_differently_are_one_key() -> None:
    record = table(pk="N", sk="N")
    a = key_of_key(record, {"pk": {"N": "1"}, "sk": {"N": "2.50"}})
    b = key_of_key(record, {"pk": {"N": "1.0"}, "sk": {"N": "25E-1"}})
    assert a == b


def test_sort_keys_of_one_partition_key_share_the_hash_and_sort_in_order() -> None:
    record = table(sk="N")
    ks = [key_of_key(record, {"pk": {"S": "p"}, "sk": {"N": n}}) for n in ("-10", "-1.5", "0", "3", "20")]
    assert len({k.hash for k in ks}) == 1
    assert [k.storage_key for k in ks] == sorted(k.storage_key for k in ks)


def test_different_tables_never_share_storage_keys() -> None:
    item = {"pk": {"S": "same"}}
    assert (
        key_of_item(table(table_id=1), item).storage_key != key_of_item(table(table_id=3), item).storage_key
    )


@pytest.mark.parametrize(
    ("item", "missing"),
    [({"other": {"S": "x"}}, "pk"), ({"pk": {"S": "x"}}, "sk")],
)
def test_an_item_missing_a_key_attribute_is_refused(item: dict[str, Any], missing: str) -> None:
    error = failure(key_of_item, table(sk="S"), item)
    assert (error.code, error.message) == (
        "ValidationException",
        f"One or more parameter values were invalid: Missing the key {missing} in the item",
    )


def test_an_item_key_of_the_wrong_type_is_refused() -> None:
    error = failure(key_of_item, table(), {"pk": {"N": "1"}})
    assert (
        error.message
        == "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N"
    )


def test_an_empty_string_partition_key_is_refused() -> None:
    error = failure(key_of_item, table(), {"pk": {"S": ""}})
    assert error.message == (
        "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain "
        "an empty string value. Key: pk"
    )


def test_an_empty_binary_sort_key_is_refused() -> None:
    error = failure(key_of_key, table(sk="B"), {"pk": {"S": "a"}, "sk": {"B": ""}})
    assert error.message.endswith("cannot contain an empty binary value. Key: sk")


def test_a_partition_key_over_2048_bytes_is_refused_and_2048_is_fine() -> None:
    key_of_item(table(), {"pk": {"S": "é" * 1024}})  # 2048 UTF-8 bytes
    error = failure(key_of_item, table(), {"pk": {"S": "x" * 2049}})
    assert "Size of hashkey has exceeded the maximum size limit of2048 bytes" in error.message


def test_a_sort_key_over_1024_bytes_is_refused() -> None:
    error = failure(key_of_key, table(sk="S"), {"pk": {"S": "a"}, "sk": {"S": "x" * 1025}})
    assert "Aggregated size of all range keys has exceeded the size limit of 1024 bytes" in error.message


@pytest.mark.parametrize(
    "key",
    [
        {},
        {"pk": {"S": "a"}, "extra": {"S": "b"}},
        {"other": {"S": "a"}},
        {"pk": {"N": "1"}},
        {"pk": {"S": "a"}, "sk": {"S": "b"}},
    ],
)
def test_a_key_that_does_not_match_a_hash_key_schema_is_refused(key: dict[str, Any]) -> None:
    error = failure(key_of_key, table(), key)
    assert (error.code, error.message) == ("ValidationException", MISMATCH)


@pytest.mark.parametrize(
    "key",
    [{"pk": {"S": "a"}}, {"pk": {"S": "a"}, "sk": {"N": "1"}}, {"pk": {"S": "a"}, "other": {"S": "1"}}],
)
def test_a_key_that_does_not_match_a_composite_schema_is_refused(key: dict[str, Any]) -> None:
    assert failure(key_of_key, table(sk="S"), key).message == MISMATCH


def test_a_key_that_is_not_a_map_is_a_serialization_error() -> None:
    assert failure(key_of_key, table(), [{"S": "a"}]).code == "SerializationException"


def test_key_values_are_validated_by_the_operation_before_key_of_key() -> None:
    from partita.api.operations import get_item

    bad_number = {"TableName": "tbl", "Key": {"pk": {"N": "not-a-number"}}}
    assert failure(get_item.validate, bad_number).code == "ValidationException"
    assert failure(get_item.validate, {"TableName": "tbl", "Key": {"pk": {}}}).code == "ValidationException"


def test_key_of_key_refuses_a_malformed_value_without_crashing() -> None:
    assert (
        failure(key_of_key, table(), {"pk": {}}).message
        == "The provided key element does not match the schema"
    )
    assert failure(key_of_key, table(), {"pk": "text"}).code == "ValidationException"
