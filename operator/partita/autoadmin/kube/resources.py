"""Table and Partition resources as the reconcile core's objects, and back.

The Kubernetes driver runs the same `reconcile.decide` as the local one: a Table's spec
is the desired `TableSpec`, its status holds the core's `TableState` (`tableStatus`
CREATING until first served, then the phase ACTIVE with `observedGeneration`), Partition
resources are the partition objects, and their status says which replicas serve. Pure
functions: the handlers read resources, map them here, decide, and map the actions
back onto resources.

Differences the mapping absorbs:
- A Partition resource holds an inclusive hash range [start, last]; the core's is
  half-open [start, end).
- A Partition resource is named by its table and first hash, so a split's left child
  is its parent resource with a shorter range, and only the right child is new.
- The table id (an integer in the core, naming new partitions and seeding placement)
  is the one a router recorded when it created the Table, else a stable hash of the
  Table's namespace and name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from partita.autoadmin.kube import decisions, naming
from partita.autoadmin.kube.replicas import PartitionReport
from partita.autoadmin.reconcile import ChangePartitions, Placement
from partita.common.partition_map import Partition
from partita.control import kubernetes as kube_catalog
from partita.control.model import (
    NodeRecord,
    PartitionStats,
    TableSpec,
    TableState,
)


def table_spec(namespace: str, name: str, spec: Mapping[str, Any], meta: Mapping[str, Any]) -> TableSpec:
    """The Table as the core's spec: the same mapping the routers' Kubernetes catalog
    uses (`partita.control.kubernetes`), so a table made through the DynamoDB API and
    one made with kubectl are the same thing to both."""
    return kube_catalog.spec_from_resource(
        {"metadata": {**meta, "namespace": namespace, "name": name}, "spec": spec}
    )


def table_state(spec: TableSpec, status: Mapping[str, Any]) -> TableState | None:
    """The core's state record kept in the Table's status; None before the first."""
    return kube_catalog.state_from_resource(
        spec, {"metadata": {"resourceVersion": spec.revision}, "status": status}
    )


def state_status(state: TableState) -> dict[str, Any]:
    """The status field that records a `PutState` beside `tableStatus` (which shows
    CREATING exactly while the phase is CREATING)."""
    return {"observedGeneration": state.observed_generation}


def partition(obj: Mapping[str, Any]) -> Partition:
    return kube_catalog.partition_from_resource(obj)


def ready_replicas(objs: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, str]]:
    """(partition, node) pairs that serve. A Degraded partition (a member failed, the
    rest serve) counts as served in full: it answers requests, and its table must not
    fall back to CREATING or stay UPDATING for a failed replica (the Degraded condition
    says so instead)."""
    out: set[tuple[str, str]] = set()
    for obj in objs:
        status = obj.get("status") or {}
        name = obj["metadata"]["name"]
        if status.get("state") == "Degraded":
            out |= {(name, m["node"]) for m in obj["spec"]["members"]}
        else:
            out |= {(name, m["node"]) for m in status.get("members", []) if m.get("state") == "Serving"}
    return frozenset(out)


def partition_stats(objs: Iterable[Mapping[str, Any]]) -> dict[str, PartitionStats]:
    """Partition status figures as the core's statistics, by resource name. Figures
    reported before the spec's last change (observedGeneration behind generation: a
    split shortened the range) are only estimates: the core never splits on them."""
    out = {}
    for obj in objs:
        status = obj.get("status") or {}
        if "sizeBytes" not in status:
            continue
        split_hash = status.get("splitHash")
        hot_split_hash = status.get("hotSplitHash")
        current = status.get("observedGeneration") == obj["metadata"].get("generation", 1)
        out[obj["metadata"]["name"]] = PartitionStats(
            int(status.get("itemCount", 0)),
            int(status["sizeBytes"]),
            0.0,
            int(split_hash, 16) if split_hash else None,
            bool(status.get("singleKey", False)),
            estimated=not current,
            hot_seconds=float(status.get("hotSeconds", 0.0)),
            hot_split_hash=int(hot_split_hash, 16) if hot_split_hash else None,
            hot_single_key=bool(status.get("hotSingleKey", False)),
        )
    return out


def report_status(report: PartitionReport) -> dict[str, Any]:
    """The figures of a replica report as Partition status fields (None deletes a field
    in a merge patch: a split hash no longer reported is not left behind)."""
    return {
        "itemCount": report.item_count,
        "sizeBytes": report.size_bytes,
        "splitHash": f"{report.split_hash:016x}" if report.split_hash is not None else None,
        "singleKey": report.single_key,
        "hotSeconds": report.hot_seconds,
        "hotSplitHash": f"{report.hot_split_hash:016x}" if report.hot_split_hash is not None else None,
        "hotSingleKey": report.hot_single_key,
        # The replication group's, as its leader reports them (None: no group runs).
        "term": report.term or None,
        "commitIndex": report.commit_index or None,
    }


def table_of(obj: Mapping[str, Any]) -> str | None:
    """The Table a Partition belongs to, by its label."""
    table: str | None = (obj["metadata"].get("labels") or {}).get(naming.TABLE_LABEL)
    return table


def member_nodes(obj: Mapping[str, Any]) -> frozenset[str]:
    """The storage pods a Partition's spec names as members, whatever their role."""
    return frozenset(m["node"] for m in obj["spec"].get("members", []))


def other_placements(partitions: Sequence[Mapping[str, Any]], table: str) -> tuple[frozenset[str], ...]:
    """The members (storage pods) of every Partition of a Table other than `table`."""
    return tuple(member_nodes(obj) for obj in partitions if table_of(obj) not in (None, table))


def zoned_placement(replication_factor: int) -> Placement:
    """One replica in each of `replication_factor` zones (rotated per table), through
    `decisions.place`, as the core's placement."""

    def place(count: int, nodes: Sequence[NodeRecord], seed: int) -> list[tuple[str, ...]]:
        return [
            tuple(m.node for m in members)
            for members in decisions.place(count, nodes, replication_factor, seed)
        ]

    return place


def partition_plan(p: Partition, nodes: Sequence[NodeRecord]) -> decisions.PartitionPlan:
    zones = {n.node_id: n.zone for n in nodes}
    members = tuple(decisions.Member(node, zones.get(node, "")) for node in p.replicas)
    if p.parent:  # a replicated split's child, named by its id
        return decisions.PartitionPlan(
            p.start, p.end - 1, members, p.parent, p.parent_index, name=p.partition_id
        )
    return decisions.PartitionPlan(p.start, p.end - 1, members)


def resource_name(p: Partition, table: str) -> str:
    """A replicated split's child is named by its id, every other partition by its first
    hash (a single replica's split shortens its parent: see the module's notes)."""
    return p.partition_id if p.parent else naming.partition_name(table, p.start)


def resource_changes(change: ChangePartitions, table: str) -> tuple[list[Partition], list[str]]:
    """(partitions to apply, Partition resources to delete) for one ChangePartitions:
    a removed partition whose first hash a new one keeps is patched, not deleted."""
    kept = {resource_name(p, table) for p in change.put}
    removed = sorted(name for name in change.remove if name not in kept)
    return list(change.put), removed
