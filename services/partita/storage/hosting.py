"""Which partitions this node hosts, derived from the control store's table records.

Pure: `desired_hosting(tables, node_id)` says what the node should serve; the node
compares it with what it serves now and acts on the difference.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from partita.common.partition_map import Partition
from partita.control.model import TableRecord


@dataclass(frozen=True)
class HostedTable:
    record: TableRecord
    partitions: tuple[Partition, ...]  # those with a replica on this node, by start
    starts: tuple[int, ...]

    @classmethod
    def of(cls, record: TableRecord, node_id: str) -> HostedTable:
        mine = tuple(sorted((p for p in record.partitions if node_id in p.replicas), key=lambda p: p.start))
        return cls(record, mine, tuple(p.start for p in mine))

    def owner_of(self, h: int) -> Partition | None:
        """The hosted partition whose range holds hash `h`, if any."""
        i = bisect.bisect_right(self.starts, h) - 1
        if i >= 0 and h < self.partitions[i].end:
            return self.partitions[i]
        return None


def desired_hosting(tables: list[TableRecord], node_id: str) -> dict[int, HostedTable]:
    """Tables (by id) with at least one partition on this node that should be served."""
    out = {}
    for record in tables:
        if record.status == "DELETING":
            continue
        hosted = HostedTable.of(record, node_id)
        if hosted.partitions:
            out[record.table_id] = hosted
    return out


def tables_to_drop(tables: list[TableRecord], ids_with_data: set[int], node_id: str) -> list[int]:
    """Ids of tables whose data this node may hold but should delete.

    A table being deleted that has a replica here, or a table this node holds data of
    that is gone from the store altogether, is dropped; dropping is idempotent. The
    caller must only pass a `tables` list read successfully in full.
    """
    live = {t.table_id for t in tables if t.status != "DELETING"}
    deleting = {
        t.table_id
        for t in tables
        if t.status == "DELETING" and any(node_id in p.replicas for p in t.partitions)
    }
    return sorted((ids_with_data - live) | deleting)
