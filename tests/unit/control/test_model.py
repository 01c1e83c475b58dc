"""Control-store records and their JSON form (as stored in etcd)."""

from __future__ import annotations

import dataclasses

import orjson
from hypothesis import given
from hypothesis import strategies as st

from partita.common.partition_map import Partition, split_evenly
from partita.control.model import HASH_SPACE_END, KeyElement, NodeRecord, TableRecord, new_table_id

SORT_KEY = KeyElement("sk", "N")


def sample(partitions: int = 3, sort_key: KeyElement | None = SORT_KEY) -> TableRecord:
    parts = tuple(
        Partition(f"p{i}", start, end, (f"n{i}", f"n{i + 1}"), f"n{i}" if i % 2 else None)
        for i, (start, end) in enumerate(split_evenly(partitions))
    )
    return TableRecord(
        name="Orders.v2_x-1",
        table_id=2**62 + 5,
        status="CREATING",
        partition_key=KeyElement("pk", "S"),
        sort_key=sort_key,
        attribute_definitions=(("pk", "S"), ("sk", "N")) if sort_key else (("pk", "S"),),
        billing_mode="PROVISIONED",
        read_capacity=3200,
        write_capacity=1000,
        created_at=1763703480.123,
        partitions=parts,
        map_version=7,
        tags=(("team", "payments"), ("env", "prod")),
    )


def through_json(record: TableRecord, revision: int = 0) -> TableRecord:
    return TableRecord.from_json(orjson.loads(orjson.dumps(record.to_json())), revision)


def test_json_round_trip_preserves_every_field() -> None:
    record = sample()
    back = through_json(record)
    assert back == record
    assert [dataclasses.astuple(p) for p in back.partitions] == [
        dataclasses.astuple(p) for p in record.partitions
    ]


def test_the_last_partition_ends_at_two_to_the_64_through_json() -> None:
    record = sample(partitions=1)
    assert record.partitions[-1].end == HASH_SPACE_END == 2**64
    text = orjson.dumps(record.to_json())  # orjson refuses integers above 2**64 - 1
    back = TableRecord.from_json(orjson.loads(text))
    assert back.partitions[-1].end == 2**64
    assert back.partition_map.floor_lookup(2**64 - 1).partition_id == "p0"


@given(st.integers(min_value=1, max_value=64))
def test_any_even_split_survives_the_round_trip(count: int) -> None:
    record = sample(partitions=count)
    assert through_json(record).partitions == record.partitions


def test_a_table_without_sort_key_round_trips_with_none() -> None:
    record = sample(sort_key=None)
    data = record.to_json()
    assert data["sort_key"] is None
    assert through_json(record).sort_key is None


def test_revision_comes_from_the_store_and_does_not_affect_equality() -> None:
    record = sample()
    back = through_json(record, revision=42)
    assert back.revision == 42
    assert back == record
    assert "revision" not in record.to_json()


def test_optional_fields_default_when_absent() -> None:
    data = sample().to_json()
    del data["map_version"]
    del data["tags"]
    for p in data["partitions"]:
        del p["leader"]
    back = TableRecord.from_json(data)
    assert back.map_version == 1
    assert back.tags == ()
    assert all(p.leader is None for p in back.partitions)


def test_partition_map_carries_the_map_version() -> None:
    pm = sample().partition_map
    assert pm.version == 7
    assert len(pm) == 3


def test_with_status_changes_only_the_status() -> None:
    record = dataclasses.replace(sample(), revision=9)
    active = record.with_status("ACTIVE")
    assert active.status == "ACTIVE"
    assert record.status == "CREATING"
    assert dataclasses.replace(active, status="CREATING") == record
    assert active.revision == 9  # the CAS compares against the revision that was read


def test_node_record_round_trips() -> None:
    node = NodeRecord("node-a", "a", "127.0.0.1:7001", "127.0.0.1:7101", 1234)
    assert NodeRecord.from_json(orjson.loads(orjson.dumps(node.to_json()))) == node


def test_new_table_ids_are_odd_positive_63_bit_and_distinct() -> None:
    ids = [new_table_id() for _ in range(200)]
    assert all(i % 2 == 1 and 0 < i < 2**63 for i in ids)
    assert len(set(ids)) == len(ids)
