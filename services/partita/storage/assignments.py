"""What a storage node in admin hosting mode was told to host, kept on its disk.

In Kubernetes the operator, not the control store, says which replicas a node hosts
(the storage admin RPC). The node keeps those assignments in a small JSON file next to
its data, written atomically, so a restarted pod keeps serving what it was given before
the operator speaks to it again. `hosted_tables` turns them into the same
`HostedTable` view the data plane uses in the etcd-driven mode.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import orjson

from partita.common.partition_map import Partition, current_partitions
from partita.control.model import (
    BillingMode,
    KeyElement,
    PointInTimeRecovery,
    StreamSpec,
    TableRecord,
    TimeToLive,
)
from partita.storage.hosting import HostedTable

FILE_NAME = "assignments.json"
# A member's role in an assignment (admin.proto `Member.role`).
FULL, JOINING, LOG = "full", "joining", "log"
ROLES = (FULL, JOINING, LOG)


@dataclass(frozen=True)
class TableInfo:
    """What the node needs of its table: names and keys, throughput, Time to Live."""

    table_id: int
    name: str
    partition_key: KeyElement
    sort_key: KeyElement | None
    billing_mode: BillingMode
    read_capacity: int
    write_capacity: int
    created_at: float
    ttl_attribute: str | None  # while Time to Live is on
    stream: StreamSpec = field(default_factory=StreamSpec)
    point_in_time: PointInTimeRecovery = field(default_factory=PointInTimeRecovery)


@dataclass(frozen=True)
class Assignment:
    """One replica this node hosts: a partition (by its resource name) of a table."""

    partition: str
    table: TableInfo
    start: int
    end: int  # exclusive (the Partition resource's inclusive last + 1)
    members: tuple[str, ...]
    # (member, host:port of its replication listener) for the members the operator gave
    # an address: in Kubernetes the group's peers are found there, not in the registry.
    addresses: tuple[tuple[str, str], ...] = ()
    # (member, role) of the members that are not full replicas: "joining" (a full replica
    # being built) or "log" (WAL only). Only a group's leader adds them (repair).
    roles: tuple[tuple[str, str], ...] = ()
    # A replicated partition marked for a split at this key hash (0: none).
    split_at: int = 0
    # A split child: its parent partition and the index of the parent's SPLIT entry.
    parent: str = ""
    parent_index: int = 0
    # Full members the group keeps, the Table's `replicationFactor` (0: the node's
    # default). A setting of the operator's, as the table's are: `with_members_of`
    # keeps this assignment's.
    replication_factor: int = 0

    def role_of(self, node: str) -> str:
        return dict(self.roles).get(node, FULL)

    def with_members_of(self, other: Assignment) -> Assignment:
        """This assignment (its table, its range) with `other`'s members, their
        replication addresses and roles."""
        return replace(self, members=other.members, addresses=other.addresses, roles=other.roles)

    def membership(self) -> dict[str, str]:
        """Each member's role: what a membership change changes."""
        roles = dict(self.roles)
        return {m: roles.get(m, FULL) for m in self.members}

    def as_partition(self) -> Partition:
        # The placement's first full member leads while replication does not elect one.
        full = tuple(m for m in self.members if self.role_of(m) == FULL)
        joining = tuple(m for m in self.members if self.role_of(m) == JOINING)
        logs = tuple(m for m in self.members if self.role_of(m) == LOG)
        return Partition(
            self.partition,
            self.start,
            self.end,
            full,
            full[0],
            log_replicas=logs,
            joining=joining,
            split_at=self.split_at,
            parent=self.parent,
            parent_index=self.parent_index,
            replication_factor=self.replication_factor,
        )


def peer_addresses(assignments: Iterable[Assignment]) -> dict[str, str]:
    """Every member's replication address the assignments carry (the newest wins: the
    operator sends the same fleet-wide address for a node in every assignment)."""
    return {node: address for a in assignments for node, address in a.addresses}


def current(assignments: Iterable[Assignment]) -> list[Assignment]:
    """A split parent's assignment or its children's, never both: the operator creates
    the children before it deletes the parent, and once this node holds children that
    cover the parent's range they take its place (`partition_map.current_partitions`)."""
    given = list(assignments)
    kept = {p.partition_id for p in current_partitions(a.as_partition() for a in given)}
    return [a for a in given if a.partition in kept]


def superseded(assignments: Iterable[Assignment]) -> frozenset[str]:
    """Split parents whose children (covering their range) are assigned too."""
    given = list(assignments)
    kept = {a.partition for a in current(given)}
    parents = {a.parent for a in given}
    return frozenset(a.partition for a in given if a.partition not in kept and a.partition in parents)


def hosted_tables(assignments: Iterable[Assignment], node_id: str) -> dict[int, HostedTable]:
    """The tables (by id) this node serves, each with the partitions it was given."""
    by_table: dict[int, list[Assignment]] = {}
    for a in current(assignments):
        if node_id in a.members:
            by_table.setdefault(a.table.table_id, []).append(a)
    out = {}
    for table_id, given in by_table.items():
        hosted = HostedTable.of(_record(given[-1].table, [a.as_partition() for a in given]), node_id)
        if hosted.partitions:  # a joining or log-only member serves nothing yet
            out[table_id] = hosted
    return out


def table_records(assignments: Iterable[Assignment]) -> list[TableRecord]:
    """The assignments as table records, each partition with all its members and roles
    (what `node.sync_groups` reads in the local cluster from the control store)."""
    by_table: dict[int, list[Assignment]] = {}
    for a in assignments:
        by_table.setdefault(a.table.table_id, []).append(a)
    return [_record(given[-1].table, [a.as_partition() for a in given]) for given in by_table.values()]


def _record(table: TableInfo, partitions: list[Partition]) -> TableRecord:
    ttl = TimeToLive("ENABLED", table.ttl_attribute) if table.ttl_attribute else TimeToLive()
    return TableRecord(
        name=table.name,
        table_id=table.table_id,
        status="ACTIVE",
        partition_key=table.partition_key,
        sort_key=table.sort_key,
        attribute_definitions=tuple(
            (k.name, k.type) for k in (table.partition_key, table.sort_key) if k is not None
        ),
        billing_mode=table.billing_mode,
        read_capacity=table.read_capacity,
        write_capacity=table.write_capacity,
        created_at=table.created_at,
        partitions=tuple(sorted(partitions, key=lambda p: p.start)),
        time_to_live=ttl,
        stream=table.stream,
        point_in_time=table.point_in_time,
    )


class AssignmentBook:
    """The node's assignments, by partition name, mirrored to `path` on every change."""

    def __init__(self, path: Path, assignments: Mapping[str, Assignment]) -> None:
        self.path = path
        self.assignments = dict(assignments)

    @classmethod
    def open(cls, data_dir: Path) -> AssignmentBook:
        path = data_dir / FILE_NAME
        if not path.exists():
            return cls(path, {})
        entries = orjson.loads(path.read_bytes())
        return cls(path, {e["partition"]: _from_json(e) for e in entries})

    def put(self, assignment: Assignment) -> bool:
        """Record the assignment; False (and no write) when it is already the one held."""
        if self.assignments.get(assignment.partition) == assignment:
            return False
        self._save({**self.assignments, assignment.partition: assignment})
        return True

    def remove(self, partition: str) -> Assignment | None:
        gone = self.assignments.get(partition)
        if gone is not None:
            self._save({k: v for k, v in self.assignments.items() if k != partition})
        return gone

    def _save(self, assignments: dict[str, Assignment]) -> None:
        """On disk first, then in memory: a failed write changes neither."""
        # Write a sibling, fsync it, rename over: a crash leaves the old or the new file.
        tmp = self.path.with_suffix(".tmp")
        data = orjson.dumps([_to_json(a) for a in assignments.values()])
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        self.assignments = assignments


def _key_json(key: KeyElement | None) -> list[str] | None:
    return [key.name, key.type] if key is not None else None


def _to_json(a: Assignment) -> dict[str, Any]:
    t = a.table
    return {
        "partition": a.partition,
        "start": a.start,
        "last": a.end - 1,  # inclusive: the last partition's end (2**64) is past JSON's ints
        "members": list(a.members),
        "addresses": dict(a.addresses),
        "roles": dict(a.roles),
        "split_at": f"{a.split_at:x}",
        "parent": a.parent,
        "parent_index": a.parent_index,
        "replication_factor": a.replication_factor,
        "table": {
            "table_id": t.table_id,
            "name": t.name,
            "partition_key": _key_json(t.partition_key),
            "sort_key": _key_json(t.sort_key),
            "billing_mode": t.billing_mode,
            "read_capacity": t.read_capacity,
            "write_capacity": t.write_capacity,
            "created_at": t.created_at,
            "ttl_attribute": t.ttl_attribute,
            "stream": t.stream.to_json(),
            "point_in_time": t.point_in_time.to_json(),
        },
    }


def _from_json(e: Mapping[str, Any]) -> Assignment:
    t = e["table"]
    sort_key = t["sort_key"]
    table = TableInfo(
        table_id=int(t["table_id"]),
        name=str(t["name"]),
        partition_key=KeyElement(*t["partition_key"]),
        sort_key=KeyElement(*sort_key) if sort_key else None,
        billing_mode=cast(BillingMode, t["billing_mode"]),
        read_capacity=int(t["read_capacity"]),
        write_capacity=int(t["write_capacity"]),
        created_at=float(t["created_at"]),
        ttl_attribute=t["ttl_attribute"],
        stream=StreamSpec.from_json(t.get("stream") or {}),
        point_in_time=PointInTimeRecovery.from_json(t.get("point_in_time") or {}),
    )
    # Files written before members carried addresses have none.
    addresses = tuple((str(n), str(a)) for n, a in e.get("addresses", {}).items())
    roles = tuple((str(n), str(r)) for n, r in e.get("roles", {}).items())
    return Assignment(
        str(e["partition"]),
        table,
        int(e["start"]),
        int(e["last"]) + 1,
        tuple(e["members"]),
        addresses,
        roles,
        # Absent from files written before replicated partitions split under the operator.
        split_at=int(e.get("split_at", "0"), 16),
        parent=str(e.get("parent", "")),
        parent_index=int(e.get("parent_index", 0)),
        # Absent from files written before a Table's replication factor could change.
        replication_factor=int(e.get("replication_factor", 0)),
    )
