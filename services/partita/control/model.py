"""Records kept in the control store, one kind per concern, and their JSON form.

- `TableSpec`: a table as the user asked for it (CreateTable, UpdateTable, TagResource,
  DeleteTable). Routers write it; nothing else does, except that the autoadmin removes
  it once a deleted table's data is gone.
- `TableState`: what the autoadmin has made of the spec (its phase and the spec
  generation it last applied). Only the autoadmin writes it.
- `Partition` (common/partition_map.py): one object per partition, placed and split by
  the autoadmin, followed by the storage nodes and read by the routers.
- `NodeRecord`, ready markers, `PartitionStats` and `NodeLoad`: what storage nodes
  report.
- `ReplicaMove`: a replica the autoadmin asked to move off a busy node.

`TableRecord` is none of these: it is the joined, read-only view (spec + state +
partitions) that routers and storage nodes route with. Its `status` is DynamoDB's
TableStatus, derived by `table_status`.

Each incarnation of a table gets a fresh random `table_id`, the prefix of its storage
keys, so a table deleted and created again under the same name can never see the old
incarnation's items. `Revision` is opaque: etcd's mod revision as text here, a
Kubernetes resourceVersion in a CRD-backed store; it is only ever compared for equality.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NewType, get_args

from partita.common.keys import KEY_HASH_BLAKE2B
from partita.common.partition_map import Partition, PartitionMap

TableStatus = Literal["CREATING", "ACTIVE", "UPDATING", "DELETING"]
# What the autoadmin records: CREATING until every replica of the first layout serves.
TablePhase = Literal["CREATING", "ACTIVE"]
BillingMode = Literal["PROVISIONED", "PAY_PER_REQUEST"]
TimeToLiveStatus = Literal["ENABLING", "ENABLED", "DISABLING", "DISABLED"]
HASH_SPACE_END = 2**64

Revision = NewType("Revision", str)
# The revision of a record that was never read from a store.
NO_REVISION = Revision("")


@dataclass(frozen=True)
class KeyElement:
    name: str
    type: Literal["S", "N", "B"]


def _optional_time(data: dict[str, Any], key: str) -> float | None:
    """An epoch-seconds member of a stored record, None when absent or null."""
    value = data.get(key)
    return float(value) if value is not None else None


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
        return cls(
            status=data.get("status", "DISABLED"),
            attribute_name=data.get("attribute_name"),
            changed_at=_optional_time(data, "changed_at"),
        )


StreamViewType = Literal["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"]
STREAM_VIEW_TYPES: tuple[StreamViewType, ...] = get_args(StreamViewType)
# DynamoDB keeps a stream's records, and a disabled stream, for 24 hours.
STREAM_RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True)
class ResourcePolicy:
    """A resource-based policy attached to the table (`resource` "") or to one of its
    streams (`resource` the stream's label), as PutResourcePolicy left it. The document
    is kept as the caller wrote it: GetResourcePolicy answers it byte for byte."""

    resource: str
    document: str
    revision_id: str

    def to_json(self) -> dict[str, Any]:
        return {"resource": self.resource, "document": self.document, "revision_id": self.revision_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResourcePolicy:
        return cls(str(data["resource"]), str(data["document"]), str(data["revision_id"]))


def policies_from_json(data: Any) -> tuple[ResourcePolicy, ...]:
    return tuple(ResourcePolicy.from_json(p) for p in data or ())


@dataclass(frozen=True)
class Claim:
    """Which router is copying a backup or a restore, and until when it holds the job
    (epoch seconds): an expired claim means its router died, and another takes over."""

    owner: str = ""
    until: float = 0.0

    def held(self, now: float) -> bool:
        return bool(self.owner) and now < self.until

    def to_json(self) -> dict[str, Any]:
        return {"owner": self.owner, "until": self.until}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Claim:
        data = data or {}
        return cls(str(data.get("owner", "")), float(data.get("until", 0.0)))


BackupStatus = Literal["CREATING", "AVAILABLE"]


@dataclass(frozen=True)
class BackupInfo:
    """An on-demand backup (CreateBackup). Its items are kept in a table of their own,
    hidden from every DynamoDB operation: the spec carrying this record. `source` is the
    backed-up table's spec as it was asked for (JSON, `TableSpec.to_json`), from which a
    restore makes its table; `item_count` and `size_bytes` are what the copy wrote."""

    backup_id: str
    backup_name: str
    arn: str
    created_at: float
    source_arn: str
    source: dict[str, Any]
    status: BackupStatus = "CREATING"
    item_count: int = 0
    size_bytes: int = 0
    claim: Claim = Claim()

    def to_json(self) -> dict[str, Any]:
        return {
            "backup_id": self.backup_id,
            "backup_name": self.backup_name,
            "arn": self.arn,
            "created_at": self.created_at,
            "source_arn": self.source_arn,
            "source": self.source,
            "status": self.status,
            "item_count": self.item_count,
            "size_bytes": self.size_bytes,
            "claim": self.claim.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BackupInfo:
        return cls(
            backup_id=str(data["backup_id"]),
            backup_name=str(data["backup_name"]),
            arn=str(data["arn"]),
            created_at=float(data["created_at"]),
            source_arn=str(data["source_arn"]),
            source=dict(data["source"]),
            status=data.get("status", "CREATING"),
            item_count=int(data.get("item_count", 0)),
            size_bytes=int(data.get("size_bytes", 0)),
            claim=Claim.from_json(data.get("claim")),
        )


@dataclass(frozen=True)
class RestoreInfo:
    """A table made by RestoreTableFromBackup or RestoreTableToPointInTime: where its
    items come from, and whether they are all in yet (until then the table is CREATING
    to every client).

    `backup_table` is the table the items are copied from: a backup's hidden table, or
    for a point-in-time restore (`point_in_time` set, `source_backup_arn` empty) the
    source table itself (`source_table_id` tells it from a later table of its name),
    whose changes after that time are then undone."""

    source_backup_arn: str
    source_table_arn: str
    restored_at: float
    backup_table: str
    in_progress: bool = True
    claim: Claim = Claim()
    point_in_time: float | None = None
    source_table_id: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "source_backup_arn": self.source_backup_arn,
            "source_table_arn": self.source_table_arn,
            "restored_at": self.restored_at,
            "backup_table": self.backup_table,
            "in_progress": self.in_progress,
            "claim": self.claim.to_json(),
            **({"point_in_time": self.point_in_time} if self.point_in_time is not None else {}),
            **({"source_table_id": self.source_table_id} if self.source_table_id else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RestoreInfo:
        return cls(
            source_backup_arn=str(data["source_backup_arn"]),
            source_table_arn=str(data["source_table_arn"]),
            restored_at=float(data["restored_at"]),
            backup_table=str(data["backup_table"]),
            in_progress=bool(data.get("in_progress", True)),
            claim=Claim.from_json(data.get("claim")),
            point_in_time=_optional_time(data, "point_in_time"),
            source_table_id=int(data.get("source_table_id", 0)),
        )


@dataclass(frozen=True)
class StreamSpec:
    """The table's DynamoDB Stream, as CreateTable or UpdateTable last left it.

    `created_at` (epoch seconds) names the latest stream (its label and ARN); it is kept
    when the stream is disabled, as DynamoDB keeps a disabled stream readable (24 hours)
    and names it in DescribeTable. A stream enabled again is a new stream: a new time,
    and the one before joins `earlier` (disabled streams, newest last) while readable.
    """

    enabled: bool = False
    view_type: StreamViewType | None = None
    created_at: float | None = None
    disabled_at: float | None = None
    earlier: tuple[StreamSpec, ...] = ()

    @property
    def exists(self) -> bool:
        """Whether the table has a stream, enabled or still readable after disabling."""
        return self.created_at is not None

    def started(self, view_type: StreamViewType, now: float) -> StreamSpec:
        """A new stream from `now`; this one, if any, joins the disabled streams kept
        readable beside it (those disabled less than the retention period ago)."""
        before = (*self.earlier, dataclasses.replace(self, earlier=())) if self.exists else self.earlier
        kept = tuple(
            s for s in before if s.disabled_at is not None and now - s.disabled_at < STREAM_RETENTION_SECONDS
        )
        return StreamSpec(enabled=True, view_type=view_type, created_at=now, earlier=kept)

    def stopped(self, now: float) -> StreamSpec:
        """This stream disabled at `now` (still readable for the retention period)."""
        return dataclasses.replace(self, enabled=False, disabled_at=now)

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "view_type": self.view_type,
            "created_at": self.created_at,
            "disabled_at": self.disabled_at,
            **({"earlier": [s.to_json() for s in self.earlier]} if self.earlier else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StreamSpec:
        return cls(
            enabled=bool(data.get("enabled", False)),
            view_type=data.get("view_type"),
            created_at=_optional_time(data, "created_at"),
            disabled_at=_optional_time(data, "disabled_at"),
            earlier=tuple(StreamSpec.from_json(s) for s in data.get("earlier") or ()),
        )


SECONDS_PER_DAY = 86400
# DynamoDB's RecoveryPeriodInDays: its default, and its bounds (the service model's).
DEFAULT_RECOVERY_DAYS = 35


@dataclass(frozen=True)
class PointInTimeRecovery:
    """The table's point-in-time recovery, as UpdateContinuousBackups last left it.

    `enabled_at` (epoch seconds) names the current history: while it is on, every write
    keeps the item as it was before (`api/point_in_time.py`) in records of their own
    beside the stream's, kept `recovery_days`. It is kept when recovery is turned off
    (DynamoDB then still reports continuous backups ENABLED); turned on again, recovery
    starts a new history, and the old one is never read again.
    """

    enabled: bool = False
    enabled_at: float | None = None
    recovery_days: int = DEFAULT_RECOVERY_DAYS

    @property
    def ever_enabled(self) -> bool:
        return self.enabled_at is not None

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "enabled_at": self.enabled_at, "recovery_days": self.recovery_days}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PointInTimeRecovery:
        return cls(
            enabled=bool(data.get("enabled", False)),
            enabled_at=_optional_time(data, "enabled_at"),
            recovery_days=int(data.get("recovery_days", DEFAULT_RECOVERY_DAYS)),
        )


@dataclass(frozen=True)
class ThroughputHistory:
    """What DescribeTable tells of past throughput changes: when the provisioned
    throughput last rose and fell (epoch seconds), how many decreases the UTC day of
    `decrease_day` (days since the epoch) has seen, and when the table last became
    PAY_PER_REQUEST (None: it was created so, or has never been)."""

    last_increase: float | None = None
    last_decrease: float | None = None
    decrease_day: int = 0
    decreases: int = 0
    pay_per_request_since: float | None = None

    def after_change(self, before: tuple[int, int], after: tuple[int, int], now: float) -> ThroughputHistory:
        """The history once (RCU, WCU) went from `before` to `after` at `now`: an increase
        of either is an increase, a decrease of either a decrease (both, if one rose
        and the other fell)."""
        out = self
        if any(a > b for a, b in zip(after, before, strict=True)):
            out = replace(out, last_increase=now)
        if any(a < b for a, b in zip(after, before, strict=True)):
            day = int(now // SECONDS_PER_DAY)
            count = out.decreases + 1 if out.decrease_day == day else 1
            out = replace(out, last_decrease=now, decrease_day=day, decreases=count)
        return out

    def decreases_on(self, now: float) -> int:
        return self.decreases if self.decrease_day == int(now // SECONDS_PER_DAY) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "last_increase": self.last_increase,
            "last_decrease": self.last_decrease,
            "decrease_day": self.decrease_day,
            "decreases": self.decreases,
            "pay_per_request_since": self.pay_per_request_since,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ThroughputHistory:
        return cls(
            last_increase=_optional_time(data, "last_increase"),
            last_decrease=_optional_time(data, "last_decrease"),
            decrease_day=int(data.get("decrease_day", 0)),
            decreases=int(data.get("decreases", 0)),
            pay_per_request_since=_optional_time(data, "pay_per_request_since"),
        )


def _unit_pair(data: Any) -> tuple[int, int]:
    if not data:
        return (0, 0)
    read, write = data
    return (int(read), int(write))


def prepared_rates(billing_mode: str, provisioned: tuple[int, int], warm: tuple[int, int]) -> tuple[int, int]:
    """The (read, write) units per second a table's partitions are laid out for: its
    provisioned throughput or its warm throughput, whichever is higher (an on-demand
    table's, its warm throughput alone: (0, 0) when none was asked, and its layout is
    then the on-demand default)."""
    base = provisioned if billing_mode == "PROVISIONED" else (0, 0)
    return (max(base[0], warm[0]), max(base[1], warm[1]))


ProjectionType = Literal["ALL", "KEYS_ONLY", "INCLUDE"]
IndexKind = Literal["GLOBAL", "LOCAL"]


@dataclass(frozen=True)
class SecondaryIndex:
    """A global or local secondary index as CreateTable (or UpdateTable) asked for it.

    A local index shares the table's partition key; `read_capacity`/`write_capacity` are
    a provisioned global index's own throughput (0 otherwise). A global index's key may
    have up to four HASH and four RANGE attributes (DynamoDB's multi-attribute keys):
    `partition_key` and `sort_key` are the first of each, `more_hash_keys` and
    `more_range_keys` the rest, in the key schema's order.
    """

    name: str
    kind: IndexKind
    partition_key: KeyElement
    sort_key: KeyElement | None
    projection_type: ProjectionType = "ALL"
    non_key_attributes: tuple[str, ...] = ()
    read_capacity: int = 0
    write_capacity: int = 0
    created_at: float = 0.0
    more_hash_keys: tuple[KeyElement, ...] = ()
    more_range_keys: tuple[KeyElement, ...] = ()

    @property
    def hash_keys(self) -> tuple[KeyElement, ...]:
        return (self.partition_key, *self.more_hash_keys)

    @property
    def range_keys(self) -> tuple[KeyElement, ...]:
        return ((self.sort_key,) if self.sort_key else ()) + self.more_range_keys

    @property
    def multi_attribute(self) -> bool:
        return bool(self.more_hash_keys or self.more_range_keys)

    @property
    def key_names(self) -> list[str]:
        return [element.name for element in (*self.hash_keys, *self.range_keys)]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "partition_key": [self.partition_key.name, self.partition_key.type],
            "sort_key": [self.sort_key.name, self.sort_key.type] if self.sort_key else None,
            "projection_type": self.projection_type,
            "non_key_attributes": list(self.non_key_attributes),
            "read_capacity": self.read_capacity,
            "write_capacity": self.write_capacity,
            "created_at": self.created_at,
            **(
                {"more_hash_keys": [[e.name, e.type] for e in self.more_hash_keys]}
                if self.more_hash_keys
                else {}
            ),
            **(
                {"more_range_keys": [[e.name, e.type] for e in self.more_range_keys]}
                if self.more_range_keys
                else {}
            ),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SecondaryIndex:
        sort_key = data.get("sort_key")
        return cls(
            name=data["name"],
            kind=data["kind"],
            partition_key=KeyElement(*data["partition_key"]),
            sort_key=KeyElement(*sort_key) if sort_key else None,
            projection_type=data.get("projection_type", "ALL"),
            non_key_attributes=tuple(data.get("non_key_attributes", ())),
            read_capacity=int(data.get("read_capacity", 0)),
            write_capacity=int(data.get("write_capacity", 0)),
            created_at=float(data.get("created_at", 0.0)),
            more_hash_keys=tuple(KeyElement(*e) for e in data.get("more_hash_keys", ())),
            more_range_keys=tuple(KeyElement(*e) for e in data.get("more_range_keys", ())),
        )


@dataclass(frozen=True)
class TableSpec:
    """The desired table. `generation` counts the changes the autoadmin must apply
    (billing mode and throughput); tags and the like do not move it. `deleting` is
    set by DeleteTable and never cleared, like a Kubernetes deletion timestamp."""

    name: str
    table_id: int
    partition_key: KeyElement
    sort_key: KeyElement | None
    attribute_definitions: tuple[tuple[str, str], ...]
    billing_mode: BillingMode
    read_capacity: int
    write_capacity: int
    created_at: float
    tags: tuple[tuple[str, str], ...] = ()
    generation: int = 1
    deleting: bool = False
    time_to_live: TimeToLive = TimeToLive()
    # DynamoDB's DeletionProtectionEnabled: DeleteTable is refused while it is on.
    deletion_protection: bool = False
    throughput_history: ThroughputHistory = ThroughputHistory()
    indexes: tuple[SecondaryIndex, ...] = ()
    stream: StreamSpec = StreamSpec()
    policies: tuple[ResourcePolicy, ...] = ()
    backup: BackupInfo | None = None  # this spec is a backup's hidden table
    restore: RestoreInfo | None = None  # this table was restored from a backup
    importing: str = ""  # the ImportArn loading this table's items (ImportTable), until done
    # How its partition keys are hashed (keys.KEY_HASH_*): DynamoDB's for tables created
    # since it was, BLAKE2b for older ones (records without the field).
    key_hash: str = KEY_HASH_BLAKE2B
    # DynamoDB's WarmThroughput as asked (read, write units per second; 0: not asked):
    # the rates the table takes at once, for which it gets its partitions in advance.
    warm_throughput: tuple[int, int] = (0, 0)
    # DynamoDB's OnDemandThroughput (MaxReadRequestUnits, MaxWriteRequestUnits; 0: none):
    # the most an on-demand table admits, whatever its peak.
    on_demand_max: tuple[int, int] = (0, 0)
    # DynamoDB's TableClass as asked ("": never given) and when UpdateTable last changed
    # it (0: never). Partita has no storage tiers or prices: the class is told, not used.
    table_class: str = ""
    table_class_changed_at: float = 0.0
    point_in_time: PointInTimeRecovery = PointInTimeRecovery()
    revision: Revision = field(default=NO_REVISION, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "table_id": self.table_id,
            "partition_key": [self.partition_key.name, self.partition_key.type],
            "sort_key": [self.sort_key.name, self.sort_key.type] if self.sort_key else None,
            "attribute_definitions": [list(a) for a in self.attribute_definitions],
            "billing_mode": self.billing_mode,
            "read_capacity": self.read_capacity,
            "write_capacity": self.write_capacity,
            "created_at": self.created_at,
            "tags": [list(t) for t in self.tags],
            "generation": self.generation,
            "deleting": self.deleting,
            "time_to_live": self.time_to_live.to_json(),
            "deletion_protection": self.deletion_protection,
            "throughput_history": self.throughput_history.to_json(),
            "indexes": [index.to_json() for index in self.indexes],
            "stream": self.stream.to_json(),
            **({"policies": [p.to_json() for p in self.policies]} if self.policies else {}),
            **({"backup": self.backup.to_json()} if self.backup else {}),
            **({"restore": self.restore.to_json()} if self.restore else {}),
            **({"importing": self.importing} if self.importing else {}),
            **({"key_hash": self.key_hash} if self.key_hash != KEY_HASH_BLAKE2B else {}),
            **({"warm_throughput": list(self.warm_throughput)} if any(self.warm_throughput) else {}),
            **({"on_demand_max": list(self.on_demand_max)} if any(self.on_demand_max) else {}),
            **({"table_class": [self.table_class, self.table_class_changed_at]} if self.table_class else {}),
            **({"point_in_time": self.point_in_time.to_json()} if self.point_in_time.ever_enabled else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], revision: Revision = NO_REVISION) -> TableSpec:
        # Unknown keys are ignored and missing optional ones take their defaults, so a
        # field added later (TTL, streams...) reads back from older records and back.
        sort_key = data.get("sort_key")
        return cls(
            name=data["name"],
            table_id=int(data["table_id"]),
            partition_key=KeyElement(*data["partition_key"]),
            sort_key=KeyElement(*sort_key) if sort_key else None,
            attribute_definitions=tuple((a, t) for a, t in data["attribute_definitions"]),
            billing_mode=data["billing_mode"],
            read_capacity=int(data["read_capacity"]),
            write_capacity=int(data["write_capacity"]),
            created_at=float(data["created_at"]),
            tags=tuple((k, v) for k, v in data.get("tags", [])),
            generation=int(data.get("generation", 1)),
            # Records written before the split carried DynamoDB's status instead.
            deleting=bool(data.get("deleting", data.get("status") == "DELETING")),
            # Absent from records written before Time to Live existed: off.
            time_to_live=TimeToLive.from_json(data.get("time_to_live") or {}),
            deletion_protection=bool(data.get("deletion_protection", False)),
            throughput_history=ThroughputHistory.from_json(data.get("throughput_history") or {}),
            indexes=tuple(SecondaryIndex.from_json(i) for i in data.get("indexes") or ()),
            stream=StreamSpec.from_json(data.get("stream") or {}),
            policies=policies_from_json(data.get("policies")),
            backup=BackupInfo.from_json(data["backup"]) if data.get("backup") else None,
            restore=RestoreInfo.from_json(data["restore"]) if data.get("restore") else None,
            importing=str(data.get("importing", "")),
            key_hash=str(data.get("key_hash", KEY_HASH_BLAKE2B)),
            warm_throughput=_unit_pair(data.get("warm_throughput")),
            on_demand_max=_unit_pair(data.get("on_demand_max")),
            table_class=str((data.get("table_class") or ["", 0.0])[0]),
            table_class_changed_at=float((data.get("table_class") or ["", 0.0])[1]),
            point_in_time=PointInTimeRecovery.from_json(data.get("point_in_time") or {}),
            revision=revision,
        )


@dataclass(frozen=True)
class TableState:
    """The autoadmin's record of a table: the phase, and the spec generation whose
    layout every replica serves (`observed_generation`, as in Kubernetes status)."""

    name: str
    table_id: int
    phase: TablePhase
    observed_generation: int
    revision: Revision = field(default=NO_REVISION, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "table_id": self.table_id,
            "phase": self.phase,
            "observed_generation": self.observed_generation,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], revision: Revision = NO_REVISION) -> TableState:
        return cls(
            data["name"], int(data["table_id"]), data["phase"], int(data["observed_generation"]), revision
        )


def table_status(spec: TableSpec, state: TableState | None) -> TableStatus:
    """DynamoDB's TableStatus of a spec and the autoadmin's state of it.

    A state of an older incarnation (another table_id) counts as no state.
    """
    if spec.deleting:
        return "DELETING"
    if state is None or state.table_id != spec.table_id or state.phase == "CREATING":
        return "CREATING"
    if state.observed_generation < spec.generation:
        return "UPDATING"
    return "ACTIVE"


def client_status(spec: TableSpec, status: TableStatus) -> TableStatus:
    """The status clients see: a restored or imported table stays CREATING until every
    item of its backup or source is in, though it is placed and serving the copy."""
    if status == "ACTIVE" and (spec.importing or (spec.restore is not None and spec.restore.in_progress)):
        return "CREATING"
    return status


def partition_to_json(p: Partition) -> dict[str, Any]:
    return {
        "id": p.partition_id,
        # Hex text: the last partition ends at 2**64, beyond JSON integers.
        "start": f"{p.start:x}",
        "end": f"{p.end:x}",
        "replicas": list(p.replicas),
        "leader": p.leader,
        **({"log_replicas": list(p.log_replicas)} if p.log_replicas else {}),
        **({"joining": list(p.joining)} if p.joining else {}),
        **({"split_at": f"{p.split_at:x}"} if p.split_at else {}),
        **({"split_index": p.split_index} if p.split_index else {}),
        **({"parent": p.parent, "parent_index": p.parent_index} if p.parent else {}),
    }


def partition_from_json(data: dict[str, Any]) -> Partition:
    return Partition(
        partition_id=data["id"],
        start=int(data["start"], 16),
        end=int(data["end"], 16),
        replicas=tuple(data["replicas"]),
        leader=data.get("leader"),
        log_replicas=tuple(data.get("log_replicas", ())),
        joining=tuple(data.get("joining", ())),
        split_at=int(data.get("split_at", "0"), 16),
        split_index=int(data.get("split_index", 0)),
        parent=str(data.get("parent", "")),
        parent_index=int(data.get("parent_index", 0)),
    )


@dataclass(frozen=True)
class TableRecord:
    """The joined view of one table (spec + state + partitions), read-only."""

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
    partitions: tuple[Partition, ...]  # by start; empty until the autoadmin placed them
    tags: tuple[tuple[str, str], ...] = ()
    time_to_live: TimeToLive = TimeToLive()
    deletion_protection: bool = False
    throughput_history: ThroughputHistory = ThroughputHistory()
    indexes: tuple[SecondaryIndex, ...] = ()
    stream: StreamSpec = StreamSpec()
    policies: tuple[ResourcePolicy, ...] = ()
    backup: BackupInfo | None = None
    restore: RestoreInfo | None = None
    importing: str = ""
    key_hash: str = KEY_HASH_BLAKE2B
    warm_throughput: tuple[int, int] = (0, 0)
    on_demand_max: tuple[int, int] = (0, 0)
    table_class: str = ""
    table_class_changed_at: float = 0.0
    point_in_time: PointInTimeRecovery = PointInTimeRecovery()
    # Whether its partitions are placed and serving (ACTIVE or UPDATING), whatever clients
    # see: a restore or an import still copying is CREATING to them while it is written.
    placed: bool = False

    @property
    def hidden(self) -> bool:
        """A backup's table: no DynamoDB operation names it."""
        return self.backup is not None

    @classmethod
    def of(cls, spec: TableSpec, state: TableState | None, partitions: list[Partition]) -> TableRecord:
        status = table_status(spec, state)
        return cls(
            name=spec.name,
            table_id=spec.table_id,
            status=client_status(spec, status),
            partition_key=spec.partition_key,
            sort_key=spec.sort_key,
            attribute_definitions=spec.attribute_definitions,
            billing_mode=spec.billing_mode,
            read_capacity=spec.read_capacity,
            write_capacity=spec.write_capacity,
            created_at=spec.created_at,
            partitions=tuple(sorted(partitions, key=lambda p: p.start)),
            tags=spec.tags,
            time_to_live=spec.time_to_live,
            deletion_protection=spec.deletion_protection,
            throughput_history=spec.throughput_history,
            indexes=spec.indexes,
            stream=spec.stream,
            policies=spec.policies,
            backup=spec.backup,
            restore=spec.restore,
            importing=spec.importing,
            key_hash=spec.key_hash,
            warm_throughput=spec.warm_throughput,
            on_demand_max=spec.on_demand_max,
            table_class=spec.table_class,
            table_class_changed_at=spec.table_class_changed_at,
            point_in_time=spec.point_in_time,
            placed=status in ("ACTIVE", "UPDATING"),
        )

    @property
    def partition_map(self) -> PartitionMap:
        return PartitionMap(list(self.partitions))

    @property
    def key_names(self) -> list[str]:
        """The key attributes: the partition key's name, then the sort key's if any."""
        return [self.partition_key.name] + ([self.sort_key.name] if self.sort_key else [])

    def index(self, name: str) -> SecondaryIndex | None:
        return next((i for i in self.indexes if i.name == name), None)

    def with_status(self, status: TableStatus) -> TableRecord:
        return dataclasses.replace(self, status=status)


@dataclass(frozen=True)
class NodeRecord:
    """A storage node as it registers itself: where to reach it and in which zone."""

    node_id: str
    zone: str
    address: str  # host:port of its gRPC server (administration)
    data_address: str = ""  # host:port of its framed data path
    pid: int = 0
    replication_address: str = ""  # host:port of its node-pair replication streams

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeRecord:
        return cls(**data)


@dataclass(frozen=True)
class SplitParent:
    """The count of a partition since split, as its children's estimates started from."""

    partition_id: str
    item_count: int
    size_bytes: int


@dataclass(frozen=True)
class PartitionStats:
    """What a partition's leader last counted: DescribeTable's ItemCount and
    TableSizeBytes are the sums over a table's partitions."""

    item_count: int
    size_bytes: int  # DynamoDB item sizes (attribute names and values), summed
    measured_at: float  # seconds since the epoch
    # Where a split for size should cut (the autoadmin's split point): the first key
    # hash of the upper half of the partition's bytes, the size-weighted median. None
    # when not measured, or when one key hash holds every item (`single_key`: no cut
    # divides it).
    split_hash: int | None = None
    single_key: bool = False
    # True for a split child's share of its parent's count, until its leader counts it:
    # good enough for DescribeTable, not for deciding another split.
    estimated: bool = False
    # Split for consumption (storage/heat.py): how long the partition has run hot (its
    # consumed rate at or above a share of its allocation), the median key hash of its
    # load, and whether one key carries most of that load (no split can divide it).
    hot_seconds: float = 0.0
    hot_split_hash: int | None = None
    hot_single_key: bool = False
    # An estimate's parent (None once counted): a child counted before its sibling
    # leaves the sibling the rest of this count, so the sum neither drops nor overshoots.
    parent: SplitParent | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionStats:
        split_hash, hot_split_hash = data.get("split_hash"), data.get("hot_split_hash")
        return cls(
            int(data["item_count"]),
            int(data["size_bytes"]),
            float(data["measured_at"]),
            int(split_hash) if split_hash is not None else None,
            bool(data.get("single_key", False)),
            bool(data.get("estimated", False)),
            float(data.get("hot_seconds", 0.0)),
            int(hot_split_hash) if hot_split_hash is not None else None,
            bool(data.get("hot_single_key", False)),
            _split_parent(data.get("parent")),
        )


def _split_parent(data: dict[str, Any] | None) -> SplitParent | None:
    if data is None:
        return None
    return SplitParent(str(data["partition_id"]), int(data["item_count"]), int(data["size_bytes"]))


def new_table_id() -> int:
    # 63 bits so the id stays positive in every language that reads the store.
    return secrets.randbits(63) | 1


@dataclass(frozen=True)
class ReplicaLoad:
    """What one replica's requests consumed on its node over a load report's interval,
    in units a second (reads served here, writes this replica led)."""

    table_id: int
    partition_id: str
    read: float
    write: float


@dataclass(frozen=True)
class NodeLoad:
    """A storage node's load report (load-based migration, DESIGN.md section 6): what
    its replicas consumed over the last `interval` seconds, against the node's own
    capacity (the node buckets' rates)."""

    node_id: str
    measured_at: float  # seconds since the epoch
    interval: float
    read_capacity: float
    write_capacity: float
    replicas: tuple[ReplicaLoad, ...] = ()

    @property
    def read(self) -> float:
        return sum(r.read for r in self.replicas)

    @property
    def write(self) -> float:
        return sum(r.write for r in self.replicas)

    def utilisation(self) -> float:
        """The busier kind's share of the node's capacity."""
        return max(self.read / self.read_capacity, self.write / self.write_capacity)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeLoad:
        return cls(
            str(data["node_id"]),
            float(data["measured_at"]),
            float(data["interval"]),
            float(data["read_capacity"]),
            float(data["write_capacity"]),
            tuple(
                ReplicaLoad(int(r["table_id"]), str(r["partition_id"]), float(r["read"]), float(r["write"]))
                for r in data.get("replicas", ())
            ),
        )


@dataclass(frozen=True)
class ReplicaMove:
    """The autoadmin's request that a partition's replica on `source` move to `target`
    (a node of the same zone with room): the group's leader builds a full member on the
    target, then removes the source's, as for a drained node. Cleared by the autoadmin
    once done or moot."""

    table_id: int
    partition_id: str
    source: str
    target: str
    started_at: float  # seconds since the epoch
    reason: str = "node_hot"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplicaMove:
        return cls(
            int(data["table_id"]),
            str(data["partition_id"]),
            str(data["source"]),
            str(data["target"]),
            float(data["started_at"]),
            str(data.get("reason", "node_hot")),
        )
