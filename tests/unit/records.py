"""Table records for unit tests: one partition-key-only table, shaped by keywords."""

from __future__ import annotations

import dataclasses
from typing import Any

from partita.common.partition_map import Partition
from partita.control.model import (
    NO_REVISION,
    BillingMode,
    KeyElement,
    TablePhase,
    TableRecord,
    TableSpec,
    TableState,
    TableStatus,
)
from partita.control.store import MemoryControlStore

WHOLE_RANGE = (Partition("p0", 0, 2**64, ("a",), "a"),)


def table_record(
    *partitions: Partition,
    name: str = "t",
    table_id: int = 7,
    status: TableStatus = "ACTIVE",
    billing_mode: BillingMode = "PAY_PER_REQUEST",
    read_capacity: int = 0,
    write_capacity: int = 0,
) -> TableRecord:
    return TableRecord(
        name=name,
        table_id=table_id,
        status=status,
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode=billing_mode,
        read_capacity=read_capacity,
        write_capacity=write_capacity,
        created_at=0.0,
        partitions=partitions or WHOLE_RANGE,
    )


def table_spec(name: str = "t", table_id: int = 7, **changes: Any) -> TableSpec:
    """A PAY_PER_REQUEST spec keyed by `pk` (S); `changes` replace any other field."""
    spec = TableSpec(
        name=name,
        table_id=table_id,
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
    )
    return dataclasses.replace(spec, **changes)


async def put_record(store: MemoryControlStore, record: TableRecord) -> None:
    """Make the store hold `record` as the joined view of its spec, state and partitions
    (created or replaced): the status decides the state the autoadmin would have written."""
    current = await store.get_table_spec(record.name)
    generation = 2 if record.status == "UPDATING" else 1
    spec = TableSpec(
        name=record.name,
        table_id=record.table_id,
        partition_key=record.partition_key,
        sort_key=record.sort_key,
        attribute_definitions=record.attribute_definitions,
        billing_mode=record.billing_mode,
        read_capacity=record.read_capacity,
        write_capacity=record.write_capacity,
        created_at=record.created_at,
        tags=record.tags,
        time_to_live=record.time_to_live,
        indexes=record.indexes,
        generation=generation,
        deleting=record.status == "DELETING",
        revision=current.revision if current else NO_REVISION,
    )
    assert await (store.replace_table_spec(spec) if current else store.create_table_spec(spec))
    state = await store.get_table_state(record.name)
    phase: TablePhase = "CREATING" if record.status == "CREATING" else "ACTIVE"
    assert await store.put_table_state(
        TableState(record.name, record.table_id, phase, 1, state.revision if state else NO_REVISION)
    )
    stale = [p.partition_id for p in await store.list_partitions(record.table_id)]
    await store.change_partitions(
        record.table_id,
        record.partitions,
        [i for i in stale if i not in {p.partition_id for p in record.partitions}],
    )
