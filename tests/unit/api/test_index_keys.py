"""Which items a secondary index holds, as what, in what order; index key checks."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from partita.api.capacity import consumed_with_indexes
from partita.api.index_keys import (
    capacity_specs,
    check_index_key_values,
    entry_key,
    entry_of,
    in_index,
    index_key_attributes,
    index_write_units,
    projected_names,
    query_order,
)
from partita.api.table_keys import key_of_item
from partita.common.errors import DynamoError
from partita.control.model import KeyElement, SecondaryIndex, TableRecord

_TABLE = TableRecord(
    name="t",
    table_id=7,
    status="ACTIVE",
    partition_key=KeyElement("pk", "S"),
    sort_key=KeyElement("sk", "N"),
    attribute_definitions=(("pk", "S"), ("sk", "N"), ("g", "S"), ("r", "N")),
    billing_mode="PAY_PER_REQUEST",
    read_capacity=0,
    write_capacity=0,
    created_at=0.0,
    partitions=(),
)
_ALL = SecondaryIndex("all", "GLOBAL", KeyElement("g", "S"), KeyElement("r", "N"))
_KEYS = SecondaryIndex("keys", "GLOBAL", KeyElement("g", "S"), None, "KEYS_ONLY")
_INCLUDE = SecondaryIndex("inc", "LOCAL", KeyElement("pk", "S"), KeyElement("r", "N"), "INCLUDE", ("c",))


def _item(pk: str, sk: int, **more: dict[str, str]) -> dict[str, dict[str, str]]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}, **more}


def test_an_index_holds_items_with_every_key_attribute_of_its_type() -> None:
    assert in_index(_ALL, _item("a", 1, g={"S": "x"}, r={"N": "2"}))
    assert not in_index(_ALL, _item("a", 1, g={"S": "x"}))
    assert not in_index(_ALL, _item("a", 1, g={"N": "1"}, r={"N": "2"}))  # written before the index
    assert in_index(_KEYS, _item("a", 1, g={"S": "x"}))
    # Written before the index, with a value no write could give an index key.
    assert not in_index(_KEYS, _item("a", 1, g={"S": ""}))
    assert not in_index(_KEYS, _item("a", 1, g={"S": "x" * 2049}))
    by_tag = SecondaryIndex("tags", "GLOBAL", KeyElement("g", "S"), KeyElement("t", "S"))
    assert in_index(by_tag, _item("a", 1, g={"S": "x"}, t={"S": "y" * 1024}))
    assert not in_index(by_tag, _item("a", 1, g={"S": "x"}, t={"S": "y" * 1025}))


def test_an_entry_holds_the_projected_attributes() -> None:
    item = _item("a", 1, g={"S": "x"}, r={"N": "2"}, c={"S": "red"}, d={"S": "blue"})
    assert entry_of(item, projected_names(_TABLE, _ALL)) == item
    assert set(entry_of(item, projected_names(_TABLE, _KEYS))) == {"pk", "sk", "g"}
    assert set(entry_of(item, projected_names(_TABLE, _INCLUDE))) == {"pk", "sk", "r", "c"}


def test_an_entry_key_names_the_table_and_index_keys() -> None:
    item = _item("a", 1, g={"S": "x"}, r={"N": "2"}, c={"S": "red"})
    assert entry_key(_TABLE, _ALL, item) == {
        "pk": {"S": "a"},
        "sk": {"N": "1"},
        "g": {"S": "x"},
        "r": {"N": "2"},
    }


def test_entries_sort_by_the_index_sort_key_then_their_place_in_the_table() -> None:
    items = [
        _item("b", 1, g={"S": "x"}, r={"N": "10"}),
        _item("a", 2, g={"S": "x"}, r={"N": "-3"}),
        _item("a", 1, g={"S": "x"}, r={"N": "10"}),
        _item("c", 1, g={"S": "x"}, r={"N": "2.5"}),
    ]
    ordered = sorted(items, key=lambda item: query_order(_TABLE, _ALL, item))
    ranks = [item["r"]["N"] for item in ordered]
    assert ranks[:2] == ["-3", "2.5"]
    # Two entries sharing a sort key keep one stable order: their items' places in the table.
    tied = ordered[2:]
    assert [key_of_item(_TABLE, item).storage_key for item in tied] == sorted(
        key_of_item(_TABLE, item).storage_key for item in tied
    )


def test_a_write_with_an_index_key_of_another_type_is_refused() -> None:
    attributes = index_key_attributes([_ALL])
    assert attributes == [("all", "g", "S", "HASH"), ("all", "r", "N", "RANGE")]
    with pytest.raises(DynamoError) as err:
        check_index_key_values(attributes, _item("a", 1, r={"S": "x"}))
    assert err.value.message == (
        "One or more parameter values were invalid: Type mismatch for Index Key r Expected: N Actual: S "
        "IndexName: all"
    )
    check_index_key_values(attributes, _item("a", 1, g={"S": "x"}))  # a missing one is allowed


@pytest.mark.parametrize(("value", "what"), [({"S": ""}, "string")])
def test_a_write_with_an_empty_index_key_is_refused(value: dict[str, str], what: str) -> None:
    with pytest.raises(DynamoError) as err:
        check_index_key_values(index_key_attributes([_ALL]), _item("a", 1, g=value))
    assert err.value.message == (
        "One or more parameter values are not valid. A value specified for a secondary index key is not "
        f"supported. The AttributeValue for a key attribute cannot contain an empty {what} value. "
        "IndexName: all, IndexKey: g"
    )


def test_an_index_key_longer_than_a_key_of_its_role_is_refused() -> None:
    by_tag = SecondaryIndex("tags", "GLOBAL", KeyElement("g", "S"), KeyElement("t", "S"))
    attributes = index_key_attributes([by_tag])
    check_index_key_values(attributes, _item("a", 1, g={"S": "x" * 2048}, t={"S": "y" * 1024}))
    for item, name, size, limit in (
        (_item("a", 1, g={"S": "x" * 2049}), "g", 2049, 2048),
        (_item("a", 1, t={"S": "é" * 513}), "t", 1026, 1024),  # bytes of UTF-8, not characters
    ):
        with pytest.raises(DynamoError) as err:
            check_index_key_values(attributes, item)
        assert err.value.message == (
            f"One or more parameter values were invalid: Size limit exceeded for Index Key {name} "
            f"Actual Size: {size} bytes Max Size: {limit} bytes IndexName: tags"
        )


# --- what a write costs each index -----------------------------------------------------

_INDEXED = dataclasses.replace(_TABLE, indexes=(_ALL, _KEYS, _INCLUDE))
_SPECS = capacity_specs(_INDEXED)


def _units(old: dict[str, dict[str, str]] | None, new: dict[str, dict[str, str]] | None) -> dict[str, float]:
    # Through JSON, as the specs travel to the storage node.
    return index_write_units(orjson.loads(orjson.dumps(_SPECS)), old, new)


def test_putting_an_item_with_an_index_key_costs_that_index_its_entry() -> None:
    item = _item("a", 1, g={"S": "x"}, r={"N": "2"})
    assert _units(None, item) == {"all": 1.0, "keys": 1.0, "inc": 1.0}
    # Without the index's key attributes the index is not written.
    assert _units(None, _item("a", 1, r={"N": "2"})) == {"inc": 1.0}
    assert _units(None, _item("a", 1)) == {}


def test_deleting_an_indexed_item_costs_each_index_its_old_entry() -> None:
    old = _item("a", 1, g={"S": "x"}, r={"N": "2"}, big={"S": "z" * 3000})
    # The KEYS_ONLY and INCLUDE entries are small.
    assert _units(old, None) == {"all": 3.0, "keys": 1.0, "inc": 1.0}


def test_a_changed_index_key_costs_a_delete_and_a_put() -> None:
    old = _item("a", 1, g={"S": "x"}, r={"N": "2"})
    new = _item("a", 1, g={"S": "y"}, r={"N": "2"})
    # The local index neither is keyed on g nor projects it: its entry stays.
    assert _units(old, new) == {"all": 2.0, "keys": 2.0}


def test_an_entry_costs_nothing_unless_its_projection_changes() -> None:
    old = _item("a", 1, g={"S": "x"}, r={"N": "2"})
    # An attribute only the ALL index projects: the others' entries stay as they were.
    assert _units(old, {**old, "d": {"S": "blue"}}) == {"all": 1.0}
    # The INCLUDE index projects c.
    assert _units(old, {**old, "c": {"S": "red"}}) == {"all": 1.0, "inc": 1.0}
    # The same item again: no entry changes.
    assert _units(old, dict(old)) == {}
    # An item outside an index before and after costs it nothing.
    assert _units(_item("a", 1), _item("a", 1, d={"S": "x"})) == {}


def test_a_write_reports_its_indexes_beside_the_table() -> None:
    units = {"all": (False, 2.0), "inc": (True, 1.0)}
    assert consumed_with_indexes("t", 1.0, units, "TOTAL") == {"TableName": "t", "CapacityUnits": 4.0}
    assert consumed_with_indexes("t", 1.0, units, "INDEXES") == {
        "TableName": "t",
        "CapacityUnits": 4.0,
        "Table": {"CapacityUnits": 1.0},
        "GlobalSecondaryIndexes": {"all": {"CapacityUnits": 2.0}},
        "LocalSecondaryIndexes": {"inc": {"CapacityUnits": 1.0}},
    }
    assert consumed_with_indexes("t", 1.0, {}, "INDEXES") == {
        "TableName": "t",
        "CapacityUnits": 1.0,
        "Table": {"CapacityUnits": 1.0},
    }
    assert consumed_with_indexes("t", 1.0, units, "NONE") is None
