"""The table catalog on the Kubernetes API: one `Table` resource (partita.io/v1alpha1)
per table, so that in Kubernetes CreateTable, UpdateTable and DeleteTable create, patch
and delete the very resource `kubectl apply -f table.yaml` makes, and the operator
(the autoadmin) reconciles both alike.

The mapping (used by the operator too, so there is one):
- spec: the Table's spec mirrors CreateTable; `metadata.generation` is the spec's
  generation (the API server moves it on every spec change) and a deletionTimestamp
  means `deleting`;
- what the CRD has no field for rides in annotations: the table id a router chose
  (`partita.io/table-id`; a Table made with kubectl gets a stable hash of its namespace
  and name), the exact creation time, the Time to Live setting, and each secondary
  index's creation time (the indexes themselves are `spec.globalSecondaryIndexes` and
  `spec.localSecondaryIndexes`, as in CreateTable);
- state: `status.tableStatus` (CREATING while the autoadmin's phase is CREATING) and
  `status.observedGeneration`;
- revision: `metadata.resourceVersion`. A replace is a merge patch carrying the
  revision it was read at, which the API server turns into a precondition (409 when
  another writer came first); a delete carries it as a precondition too.

Resource names are DNS labels derived from the DynamoDB name (lower case, other
characters as `-`, a hash of the exact name appended, so `Music` and `music` differ);
lookups go by `spec.tableName`, so Tables named freely with kubectl are found as well.
"""

from __future__ import annotations

import re
import ssl
import zlib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast

import aiohttp
import orjson

from partita.common.keys import KEY_HASH_BLAKE2B
from partita.common.partition_map import Partition, current_partitions
from partita.control.model import (
    NO_REVISION,
    STREAM_VIEW_TYPES,
    BackupInfo,
    BillingMode,
    IndexKind,
    KeyElement,
    NodeRecord,
    PartitionStats,
    PointInTimeRecovery,
    ProjectionType,
    RestoreInfo,
    Revision,
    SecondaryIndex,
    StreamSpec,
    TablePhase,
    TableRecord,
    TableSpec,
    TableState,
    TimeToLive,
    policies_from_json,
)

GROUP = "partita.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
TABLE_ID_ANNOTATION = f"{GROUP}/table-id"
CREATED_AT_ANNOTATION = f"{GROUP}/created-at"
TIME_TO_LIVE_ANNOTATION = f"{GROUP}/time-to-live"
# The table's DynamoDB Streams (StreamSpec JSON): set by CreateTable and UpdateTable, or
# by the operator for a spec.streamSpecification written with kubectl.
STREAM_ANNOTATION = f"{GROUP}/stream"
# Resource-based policies (PutResourcePolicy), with their revision ids.
POLICIES_ANNOTATION = f"{GROUP}/resource-policies"
# A backup's hidden table (CreateBackup), and a table restored from a backup.
BACKUP_ANNOTATION = f"{GROUP}/backup"
RESTORE_ANNOTATION = f"{GROUP}/restore"
IMPORTING_ANNOTATION = f"{GROUP}/importing"
# Point-in-time recovery (UpdateContinuousBackups), once it has been turned on.
POINT_IN_TIME_ANNOTATION = f"{GROUP}/point-in-time-recovery"
KEY_HASH_ANNOTATION = f"{GROUP}/key-hash"
# Each secondary index's creation time, as JSON pairs [[name, epoch seconds], ...] in the
# spec's order of its indexes. Kept rather than derived: a global index added by
# UpdateTable is younger than its table, which deriving its time from the table's would
# lose; and the Table's two index lists cannot say how the spec interleaved global and
# local indexes, which the order of the pairs does (so a spec reads back equal). An
# index the annotation does not name (one written with kubectl) takes the table's
# creation time: nobody recorded its own, and that one stays put from read to read.
INDEX_CREATED_AT_ANNOTATION = f"{GROUP}/index-created-at"
# The Table's members holding each kind of secondary index.
_INDEX_MEMBERS: tuple[tuple[IndexKind, str], ...] = (
    ("GLOBAL", "globalSecondaryIndexes"),
    ("LOCAL", "localSecondaryIndexes"),
)
# The label every Partition resource carries: the name of its Table resource.
TABLE_LABEL = f"{GROUP}/table"
KUBE_API_ENV = "PARTITA_KUBE_API"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_NOT_DNS = re.compile(r"[^a-z0-9-]+")


# --- the mapping (pure) ----------------------------------------------------------------


def resource_name(table_name: str) -> str:
    slug = _NOT_DNS.sub("-", table_name.lower()).strip("-")[:40].strip("-") or "table"
    return f"{slug}-{zlib.crc32(table_name.encode()):08x}"


def default_table_id(namespace: str, name: str) -> int:
    """The id of a Table no router named: stable, so a restarted operator agrees."""
    return zlib.crc32(f"{namespace}/{name}".encode())


def _stream_field(stream: StreamSpec) -> dict[str, Any]:
    if stream.enabled:
        return {"streamEnabled": True, "streamViewType": stream.view_type}
    return {"streamEnabled": False}


def stream_to_record(obj: Mapping[str, Any], now: float) -> StreamSpec | None:
    """What the operator records in a Table's stream annotation when its
    spec.streamSpecification (a kubectl user's) asks for another stream than the one
    recorded; None when they agree. A new view type on an enabled stream disables it and
    starts another, as DynamoDB changes none in place."""
    wanted = (obj.get("spec") or {}).get("streamSpecification")
    if not wanted:
        return None
    recorded = ((obj.get("metadata") or {}).get("annotations") or {}).get(STREAM_ANNOTATION)
    current = StreamSpec.from_json(orjson.loads(recorded)) if recorded else StreamSpec()
    if not wanted.get("streamEnabled"):
        return current.stopped(now) if current.enabled else None
    view = wanted.get("streamViewType")
    if view not in STREAM_VIEW_TYPES or (current.enabled and current.view_type == view):
        return None
    return (current.stopped(now) if current.enabled else current).started(view, now)


def spec_from_resource(obj: Mapping[str, Any]) -> TableSpec:
    meta, spec = obj["metadata"], obj["spec"]
    notes = meta.get("annotations") or {}
    types = {a["attributeName"]: a["attributeType"] for a in spec.get("attributeDefinitions", [])}
    keys = {
        k["keyType"]: KeyElement(k["attributeName"], types.get(k["attributeName"], "S"))
        for k in spec["keySchema"]
    }
    throughput = spec.get("provisionedThroughput") or {}
    table_id = notes.get(TABLE_ID_ANNOTATION)
    created = notes.get(CREATED_AT_ANNOTATION)
    created_at = float(created) if created else _timestamp(meta.get("creationTimestamp"))
    ttl = notes.get(TIME_TO_LIVE_ANNOTATION)
    stream = notes.get(STREAM_ANNOTATION)
    policies = notes.get(POLICIES_ANNOTATION)
    backup, restore = notes.get(BACKUP_ANNOTATION), notes.get(RESTORE_ANNOTATION)
    recovery = notes.get(POINT_IN_TIME_ANNOTATION)
    return TableSpec(
        name=str(spec["tableName"]),
        table_id=int(table_id) if table_id else default_table_id(meta.get("namespace", ""), meta["name"]),
        partition_key=keys["HASH"],
        sort_key=keys.get("RANGE"),
        attribute_definitions=tuple(types.items()),
        billing_mode=cast(BillingMode, spec.get("billingMode", "PAY_PER_REQUEST")),
        read_capacity=int(throughput.get("readCapacityUnits", 0)),
        write_capacity=int(throughput.get("writeCapacityUnits", 0)),
        created_at=created_at,
        tags=tuple((t["key"], t["value"]) for t in spec.get("tags", [])),
        generation=int(meta.get("generation", 1)),
        deleting=bool(meta.get("deletionTimestamp")),
        time_to_live=TimeToLive.from_json(orjson.loads(ttl)) if ttl else TimeToLive(),
        stream=StreamSpec.from_json(orjson.loads(stream)) if stream else StreamSpec(),
        policies=policies_from_json(orjson.loads(policies)) if policies else (),
        backup=BackupInfo.from_json(orjson.loads(backup)) if backup else None,
        restore=RestoreInfo.from_json(orjson.loads(restore)) if restore else None,
        importing=str(notes.get(IMPORTING_ANNOTATION, "")),
        point_in_time=PointInTimeRecovery.from_json(orjson.loads(recovery))
        if recovery
        else PointInTimeRecovery(),
        # A Table made with kubectl has none: BLAKE2b, the hash it was always placed by.
        key_hash=str(notes.get(KEY_HASH_ANNOTATION, KEY_HASH_BLAKE2B)),
        deletion_protection=bool(spec.get("deletionProtectionEnabled", False)),
        warm_throughput=_unit_pair(spec.get("warmThroughput"), "readUnitsPerSecond", "writeUnitsPerSecond"),
        on_demand_max=_unit_pair(
            spec.get("onDemandThroughput"), "maxReadRequestUnits", "maxWriteRequestUnits"
        ),
        table_class=str(spec.get("tableClass", "")),
        indexes=_indexes_from_resource(spec, types, created_at, notes.get(INDEX_CREATED_AT_ANNOTATION)),
        revision=Revision(str(meta.get("resourceVersion", ""))),
    )


def _unit_pair(field: Mapping[str, Any] | None, read: str, write: str) -> tuple[int, int]:
    """A spec field of read and write units (0 for a member left out)."""
    if not field:
        return (0, 0)
    return (int(field.get(read, 0)), int(field.get(write, 0)))


def _unit_field(pair: tuple[int, int], read: str, write: str) -> dict[str, int]:
    return {name: units for name, units in ((read, pair[0]), (write, pair[1])) if units}


def _indexes_from_resource(
    spec: Mapping[str, Any], types: Mapping[str, Any], table_created_at: float, note: str | None
) -> tuple[SecondaryIndex, ...]:
    """The Table's secondary indexes, in the order the creation-time annotation gives
    (those it does not name after them, globals first, each list in its order)."""
    created = {str(name): float(at) for name, at in (orjson.loads(note) if note else [])}
    indexes = []
    for kind, member in _INDEX_MEMBERS:
        for item in spec.get(member) or []:
            elements = [
                (k["keyType"], KeyElement(k["attributeName"], types.get(k["attributeName"], "S")))
                for k in item["keySchema"]
            ]
            hashes = [e for role, e in elements if role == "HASH"]
            ranges = [e for role, e in elements if role == "RANGE"]
            projection = item.get("projection") or {}
            throughput = item.get("provisionedThroughput") or {}
            name = str(item["indexName"])
            indexes.append(
                SecondaryIndex(
                    name=name,
                    kind=kind,
                    partition_key=hashes[0],
                    sort_key=ranges[0] if ranges else None,
                    more_hash_keys=tuple(hashes[1:]),
                    more_range_keys=tuple(ranges[1:]),
                    projection_type=cast(ProjectionType, projection.get("projectionType", "ALL")),
                    non_key_attributes=tuple(projection.get("nonKeyAttributes") or ()),
                    read_capacity=int(throughput.get("readCapacityUnits", 0)),
                    write_capacity=int(throughput.get("writeCapacityUnits", 0)),
                    created_at=created.get(name, table_created_at),
                )
            )
    rank = {name: i for i, name in enumerate(created)}
    return tuple(sorted(indexes, key=lambda index: rank.get(index.name, len(rank))))


def _index_resource(index: SecondaryIndex, billing_mode: BillingMode) -> dict[str, Any]:
    """One entry of the Table's index lists, as CreateTable gives it (camelCase)."""
    projection: dict[str, Any] = {"projectionType": index.projection_type}
    if index.non_key_attributes:  # INCLUDE only; the CRD refuses an empty list
        projection["nonKeyAttributes"] = list(index.non_key_attributes)
    out: dict[str, Any] = {
        "indexName": index.name,
        "keySchema": [
            {"attributeName": key.name, "keyType": role}
            for role, keys in (("HASH", index.hash_keys), ("RANGE", index.range_keys))
            for key in keys
        ],
        "projection": projection,
    }
    # As in DynamoDB, a global index of a provisioned table has throughput of its own; a
    # local one shares the table's, and an on-demand table's indexes have none.
    if index.kind == "GLOBAL" and billing_mode == "PROVISIONED":
        out["provisionedThroughput"] = {
            "readCapacityUnits": index.read_capacity,
            "writeCapacityUnits": index.write_capacity,
        }
    return out


def resource_from_spec(spec: TableSpec, namespace: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tableName": spec.name,
        "attributeDefinitions": [
            {"attributeName": name, "attributeType": kind} for name, kind in spec.attribute_definitions
        ],
        "keySchema": [
            {"attributeName": key.name, "keyType": role}
            for role, key in (("HASH", spec.partition_key), ("RANGE", spec.sort_key))
            if key is not None
        ],
        "billingMode": spec.billing_mode,
        "tags": [{"key": k, "value": v} for k, v in spec.tags],
        # The operator holds a kubectl deletion of a protected Table; routers refuse
        # DeleteTable of one.
        "deletionProtectionEnabled": spec.deletion_protection,
    }
    if any(spec.warm_throughput):
        body["warmThroughput"] = _unit_field(
            spec.warm_throughput, "readUnitsPerSecond", "writeUnitsPerSecond"
        )
    if spec.table_class:
        body["tableClass"] = spec.table_class
    if any(spec.on_demand_max):
        body["onDemandThroughput"] = _unit_field(
            spec.on_demand_max, "maxReadRequestUnits", "maxWriteRequestUnits"
        )
    if spec.billing_mode == "PROVISIONED":
        body["provisionedThroughput"] = {
            "readCapacityUnits": spec.read_capacity,
            "writeCapacityUnits": spec.write_capacity,
        }
    annotations = {
        TABLE_ID_ANNOTATION: str(spec.table_id),
        CREATED_AT_ANNOTATION: repr(spec.created_at),
        TIME_TO_LIVE_ANNOTATION: orjson.dumps(spec.time_to_live.to_json()).decode(),
    }
    if spec.stream.exists:
        # The annotation records each stream's creation; the spec field says what is
        # wanted, as kubectl users write it (`stream_to_record`).
        annotations[STREAM_ANNOTATION] = orjson.dumps(spec.stream.to_json()).decode()
        body["streamSpecification"] = _stream_field(spec.stream)
    if spec.policies:
        annotations[POLICIES_ANNOTATION] = orjson.dumps([p.to_json() for p in spec.policies]).decode()
    if spec.backup is not None:
        annotations[BACKUP_ANNOTATION] = orjson.dumps(spec.backup.to_json()).decode()
    if spec.restore is not None:
        annotations[RESTORE_ANNOTATION] = orjson.dumps(spec.restore.to_json()).decode()
    if spec.importing:
        annotations[IMPORTING_ANNOTATION] = spec.importing
    if spec.point_in_time.ever_enabled:
        annotations[POINT_IN_TIME_ANNOTATION] = orjson.dumps(spec.point_in_time.to_json()).decode()
    if spec.key_hash != KEY_HASH_BLAKE2B:
        annotations[KEY_HASH_ANNOTATION] = spec.key_hash
    # Absent rather than empty when there are none, as CreateTable omits them (and the
    # CRD refuses an empty list of local indexes).
    for kind, member in _INDEX_MEMBERS:
        indexes = [_index_resource(i, spec.billing_mode) for i in spec.indexes if i.kind == kind]
        if indexes:
            body[member] = indexes
    if spec.indexes:
        pairs = [[index.name, index.created_at] for index in spec.indexes]
        annotations[INDEX_CREATED_AT_ANNOTATION] = orjson.dumps(pairs).decode()
    return {
        "apiVersion": API_VERSION,
        "kind": "Table",
        "metadata": {"name": resource_name(spec.name), "namespace": namespace, "annotations": annotations},
        "spec": body,
    }


def state_from_resource(spec: TableSpec, obj: Mapping[str, Any]) -> TableState | None:
    """The autoadmin's state kept in the Table's status; None before its first."""
    status = obj.get("status") or {}
    shown = status.get("tableStatus")
    if shown is None or "observedGeneration" not in status:
        return None
    phase: TablePhase = "CREATING" if shown == "CREATING" else "ACTIVE"
    revision = Revision(str(obj["metadata"].get("resourceVersion", "")))
    return TableState(spec.name, spec.table_id, phase, int(status["observedGeneration"]), revision)


def partition_from_resource(obj: Mapping[str, Any]) -> Partition:
    """A Partition resource as a partition object: its inclusive [start, last] becomes
    the half-open [start, last + 1); the leader is the one the members reported (the
    operator's replica director writes it into status), else the first member (the
    placement's choice, which a node leads while no group elects one). A reported leader
    that is no longer a full member (the members just changed) is not routed to."""
    spec = obj["spec"]
    start, last = int(spec["hashRange"]["start"], 16), int(spec["hashRange"]["last"], 16)
    # Routers send to full members only: a joining one is still being built, a log one
    # holds no items.
    replicas = tuple(m["node"] for m in spec["members"] if m.get("role", "full") == "full")
    reported = (obj.get("status") or {}).get("leader")
    leader = reported if reported in replicas else (replicas[0] if replicas else None)
    split_at = spec.get("splitAt")
    return Partition(
        obj["metadata"]["name"],
        start,
        last + 1,
        replicas,
        leader,
        split_at=int(split_at, 16) if split_at else 0,
        parent=str(spec.get("parent", "")),
        parent_index=int(spec.get("parentIndex", 0)),
        replication_factor=int(spec.get("replicationFactor", 0)),
        grouped=bool(spec.get("replicationGroup", False)),
    )


def join_tables(tables: list[Mapping[str, Any]], partitions: list[Mapping[str, Any]]) -> list[TableRecord]:
    """The routers' joined view of Table and Partition resources."""
    by_table: dict[str, list[Partition]] = {}
    for obj in partitions:
        if not obj["metadata"].get("deletionTimestamp"):
            by_table.setdefault(obj["spec"]["table"], []).append(partition_from_resource(obj))
    by_table = {table: current_partitions(parts) for table, parts in by_table.items()}
    records = []
    for obj in tables:
        spec = spec_from_resource(obj)
        parts = sorted(by_table.get(obj["metadata"]["name"], []), key=lambda p: p.start)
        records.append(TableRecord.of(spec, state_from_resource(spec, obj), parts))
    return sorted(records, key=lambda r: r.name)


def _timestamp(text: Any) -> float:
    if not text:
        return 0.0
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


# --- the client ------------------------------------------------------------------------


class KubernetesApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"Kubernetes API answered {status}: {text[:300]}")
        self.status = status


class KubernetesTableCatalog:
    """`TableCatalog` over Table resources in one namespace (the router's narrow
    interface: desired specs written, the autoadmin's state read)."""

    def __init__(
        self,
        server: str,
        namespace: str,
        *,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.namespace = namespace
        self._collection = f"{server.rstrip('/')}/apis/{API_VERSION}/namespaces/{namespace}/tables"
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def in_cluster(cls, namespace: str | None = None) -> KubernetesTableCatalog:
        """With the pod's service account (the chart's router Role); outside a pod
        (development, the end-to-end test), the API server named by $PARTITA_KUBE_API
        (plain HTTP, no credentials, e.g. a local emulator) and `namespace`."""
        import os

        if os.environ.get(KUBE_API_ENV):
            return cls(os.environ[KUBE_API_ENV], namespace or "default")
        host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
        context = ssl.create_default_context(cafile=str(SERVICE_ACCOUNT / "ca.crt"))
        ns = namespace or (SERVICE_ACCOUNT / "namespace").read_text().strip()
        token = (SERVICE_ACCOUNT / "token").read_text().strip()
        return cls(f"https://{host}:{port}", ns, token=token, ssl_context=context)

    async def _call(
        self, method: str, url: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        headers = {**self._headers, "Content-Type": content_type}
        data = orjson.dumps(body) if body is not None else None
        async with self._session.request(method, url, data=data, headers=headers, ssl=self._ssl) as resp:
            text = await resp.text()
            if resp.status >= 300:
                raise KubernetesApiError(resp.status, text)
            return orjson.loads(text) if text else None

    async def list_resources(self, plural: str) -> list[Mapping[str, Any]]:
        answer = await self._call("GET", self._collection.removesuffix("/tables") + f"/{plural}")
        return list(answer.get("items") or [])

    async def _find(self, name: str) -> Mapping[str, Any] | None:
        for obj in await self.list_resources("tables"):
            if (obj.get("spec") or {}).get("tableName") == name:
                return obj
        return None

    async def list_table_specs(self) -> list[TableSpec]:
        return sorted(
            (spec_from_resource(o) for o in await self.list_resources("tables")), key=lambda s: s.name
        )

    async def get_table_spec(self, name: str) -> TableSpec | None:
        obj = await self._find(name)
        return spec_from_resource(obj) if obj is not None else None

    async def get_table_state(self, name: str) -> TableState | None:
        obj = await self._find(name)
        return state_from_resource(spec_from_resource(obj), obj) if obj is not None else None

    async def create_table_spec(self, spec: TableSpec) -> bool:
        if await self._find(spec.name) is not None:
            return False
        try:
            await self._call("POST", self._collection, resource_from_spec(spec, self.namespace))
        except KubernetesApiError as exc:
            if exc.status == 409:  # another router created it first
                return False
            raise
        return True

    async def replace_table_spec(self, spec: TableSpec) -> bool:
        if spec.revision == NO_REVISION:
            return False  # never read from the store: a replace must not become a create
        current = await self._find(spec.name)
        if current is None or str(current["metadata"].get("resourceVersion")) != spec.revision:
            return False
        url = f"{self._collection}/{current['metadata']['name']}"
        try:
            if spec.deleting:
                options = {
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "preconditions": {"resourceVersion": spec.revision},
                }
                await self._call("DELETE", url, options)
            else:
                patch = resource_from_spec(spec, self.namespace)
                patch["metadata"] = {
                    "resourceVersion": spec.revision,
                    "annotations": patch["metadata"]["annotations"],
                }
                # A merge patch leaves alone what it does not name: null removes what the
                # spec no longer has (throughput, the last global index dropped).
                if spec.billing_mode == "PAY_PER_REQUEST":
                    patch["spec"]["provisionedThroughput"] = None
                for _kind, member in _INDEX_MEMBERS:
                    patch["spec"].setdefault(member, None)
                for note in (INDEX_CREATED_AT_ANNOTATION, POLICIES_ANNOTATION, IMPORTING_ANNOTATION):
                    patch["metadata"]["annotations"].setdefault(note, None)
                await self._call("PATCH", url, patch, "application/merge-patch+json")
        except KubernetesApiError as exc:
            if exc.status in (404, 409):  # gone, or another writer came first
                return False
            raise
        return True

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class Members(Protocol):
    """Where storage nodes register and report (etcd, in Kubernetes too)."""

    async def list_nodes(self) -> list[NodeRecord]: ...
    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]: ...
    async def wait_for_change(self, timeout: float) -> bool: ...
    async def close(self) -> None: ...


class KubernetesRouteSource:
    """`RouteSource` in Kubernetes: tables and partitions from Table and Partition
    resources, nodes and statistics from the storage nodes' registrations (`members`).
    Changes to resources are seen at the next refresh (routers refresh at least once a
    second, and at once after their own writes)."""

    def __init__(self, catalog: KubernetesTableCatalog, members: Members) -> None:
        self.catalog = catalog
        self.members = members

    async def list_tables(self) -> list[TableRecord]:
        tables = await self.catalog.list_resources("tables")
        return join_tables(tables, await self.catalog.list_resources("partitions"))

    async def list_nodes(self) -> list[NodeRecord]:
        return await self.members.list_nodes()

    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]:
        return await self.members.list_partition_stats(table_id)

    async def wait_for_change(self, timeout: float) -> bool:
        return await self.members.wait_for_change(timeout)

    async def close(self) -> None:
        await self.catalog.close()
        await self.members.close()
