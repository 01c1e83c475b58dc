"""Records kept in the control store, and their JSON form.

A `TableRecord` is the whole desired state of one table: schema, capacity settings,
status and the partition map. Each incarnation of a table gets a fresh random
`table_id`, the prefix of its storage keys, so a table deleted and created again under
the same name can never see the old incarnation's items.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from partita.common.partition_map import Partition, PartitionMap

TableStatus = Literal["CREATING", "ACTIVE", "UPDATING", "DELETING"]
BillingMode = Literal["PROVISIONED", "PAY_PER_REQUEST"]
TimeToLiveStatus = Literal["ENABLING", "ENABLED", "DISABLING", "DISABLED"]
HASH_SPACE_END = 2**64


@dataclass(frozen=True)
class KeyElement:
    name: str
    type: Literal["S", "N", "B"]


@dataclass(frozen=True)
class TimeToLive:
    """The table's Time to Live setting, as UpdateTimeToLive last left it.

    `attribute_name` is the attribute holding each item's expiry (epoch seconds) while TTL
    is on; `changed_at` (epoch seconds) is when UpdateTimeToLive last changed the setting,
    from which DynamoDB's cool-down between changes counts.
    """

    status: TimeToLiveStatus = "DISABLED"
    attribute_name: str | None = None
    changed_at: float | None = None

    @property
    def active(self) -> bool:
        """Whether expired items are being deleted (DynamoDB: ENABLING or ENABLED)."""
        return self.status in ("ENABLING", "ENABLED")

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "attribute_name": self.attribute_name, "changed_at": self.changed_at}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TimeToLive:
        changed_at = data.get("changed_at")
        return cls(
            status=data.get("status", "DISABLED"),
            attribute_name=data.get("attribute_name"),
            changed_at=float(changed_at) if changed_at is not None else None,
        )


@dataclass(frozen=True)
class TableRecord:
    name: str
    table_id: int
    status: TableStatus
    partition_key: KeyElement
    sort_key: KeyElement | None
    attribute_definitions: tuple[tuple[str, str], ...]
    billing_mode: BillingMode
    read_capacity: int
    write_capacity: int
    created_at: float
    partitions: tuple[Partition, ...]
    map_version: int = 1
    tags: tuple[tuple[str, str], ...] = ()
    time_to_live: TimeToLive = TimeToLive()
    # Set when the record was read from the store; compared on update (optimistic CAS).
    revision: int = field(default=0, compare=False)

    @property
    def partition_map(self) -> PartitionMap:
        return PartitionMap(list(self.partitions), version=self.map_version)

    @property
    def key_names(self) -> list[str]:
        """The key attributes: the partition key's name, then the sort key's if any."""
        return [self.partition_key.name] + ([self.sort_key.name] if self.sort_key else [])

    def with_status(self, status: TableStatus) -> TableRecord:
        return dataclasses.replace(self, status=status)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "table_id": self.table_id,
            "status": self.status,
            "partition_key": [self.partition_key.name, self.partition_key.type],
            "sort_key": [self.sort_key.name, self.sort_key.type] if self.sort_key else None,
            "attribute_definitions": [list(a) for a in self.attribute_definitions],
            "billing_mode": self.billing_mode,
            "read_capacity": self.read_capacity,
            "write_capacity": self.write_capacity,
            "created_at": self.created_at,
            "map_version": self.map_version,
            "tags": [list(t) for t in self.tags],
            "time_to_live": self.time_to_live.to_json(),
            "partitions": [
                {
                    "id": p.partition_id,
                    # Hex text: the last partition ends at 2**64, beyond JSON integers.
                    "start": f"{p.start:x}",
                    "end": f"{p.end:x}",
                    "replicas": list(p.replicas),
                    "leader": p.leader,
                }
                for p in self.partitions
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], revision: int = 0) -> TableRecord:
        sort_key = data.get("sort_key")
        return cls(
            name=data["name"],
            table_id=int(data["table_id"]),
            status=data["status"],
            partition_key=KeyElement(*data["partition_key"]),
            sort_key=KeyElement(*sort_key) if sort_key else None,
            attribute_definitions=tuple((a, t) for a, t in data["attribute_definitions"]),
            billing_mode=data["billing_mode"],
            read_capacity=int(data["read_capacity"]),
            write_capacity=int(data["write_capacity"]),
            created_at=float(data["created_at"]),
            map_version=int(data.get("map_version", 1)),
            tags=tuple((k, v) for k, v in data.get("tags", [])),
            # Absent from records written before Time to Live existed: off.
            time_to_live=TimeToLive.from_json(data.get("time_to_live") or {}),
            partitions=tuple(
                Partition(
                    partition_id=p["id"],
                    start=int(p["start"], 16),
                    end=int(p["end"], 16),
                    replicas=tuple(p["replicas"]),
                    leader=p.get("leader"),
                )
                for p in data["partitions"]
            ),
            revision=revision,
        )


@dataclass(frozen=True)
class NodeRecord:
    """A storage node as it registers itself: where to reach it and in which zone."""

    node_id: str
    zone: str
    address: str  # host:port of its gRPC server (administration)
    data_address: str = ""  # host:port of its framed data path
    pid: int = 0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeRecord:
        return cls(**data)


@dataclass(frozen=True)
class PartitionStats:
    """What a partition's leader last counted: DescribeTable's ItemCount and
    TableSizeBytes are the sums over a table's partitions."""

    item_count: int
    size_bytes: int  # DynamoDB item sizes (attribute names and values), summed
    measured_at: float  # seconds since the epoch

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionStats:
        return cls(int(data["item_count"]), int(data["size_bytes"]), float(data["measured_at"]))


def new_table_id() -> int:
    # 63 bits so the id stays positive in every language that reads the store.
    return secrets.randbits(63) | 1
