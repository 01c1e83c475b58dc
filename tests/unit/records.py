"""Table records for unit tests: one partition-key-only table, shaped by keywords."""

from __future__ import annotations

from partita.common.partition_map import Partition
from partita.control.model import BillingMode, KeyElement, TableRecord, TableStatus

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
