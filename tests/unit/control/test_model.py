"""Control-store records, their JSON form (as stored in etcd), and the derived status."""

from __future__ import annotations

import dataclasses

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.common.keys import KEY_HASH_BLAKE2B, KEY_HASH_DYNAMODB
from partita.common.partition_map import Partition, split_evenly
from partita.control.model import (
    HASH_SPACE_END,
    BackupInfo,
    Claim,
    KeyElement,
    NodeRecord,
    PartitionStats,
    PointInTimeRecovery,
    ResourcePolicy,
    RestoreInfo,
    Revision,
    SplitParent,
    TableRecord,
    TableSpec,
    TableState,
    TableStatus,
    new_table_id,
    partition_from_json,
    partition_to_json,
    table_status,
)

SORT_KEY = KeyElement("sk", "N")


def spec(sort_key: KeyElement | None = SORT_KEY, **changes: object) -> TableSpec:
    base = TableSpec(
        name="Orders.v2_x-1",
        table_id=2**62 + 5,
        partition_key=KeyElement("pk", "S"),
        sort_key=sort_key,
        attribute_definitions=(("pk", "S"), ("sk", "N")) if sort_key else (("pk", "S"),),
        billing_mode="PROVISIONED",
        read_capacity=3200,
        write_capacity=1000,
        created_at=1763703480.123,
        tags=(("team", "payments"), ("env", "prod")),
        generation=3,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def partitions(count: int) -> list[Partition]:
    return [
        Partition(f"p{i}", start, end, (f"n{i}", f"n{i + 1}"), f"n{i}" if i % 2 else None)
        for i, (start, end) in enumerate(split_evenly(count))
    ]


def through_json(s: TableSpec, revision: str = "") -> TableSpec:
    return TableSpec.from_json(orjson.loads(orjson.dumps(s.to_json())), Revision(revision))


def test_spec_json_round_trip_preserves_every_field() -> None:
    assert through_json(spec()) == spec()
    assert through_json(spec(deleting=True)).deleting is True
    assert through_json(spec(deletion_protection=True)).deletion_protection is True
    policies = (
        ResourcePolicy("", '{"Statement": []}', "1000"),
        ResourcePolicy("2026-11-29T10:00:00.000", "{}", "7"),
    )
    assert through_json(spec(policies=policies)).policies == policies
    assert "policies" not in spec().to_json()  # records without policies are unchanged
    backup = BackupInfo(
        "01-ab", "nightly", "arn:b", 3.5, "arn:t", spec().to_json(), "AVAILABLE", 7, 900, Claim("r", 9.0)
    )
    restore = RestoreInfo("arn:b", "arn:t", 4.5, ".partita-backup-01-ab", True, Claim("r", 9.0))
    assert through_json(spec(backup=backup)).backup == backup
    assert through_json(spec(restore=restore)).restore == restore
    assert "backup" not in spec().to_json() and "restore" not in spec().to_json()


def test_a_restore_in_progress_is_creating_to_clients_though_its_partitions_serve() -> None:
    restore = RestoreInfo("arn:b", "arn:t", 4.5, ".partita-backup-01-ab")
    active = TableState(spec().name, spec().table_id, "ACTIVE", spec().generation)
    record = TableRecord.of(spec(restore=restore), active, partitions(2))
    assert (record.status, record.placed) == ("CREATING", True)
    done = TableRecord.of(
        spec(restore=dataclasses.replace(restore, in_progress=False)), active, partitions(2)
    )
    assert (done.status, done.placed) == ("ACTIVE", True)
    assert TableRecord.of(spec(restore=restore), None, []).placed is False
    updating = TableState(spec().name, spec().table_id, "ACTIVE", spec().generation - 1)
    assert TableRecord.of(spec(), updating, partitions(2)).placed  # a table being updated still serves
    assert TableRecord.of(spec(backup=BackupInfo("i", "n", "a", 1.0, "s", {})), active, partitions(2)).hidden


def test_a_tables_key_hash_round_trips_and_an_older_record_keeps_blake2b() -> None:
    made = spec(key_hash=KEY_HASH_DYNAMODB)
    assert through_json(made).key_hash == KEY_HASH_DYNAMODB
    assert TableRecord.of(made, None, []).key_hash == KEY_HASH_DYNAMODB
    assert "key_hash" not in spec().to_json()  # a record from before reads back as it was
    assert through_json(spec()).key_hash == KEY_HASH_BLAKE2B


def test_a_tables_warm_throughput_round_trips_and_an_older_record_has_none() -> None:
    warmed = spec(warm_throughput=(1000, 1200))
    assert through_json(warmed).warm_throughput == (1000, 1200)
    assert "warm_throughput" not in spec().to_json()  # records without it are unchanged
    assert through_json(spec()).warm_throughput == (0, 0)
    assert TableRecord.of(warmed, None, []).warm_throughput == (1000, 1200)


def test_a_tables_class_and_maximum_round_trip_and_older_records_have_neither() -> None:
    classed = spec(
        table_class="STANDARD_INFREQUENT_ACCESS", table_class_changed_at=12.5, on_demand_max=(0, 7)
    )
    assert through_json(classed) == classed
    assert "table_class" not in spec().to_json() and "on_demand_max" not in spec().to_json()
    assert (through_json(spec()).table_class, through_json(spec()).on_demand_max) == ("", (0, 0))


def test_point_in_time_recovery_and_a_point_in_time_restore_round_trip_and_older_records_have_none() -> None:
    recovering = spec(point_in_time=PointInTimeRecovery(False, 30.5, 9))
    assert through_json(recovering) == recovering
    assert "point_in_time" not in spec().to_json()
    assert through_json(spec()).point_in_time == PointInTimeRecovery()
    restore = RestoreInfo("", "arn", 50.0, "source", point_in_time=45.125, source_table_id=77)
    assert RestoreInfo.from_json(restore.to_json()) == restore
    assert TableRecord.of(recovering, None, []).point_in_time == recovering.point_in_time


def test_a_spec_without_sort_key_round_trips_with_none() -> None:
    s = spec(sort_key=None)
    assert s.to_json()["sort_key"] is None
    assert through_json(s).sort_key is None


def test_spec_fields_added_later_default_when_absent_and_unknown_ones_are_ignored() -> None:
    # An older record has neither generation nor deleting; a newer one may carry fields
    # this version does not know (the table spec stays extensible).
    data = spec().to_json()
    del data["generation"], data["deleting"], data["tags"], data["deletion_protection"]
    data["time_to_live"] = {"attribute": "expires"}
    back = TableSpec.from_json(data)
    assert (back.generation, back.deleting, back.tags, back.deletion_protection) == (1, False, (), False)


def test_revision_comes_from_the_store_and_does_not_affect_equality() -> None:
    back = through_json(spec(), revision="42")
    assert back.revision == "42"
    assert back == spec()
    assert "revision" not in spec().to_json()


def test_state_round_trips() -> None:
    state = TableState("t", 9, "ACTIVE", 4)
    back = TableState.from_json(orjson.loads(orjson.dumps(state.to_json())), Revision("7"))
    assert back == state
    assert back.revision == "7"


@given(st.integers(min_value=1, max_value=64))
def test_any_even_split_survives_the_partition_round_trip(count: int) -> None:
    parts = partitions(count)
    assert [partition_from_json(orjson.loads(orjson.dumps(partition_to_json(p)))) for p in parts] == parts


def test_the_last_partition_ends_at_two_to_the_64_through_json() -> None:
    (whole,) = partitions(1)
    text = orjson.dumps(partition_to_json(whole))  # orjson refuses integers above 2**64 - 1
    assert partition_from_json(orjson.loads(text)).end == HASH_SPACE_END == 2**64


@pytest.mark.parametrize(
    ("changes", "state", "expected"),
    [
        ({}, None, "CREATING"),
        ({}, TableState("Orders.v2_x-1", 2**62 + 5, "CREATING", 3), "CREATING"),
        ({}, TableState("Orders.v2_x-1", 2**62 + 5, "ACTIVE", 3), "ACTIVE"),
        ({}, TableState("Orders.v2_x-1", 2**62 + 5, "ACTIVE", 2), "UPDATING"),
        ({"deleting": True}, TableState("Orders.v2_x-1", 2**62 + 5, "ACTIVE", 3), "DELETING"),
        ({"deleting": True}, None, "DELETING"),
        # The state of an earlier incarnation under the same name does not count.
        ({}, TableState("Orders.v2_x-1", 99, "ACTIVE", 3), "CREATING"),
    ],
)
def test_table_status_is_derived_from_spec_and_state(
    changes: dict[str, object], state: TableState | None, expected: TableStatus
) -> None:
    assert table_status(spec(**changes), state) == expected


def test_the_joined_record_orders_partitions_and_carries_the_derived_status() -> None:
    parts = partitions(3)
    record = TableRecord.of(spec(), TableState("Orders.v2_x-1", 2**62 + 5, "ACTIVE", 2), parts[::-1])
    assert record.status == "UPDATING"
    assert record.partitions == tuple(parts)
    assert len(record.partition_map) == 3
    assert (record.read_capacity, record.tags) == (3200, spec().tags)
    assert record.key_names == ["pk", "sk"]


def test_with_status_changes_only_the_status() -> None:
    record = TableRecord.of(spec(), None, partitions(2))
    active = record.with_status("ACTIVE")
    assert (record.status, active.status) == ("CREATING", "ACTIVE")
    assert dataclasses.replace(active, status="CREATING") == record


def test_node_record_round_trips() -> None:
    node = NodeRecord("node-a", "a", "127.0.0.1:7001", "127.0.0.1:7101", 1234)
    assert NodeRecord.from_json(orjson.loads(orjson.dumps(node.to_json()))) == node


def test_partition_stats_round_trip_with_and_without_a_split_parent() -> None:
    counted = PartitionStats(4, 400, 1.5, split_hash=7, hot_seconds=2.0)
    estimate = PartitionStats(2, 200, 1.5, estimated=True, parent=SplitParent("p1", 4, 400))
    for stats in (counted, estimate):
        assert PartitionStats.from_json(orjson.loads(orjson.dumps(stats.to_json()))) == stats
    # Figures stored before estimates named their parent read back without one.
    older = {k: v for k, v in estimate.to_json().items() if k != "parent"}
    assert PartitionStats.from_json(older) == dataclasses.replace(estimate, parent=None)


def test_new_table_ids_are_odd_positive_63_bit_and_distinct() -> None:
    ids = [new_table_id() for _ in range(200)]
    assert all(i % 2 == 1 and 0 < i < 2**63 for i in ids)
    assert len(set(ids)) == len(ids)
