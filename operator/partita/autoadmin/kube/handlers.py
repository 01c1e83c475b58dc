"""Thin kopf handlers: read what kopf hands over, ask the pure decisions and builders,
send the result through the API client and the replica director, patch status, post
an event for every action.

Handlers are registered on a registry built per operator (not on kopf's global one),
so two operators can run side by side in one process (the peering test does).
Every handler is idempotent: a retry, a resume after a restart or a second timer tick
re-derives the same desired state and changes nothing when it is already there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
import orjson

from partita.autoadmin import metrics as autoadmin_metrics
from partita.autoadmin import reconcile
from partita.autoadmin.kube import builders, decisions, fleet_shrink, naming, resources
from partita.autoadmin.kube.api import KubeApi, KubeApiError
from partita.autoadmin.kube.doorman_publisher import TablesPublisher
from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.fleet_shrink import FleetShrink
from partita.autoadmin.kube.membership_watch import MembershipWatch
from partita.autoadmin.kube.migration_loop import KubeMigration
from partita.autoadmin.kube.placements_publisher import PlacementsPublisher
from partita.autoadmin.kube.replicas import PartitionRef, ReplicaDirector
from partita.autoadmin.migration import MigrationPolicy
from partita.autoadmin.placement import ShardPolicy
from partita.autoadmin.splits import KEPT_WHOLE_BECAUSE
from partita.common import config as common_config
from partita.common.partition_map import Partition
from partita.control import kubernetes
from partita.control.model import NodeRecord, TableSpec, TableState
from partita.control.model import table_status as table_status_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OperatorConfig:
    fleet: Fleet
    on_demand_partitions: int = 4  # partitions of a new PAY_PER_REQUEST table
    resync_seconds: float = 30.0  # level-based re-reconcile of every Table and Partition
    # Re-reconcile of a Table while it is CREATING or UPDATING and of a Partition while it
    # is Pending: a step that waits for the storage pods (a split's published index, its
    # children hosted, new replicas placed) is seen within this, not within a resync.
    progress_seconds: float = 1.0
    retry_seconds: float = 10.0  # while a deletion waits (protection on, replicas dropping)
    # A partition whose items pass this many bytes is split (DynamoDB's 10 GB).
    split_size_bytes: int = common_config.DEFAULT_SPLIT_SIZE_BYTES
    # A partition that consumed at or near its allocation this long is split for
    # consumption, at the median key hash of its load (300 s, the local cluster's).
    split_hot_seconds: float = common_config.DEFAULT_SPLIT_HOT_SECONDS
    # How each new Table's shuffle shard of storage pods is chosen (`placement.ShardPolicy`;
    # its replicas are the Table's replicationFactor).
    shards: ShardPolicy = field(default_factory=ShardPolicy)
    # The etcd key the Doorman servers read (`partita doorman --config-key`): every
    # Table's throughput is published there as Doorman resources; None: not published.
    doorman_config_key: str | None = None
    # A Doorman configuration (the chart's templates) whose resources follow the tables'.
    doorman_templates: Path | None = None
    # Load-based migration from the storage pods' load reports (`migration.py`).
    migration: MigrationPolicy = field(default_factory=MigrationPolicy)


@dataclass
class _State:
    """Per-operator memory: whether this process already made sure the fleet exists."""

    fleet_ensured: bool = False
    # kopf runs timers alongside change handlers; one reconcile per table at a time.
    table_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # Partitions already reported as kept whole (an event and a count once each).
    kept_whole: set[tuple[str, str, str]] = field(default_factory=set)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _plan_of(obj: Mapping[str, Any]) -> decisions.PartitionPlan:
    spec = obj["spec"]
    members = builders.members_of_spec(spec["members"])
    return decisions.PartitionPlan(
        int(spec["hashRange"]["start"], 16), int(spec["hashRange"]["last"], 16), members
    )


def _table_in_progress(status: kopf.Status, meta: kopf.Meta, **_: Any) -> bool:
    """A Table whose create or update is under way (kopf starts and stops the timer as
    this changes), and not being deleted: its deletion handler retries on its own."""
    return not meta.get("deletionTimestamp") and status.get("tableStatus") in ("CREATING", "UPDATING")


def _partition_in_progress(status: kopf.Status, meta: kopf.Meta, **_: Any) -> bool:
    """A Partition whose members are not yet a serving group (new, or a split's child)."""
    return not meta.get("deletionTimestamp") and status.get("state", "Pending") == "Pending"


def _namespaced(namespace: str | None) -> str:
    """Tables and Partitions are namespaced resources: kopf always passes a namespace."""
    if namespace is None:
        raise kopf.PermanentError("a cluster-scoped Table or Partition cannot exist")
    return namespace


def _ref_of(namespace: str, name: str, spec: Mapping[str, Any]) -> PartitionRef:
    hash_range = spec["hashRange"]
    split_at = spec.get("splitAt")
    return PartitionRef(
        namespace,
        name,
        spec["table"],
        int(hash_range["start"], 16),
        int(hash_range["last"], 16),
        split_at=int(split_at, 16) if split_at else 0,
        parent=str(spec.get("parent", "")),
        parent_index=int(spec.get("parentIndex", 0)),
    )


def operator_settings(priority: int, standalone: bool) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = naming.FINALIZER
    # Our CRDs' status schemas are structural, so kopf's bookkeeping goes in annotations.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=naming.ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=naming.ANNOTATION_PREFIX)
    settings.peering.name = naming.PEERING_NAME
    settings.peering.priority = priority
    settings.peering.standalone = standalone
    settings.peering.mandatory = not standalone
    settings.peering.stealth = True
    # Watch only the configured namespace and never list namespaces or CRDs cluster-wide:
    # the operator's RBAC is a namespaced Role (least privilege).
    settings.scanning.disabled = True
    # Restart watches regularly: a connection that silently died (a load balancer
    # dropping it) would otherwise leave the operator deaf (kopf's advice).
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 30
    # Our own events say what happened; kopf's per-handler log lines stay in the log.
    settings.posting.level = logging.WARNING
    return settings


def build_registry(
    config: OperatorConfig,
    api: KubeApi,
    director: ReplicaDirector,
    login: kopf.ConnectionInfo,
    doorman: TablesPublisher | None = None,
    memberships: MembershipWatch | None = None,
    shrink: FleetShrink | None = None,
    migration: KubeMigration | None = None,
    placements: PlacementsPublisher | None = None,
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    state = _State()
    tables = (naming.GROUP, naming.VERSION, naming.TABLES)
    partitions = (naming.GROUP, naming.VERSION, naming.PARTITIONS)

    @kopf.on.login(registry=registry)
    def _login(**_: Any) -> kopf.ConnectionInfo:
        return login

    async def ensure_fleet(body: kopf.Body) -> None:
        """The storage fleet as configured, once per operator process (the first Table
        reconcile: at start, every Table resumes). A zone's StatefulSet larger than
        configured keeps its size until the pods a scale-down removes hold no replica
        (`fleet_shrink.py`); without a control store to mark them draining, it shrinks at
        once and repair rebuilds what the removed pods held."""
        if state.fleet_ensured:
            return
        objs = builders.storage_fleet(config.fleet)
        larger = await larger_statefulsets() if shrink is not None else {}
        for obj in objs:
            zone = obj["metadata"]["labels"].get(naming.ZONE_LABEL)
            if obj["kind"] == "StatefulSet" and zone in larger:
                obj["spec"]["replicas"] = larger[zone]
        created = [obj["metadata"]["name"] for obj in objs if await api.apply(obj)]
        if created:
            _event(
                body, "Normal", reason="StorageCreated", message=f"created {', '.join(sorted(set(created)))}"
            )
        if shrink is not None:
            shrink.begin(larger)
            if larger:
                leaving = ", ".join(fleet_shrink.leaving_pods(config.fleet, larger))
                _event(
                    body,
                    "Normal",
                    reason="StorageDraining",
                    message=f"draining {leaving} before the storage fleet shrinks",
                )
        state.fleet_ensured = True

    async def larger_statefulsets() -> dict[str, int]:
        """Each zone whose StatefulSet runs more pods than configured, with how many."""
        out = {}
        for zone in config.fleet.zones:
            name = naming.storage_statefulset(config.fleet.release, zone)
            existing = await api.get("apps/v1", "statefulsets", config.fleet.namespace, name)
            size = int(((existing or {}).get("spec") or {}).get("replicas", 0))
            if size > config.fleet.replicas_per_zone:
                out[zone] = size
        return out

    async def list_partitions(namespace: str, table: str) -> list[Any]:
        return await api.list(
            naming.API_VERSION, naming.PARTITIONS, namespace, naming.partition_labels(table)
        )

    async def reconcile_table(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str,
        name: str,
        patch: kopf.Patch,
    ) -> None:
        if meta.get("deletionTimestamp"):
            return  # the deletion handler owns the object now
        async with state.table_locks.setdefault(f"{namespace}/{name}", asyncio.Lock()):
            await _reconcile_table(body, spec, meta, status, namespace, name, patch)
        if doorman is not None:
            doorman.changed()

    async def record_stream(namespace: str, name: str, table: TableSpec) -> TableSpec:
        """A kubectl user's spec.streamSpecification: the stream starts (or stops) now,
        recorded in the annotation routers and storage pods read. Decided on the Table
        as it is now and written at once, under its version: a handler run on an older
        copy of the Table must not start the stream a second time."""
        fresh = await api.get(naming.API_VERSION, naming.TABLES, namespace, name)
        stream = kubernetes.stream_to_record(fresh, time.time()) if fresh is not None else None
        if stream is None:
            return table
        note = {kubernetes.STREAM_ANNOTATION: orjson.dumps(stream.to_json()).decode()}
        try:
            await api.patch_annotations(
                naming.API_VERSION, naming.TABLES, namespace, name, note, fresh["metadata"]["resourceVersion"]
            )
        except KubeApiError as exc:
            if exc.status != 409:
                raise
            return table  # changed meanwhile: the next reconcile decides again
        return dataclasses.replace(table, stream=stream)

    async def _reconcile_table(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str,
        name: str,
        patch: kopf.Patch,
    ) -> None:
        # The local autoadmin's reconcile core decides; this maps resources in and out.
        await ensure_fleet(body)
        table = resources.table_spec(namespace, name, spec, meta)
        if kubernetes.stream_to_record(body, time.time()) is not None:
            table = await record_stream(namespace, name, table)
        replication_factor = int(spec.get("replicationFactor", 3))
        nodes = config.fleet.nodes()
        objs = await list_partitions(namespace, name)
        state = resources.table_state(table, status)
        settings = reconcile.Settings(
            on_demand_partitions=config.on_demand_partitions,
            placement=resources.zoned_placement(replication_factor),
            shards=dataclasses.replace(
                config.shards, replicas=decisions.usable_replication(replication_factor, nodes)
            ),
            split_size_bytes=config.split_size_bytes,
            split_hot_seconds=config.split_hot_seconds,
            # The storage pods run replication groups: a replicated partition is split at
            # a log index, as in the local cluster (docs/kubernetes.md, "Splits").
            split_replicated=config.fleet.replication,
        )
        partitions = await with_split_indexes(namespace, name, [resources.partition(o) for o in objs])
        others: tuple[frozenset[str], ...] = ()
        if reconcile.needs_others(table, partitions, nodes, settings):
            # Every other Table's pods, to choose this one's shuffle shard (one list).
            everything = await api.list(
                naming.API_VERSION, naming.PARTITIONS, namespace, naming.every_partition_labels()
            )
            others = resources.other_placements(everything, name)
        observed = reconcile.Observed(
            table,
            state,
            partitions,
            resources.ready_replicas(objs),
            resources.partition_stats(objs),
            others,
        )
        # Only the active peer runs handlers: this instance acts.
        autoadmin_metrics.LEADER.set(1)
        for action in reconcile.decide(observed, nodes, settings):
            try:
                if isinstance(action, reconcile.ChangePartitions):
                    await ensure_fleet(body)
                    await change_partitions(body, namespace, name, objs, action, nodes)
                    objs = await list_partitions(namespace, name)
                    if action.exposed:
                        _event(
                            body,
                            "Warning",
                            reason="ShardOverlaps",
                            message=f"placed on pods holding more than {settings.shards.max_shared} members of "
                            f"{action.exposed} other Partitions: too few storage pods to keep them apart",
                        )
                elif isinstance(action, reconcile.MarkSplit):
                    await mark_splits(body, namespace, action)
                elif isinstance(action, reconcile.PutState):
                    state = action.state  # recorded by the status patch below
                elif isinstance(action, reconcile.CannotSplit):
                    report_kept_whole(body, namespace, action)
                    continue
            except Exception:
                autoadmin_metrics.record_failed(action, observed.state, "error")
                raise
            autoadmin_metrics.record_applied(action, observed.state)
        objs = await apply_replication_factor(body, namespace, objs, replication_factor)
        new = table_status(body, table, state, status, meta, objs, replication_factor, nodes)
        # Only what changed: an empty patch is not sent, so a settled table's resync
        # writes nothing (and kopf does not wait out its consistency check after it).
        patch.status.update({k: v for k, v in new.items() if status.get(k) != v})

    async def apply_replication_factor(
        body: kopf.Body, namespace: str, objs: Sequence[Mapping[str, Any]], replication_factor: int
    ) -> list[Mapping[str, Any]]:
        """Give every Partition the Table's replicationFactor (`spec.replicationFactor`):
        the spec change runs the Partition handler, whose HostReplica tells the group's
        members, and the group's leader adds or removes members toward it one at a time
        (repair, docs/kubernetes.md). The Partitions as they are afterwards."""
        out = []
        changed = 0
        for o in objs:
            change = builders.replication_factor_patch(o["spec"], replication_factor)
            if change:
                # Absent: a Partition made before the field; filled in, not a change.
                changed += "replicationFactor" in o["spec"] and "replicationFactor" in change
                o = await api.patch_spec(
                    naming.API_VERSION, naming.PARTITIONS, namespace, o["metadata"]["name"], change
                )
            out.append(o)
        if changed and not config.fleet.replication:
            # Without replication groups there is no leader to change the members.
            _event(
                body,
                "Warning",
                reason="ReplicationFactorNotApplied",
                message=f"replicationFactor {replication_factor} needs storage.replication on",
            )
        elif changed:
            _event(
                body,
                "Normal",
                reason="ReplicationFactorChanging",
                message=(
                    f"{changed} partitions to {replication_factor} replicas: each group's leader "
                    "adds or removes one member at a time"
                ),
            )
        return out

    async def with_split_indexes(
        namespace: str, table: str, partitions: Sequence[Partition]
    ) -> tuple[Partition, ...]:
        """The partitions, each marked one with the index of its SPLIT entry once its
        group's leader has published it (then the core replaces it by its children)."""
        out = []
        for p in partitions:
            if p.split_at and not p.split_index:
                ref = PartitionRef(namespace, p.partition_id, table, p.start, p.end - 1)
                published = await director.published_split(ref)
                if published is not None and published[0] == p.split_at:
                    p = dataclasses.replace(p, split_index=published[1])
            out.append(p)
        return tuple(out)

    async def mark_splits(body: kopf.Body, namespace: str, action: reconcile.MarkSplit) -> None:
        """Ask the groups to split: each Partition's `spec.splitAt`, which its members are
        given in HostReplica; the leader then seals the group and commits a SPLIT entry."""
        marked = []
        for p in action.partitions:
            await api.patch_spec(
                naming.API_VERSION,
                naming.PARTITIONS,
                namespace,
                p.partition_id,
                {"splitAt": f"{p.split_at:016x}"},
            )
            marked.append(p.partition_id)
        _event(
            body,
            "Normal",
            reason="PartitionsSplitting",
            message=f"splitting {', '.join(marked)} at a log index ({action.reason.replace('_', ' ')})",
        )

    def report_kept_whole(body: kopf.Body, namespace: str, action: reconcile.CannotSplit) -> None:
        key = (namespace, action.partition_id, action.obstacle)
        if key in state.kept_whole:
            return
        state.kept_whole.add(key)
        autoadmin_metrics.record_applied(action, None)
        why = KEPT_WHOLE_BECAUSE[action.obstacle]
        _event(
            body,
            "Warning",
            reason="PartitionKeptWhole",
            message=f"partition {action.partition_id} is due a split but cannot be split: {why}",
        )

    async def change_partitions(
        body: kopf.Body,
        namespace: str,
        name: str,
        objs: Sequence[Mapping[str, Any]],
        action: reconcile.ChangePartitions,
        nodes: Sequence[NodeRecord],
    ) -> None:
        existing = {o["metadata"]["name"] for o in objs}
        put, removed = resources.resource_changes(action, name)
        # A replicated split's children are applied once: their members are their groups'
        # from then on (repair publishes changes), not the parent's this pass would write.
        put = [p for p in put if not (p.parent and resources.resource_name(p, name) in existing)]
        # New resources before the shortened ones: a split cut short between the two
        # leaves ranges that overlap (decided again next pass), never a hole.
        put.sort(key=lambda p: resources.resource_name(p, name) in existing)
        for p in put:
            await api.apply(builders.partition(body, resources.partition_plan(p, nodes)))
        if action.reason == "split_committed":
            # A replicated split's parent goes once a majority of each child's members
            # host the child: a member told to drop the parent before it holds the child
            # erases the range, and the child's data would then live on a minority.
            objs = await list_partitions(namespace, name)
            removed = [gone for gone in removed if decisions.children_hosted(gone, objs)]
        for gone in removed:
            await api.delete(naming.API_VERSION, naming.PARTITIONS, namespace, gone)
        created = sum(resources.resource_name(p, name) not in existing for p in put)
        if not created and not removed:
            return  # a split's children waiting to be hosted: nothing new to report
        after = len(existing) - len(removed) + created
        verb = "PartitionsCreated" if not existing else "PartitionsSplit"
        why = {
            "throughput_raised": " (throughput raised)",
            "size_exceeded": " (a partition passed the split size)",
            # The children first, then the parent once they are hosted: two events.
            "split_committed": " (a replicated split at a log index)",
        }
        _event(
            body,
            "Normal",
            reason=verb,
            message=f"{len(existing)} -> {after} partitions{why.get(action.reason, '')}",
        )

    def table_status(
        body: kopf.Body,
        table: TableSpec,
        state: TableState | None,
        status: kopf.Status,
        meta: kopf.Meta,
        objs: Sequence[Mapping[str, Any]],
        replication_factor: int,
        nodes: Sequence[NodeRecord],
    ) -> dict[str, Any]:
        problem = None
        usable = decisions.usable_replication(replication_factor, nodes)
        if usable < replication_factor:
            problem = (
                "NotEnoughZones",
                f"replicationFactor {replication_factor} but the fleet has {usable} zones",
            )
        obs = decisions.TableObservation(
            previous_status=status.get("tableStatus"),
            deleting=False,
            wanted_partitions=len(objs),
            partition_states=tuple((o.get("status") or {}).get("state", "Pending") for o in objs),
            item_count=sum(int((o.get("status") or {}).get("itemCount", 0)) for o in objs),
            size_bytes=sum(int((o.get("status") or {}).get("sizeBytes", 0)) for o in objs),
            problem=problem,
            # The groups' leaders keep the Table's factor, in the zones there are (a
            # fleet short of zones gets a second member in a zone: NotEnoughZones above).
            members_changing=sum(
                not decisions.at_replication_factor(
                    builders.members_of_spec(o["spec"]["members"]), replication_factor
                )
                for o in objs
            ),
            replication_factor=replication_factor,
        )
        shown = table_status_of(table, state)
        new = decisions.table_status_patch(
            obs, shown, status.get("conditions") or [], int(meta.get("generation", 1)), _now()
        )
        if state is not None:
            new.update(resources.state_status(state))
        else:
            new.pop("observedGeneration")
        new["tableId"] = status.get("tableId") or meta.get("uid", "")
        if new["tableStatus"] != status.get("tableStatus"):
            _event(
                body,
                "Normal",
                reason=f"Table{new['tableStatus'].title()}",
                message=f"table is {new['tableStatus']}",
            )
        if problem and status.get("conditions") != new["conditions"]:
            _event(body, "Warning", reason=problem[0], message=problem[1])
        return new

    @kopf.on.create(*tables, registry=registry)
    @kopf.on.resume(*tables, registry=registry)
    @kopf.on.update(*tables, field="spec", registry=registry)
    async def table_changed(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str | None,
        name: str,
        patch: kopf.Patch,
        **_: Any,
    ) -> None:
        await reconcile_table(body, spec, meta, status, _namespaced(namespace), name, patch)

    @kopf.timer(*tables, interval=config.resync_seconds, registry=registry)
    @kopf.timer(
        *tables,
        id="table_progress",
        interval=config.progress_seconds,
        when=_table_in_progress,
        registry=registry,
    )
    async def table_resync(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str | None,
        name: str,
        patch: kopf.Patch,
        **_: Any,
    ) -> None:
        await reconcile_table(body, spec, meta, status, _namespaced(namespace), name, patch)

    @kopf.on.delete(*tables, registry=registry)
    async def table_deleted(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str | None,
        name: str,
        patch: kopf.Patch,
        **_: Any,
    ) -> None:
        if spec.get("deletionProtectionEnabled"):
            _event(
                body,
                "Warning",
                reason="DeletionProtected",
                message="deletionProtectionEnabled is true: set it to false to let the deletion proceed",
            )
            raise kopf.TemporaryError("deletion protection is enabled", delay=config.retry_seconds)
        if doorman is not None:
            doorman.changed()  # a table being deleted admits nothing: its resources go
        namespace = _namespaced(namespace)
        objs = await list_partitions(namespace, name)
        obs = decisions.TableObservation(
            previous_status=status.get("tableStatus"),
            deleting=True,
            wanted_partitions=0,
            partition_states=tuple("Deleting" for _ in objs),
        )
        patch.status.update(
            decisions.table_status_patch(
                obs, "DELETING", status.get("conditions") or [], int(meta.get("generation", 1)), _now()
            )
        )
        table = resources.table_spec(namespace, name, spec, {**meta, "deletionTimestamp": True})
        observed = reconcile.Observed(
            table,
            resources.table_state(table, status),
            tuple(resources.partition(o) for o in objs),
            resources.ready_replicas(objs),
        )
        released = any(
            isinstance(a, reconcile.RemoveTable)
            for a in reconcile.decide(observed, config.fleet.nodes(), reconcile.Settings())
        )
        if released and not objs:
            autoadmin_metrics.ACTIONS.labels("delete_table", "deletion_requested").inc()
        if objs or not released:
            asked = [
                o["metadata"]["name"]
                for o in objs
                if not o["metadata"].get("deletionTimestamp")
                and await api.delete(naming.API_VERSION, naming.PARTITIONS, namespace, o["metadata"]["name"])
            ]
            if asked:
                _event(
                    body, "Normal", reason="DeletingPartitions", message=f"dropping {len(asked)} partitions"
                )
            raise kopf.TemporaryError(f"{len(objs)} partitions still dropping", delay=config.retry_seconds)
        _event(body, "Normal", reason="TableDeleted", message="every partition dropped; releasing the table")

    async def reconcile_partition(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str,
        name: str,
        patch: kopf.Patch,
    ) -> None:
        if meta.get("deletionTimestamp"):
            return
        if memberships is not None:
            memberships.started()
        if migration is not None:
            migration.started()
        if placements is not None:
            placements.started()
        members = _plan_of(body).members
        table = await api.get(naming.API_VERSION, naming.TABLES, namespace, spec["table"])
        ref = _ref_of(namespace, name, spec)
        if table is not None:
            ref = dataclasses.replace(
                ref,
                table_spec=kubernetes.spec_from_resource(table),
                replication_factor=int(table["spec"].get("replicationFactor", 3)),
            )
        members = await adopt_published(body, ref, members, patch)
        report = await director.host(ref, members)
        states = {node: r.state for node, r in report.replicas.items()}
        state = decisions.partition_state(members, states, deleting=False)
        generation = int(meta.get("generation", 1))
        previous = status.get("conditions") or []
        conditions = decisions.render_conditions(
            decisions.partition_conditions(state), previous, generation, _now()
        )
        new: dict[str, Any] = {
            "observedGeneration": generation,
            "state": state,
            "members": [
                {"node": m.node, "state": states.get(m.node, "Requested"), "lag": report.replicas[m.node].lag}
                if m.node in report.replicas
                else {"node": m.node, "state": "Requested", "lag": 0}
                for m in members
            ],
            **resources.report_status(report),
            "conditions": conditions,
        }
        if report.leader:
            new["leader"] = report.leader
        if state != status.get("state"):
            _event(body, "Normal", reason=f"Partition{state}", message=_members_text(members, state))
        patch.status.update(new)

    async def adopt_published(
        body: kopf.Body, ref: PartitionRef, members: tuple[decisions.Member, ...], patch: kopf.Patch
    ) -> tuple[decisions.Member, ...]:
        """The members to host: the spec's, or the ones the group's leader published
        when it changed them (repair), which the spec then adopts. A member the leader
        removed is asked to drop its replica (best effort: a node also erases a replica a
        published membership no longer names, when it next starts).

        The membership watch writes the spec when it runs (always, beside a control
        store): one writer, the newest record it listed. A handler writing too raced it
        with an older record it had read, and left the spec stale."""
        published = await director.published_members(ref)
        if published is None or set(published) == set(members):
            return members
        if memberships is None:
            patch.spec["members"] = builders.member_specs(published)
        kept = {m.node for m in published}
        removed = [m for m in members if m.node not in kept]
        if removed and not await director.drop(ref, removed):
            log.info("partition %s: removed members %s not dropped yet", ref.name, [m.node for m in removed])
        autoadmin_metrics.ACTIONS.labels("adopt_members", "repair").inc()
        _event(body, "Normal", reason="MembersChanged", message=_members_text(published, "adopted"))
        return published

    @kopf.on.create(*partitions, registry=registry)
    @kopf.on.resume(*partitions, registry=registry)
    @kopf.on.update(*partitions, field="spec", registry=registry)
    async def partition_changed(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str | None,
        name: str,
        patch: kopf.Patch,
        **_: Any,
    ) -> None:
        await reconcile_partition(body, spec, meta, status, _namespaced(namespace), name, patch)

    @kopf.timer(*partitions, interval=config.resync_seconds, registry=registry)
    @kopf.timer(
        *partitions,
        id="partition_progress",
        interval=config.progress_seconds,
        when=_partition_in_progress,
        registry=registry,
    )
    async def partition_resync(
        body: kopf.Body,
        spec: kopf.Spec,
        meta: kopf.Meta,
        status: kopf.Status,
        namespace: str | None,
        name: str,
        patch: kopf.Patch,
        **_: Any,
    ) -> None:
        await reconcile_partition(body, spec, meta, status, _namespaced(namespace), name, patch)

    @kopf.on.delete(*partitions, registry=registry)
    async def partition_deleted(
        body: kopf.Body, spec: kopf.Spec, namespace: str | None, name: str, **_: Any
    ) -> None:
        members = _plan_of(body).members
        ref = _ref_of(_namespaced(namespace), name, spec)
        # A membership the group's leader published says who holds a replica, whatever
        # the spec still lists (a member it removed may be gone for good: asking it to
        # drop would hold the deletion for ever). The record goes first: nodes host what
        # it names.
        published = await director.published_members(ref)
        await director.forget_members(ref)
        if not await director.drop(ref, published or members):
            raise kopf.TemporaryError("replicas still dropping", delay=config.retry_seconds)
        _event(body, "Normal", reason="ReplicasDropped", message=_members_text(members, "dropped"))

    return registry


def _event(body: kopf.Body, kind: str, reason: str, message: str) -> None:
    """A Kubernetes event on the object (kopf posts it in the background)."""
    kopf.event(body, type=kind, reason=reason, message=message)


def _members_text(members: Sequence[decisions.Member], state: str) -> str:
    return f"{state}: " + ", ".join(f"{m.node} ({m.zone}, {m.role})" for m in members)
