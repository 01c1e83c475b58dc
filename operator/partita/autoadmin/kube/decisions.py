"""Pure decisions of the Kubernetes operator beyond the reconcile core: which nodes
of which zones a new partition gets, and what status and conditions a Table or
Partition shows.

How many partitions, when to split and when a table is ACTIVE are the reconcile core's
(`partita.autoadmin.reconcile.decide`, shared with the local autoadmin); the handlers
call it through `resources`, and give it `place` below as its placement.

No I/O and no clock: handlers pass in what they observed (and `now`), and get back
plans and status dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from partita.autoadmin import placement
from partita.common.partition_map import HASH_SPACE
from partita.control import kubernetes
from partita.control.model import NodeRecord

TableStatus = Literal["CREATING", "ACTIVE", "UPDATING", "DELETING"]
PartitionState = Literal["Pending", "Serving", "Degraded", "Deleting"]
MemberState = Literal["Requested", "CatchingUp", "Serving", "Failed"]


Role = Literal["full", "joining", "log"]
ROLES: tuple[Role, ...] = ("full", "joining", "log")


@dataclass(frozen=True)
class Member:
    node: str
    zone: str
    # full: a replica routers read from; joining: a full replica being built (snapshot
    # and log catch-up), not read from yet; log: WAL only, keeps the write quorum.
    role: Role = "full"


@dataclass(frozen=True)
class PartitionPlan:
    """One partition: the hash range [start, last] (inclusive) and its desired members."""

    start: int
    last: int
    members: tuple[Member, ...]
    # A replicated split's child: named after its parent (`reconcile.child_ids`, where
    # other partitions are named by their first hash), with the index of the parent's
    # SPLIT entry its members start from.
    parent: str = ""
    parent_index: int = 0
    name: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.last < HASH_SPACE:
            raise ValueError(f"bad hash range [{self.start:#x}, {self.last:#x}]")


# --- placement ------------------------------------------------------------------------


def table_seed(namespace: str, name: str) -> int:
    """A stable seed per table, so re-planning after a restart places the same way (the
    id of a Table no router named)."""
    return kubernetes.default_table_id(namespace, name)


def usable_replication(requested: int, nodes: Sequence[NodeRecord]) -> int:
    """Replicas sit in distinct zones, so no more replicas than zones."""
    return min(requested, len({n.zone for n in nodes}))


def place(
    count: int, nodes: Sequence[NodeRecord], replication_factor: int, seed: int
) -> list[tuple[Member, ...]]:
    """Members of each of `count` new partitions: one node in each of `replication_factor`
    zones, the zones rotated by the table's seed so tables do not all lead in one zone,
    and the node within each zone chosen by the shared placement rule."""
    zones = sorted({n.zone for n in nodes})
    replicas = usable_replication(replication_factor, nodes)
    if replicas < 1:
        raise ValueError("replication factor must be at least 1")
    offset = seed % len(zones)
    chosen = [zones[(offset + i) % len(zones)] for i in range(replicas)]
    per_zone = {
        zone: placement.initial_placement(count, [n for n in nodes if n.zone == zone], seed)
        for zone in chosen
    }
    return [tuple(Member(per_zone[zone][i][0], zone) for zone in chosen) for i in range(count)]


def children_hosted(parent: str, partitions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a replicated split's children exist and a majority of each one's members
    report it hosted (catching up or serving), from the Partition resources."""
    children = [p for p in partitions if (p.get("spec") or {}).get("parent") == parent]
    if len(children) < 2:
        return False
    for child in children:
        members = child["spec"]["members"]
        reports = {m["node"]: m.get("state") for m in (child.get("status") or {}).get("members", [])}
        hosted = sum(1 for m in members if reports.get(m["node"]) in ("CatchingUp", "Serving"))
        if hosted <= len(members) // 2:
            return False
    return True


# --- status ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    type: Literal["Available", "Progressing", "Degraded"]
    status: bool
    reason: str
    message: str


def render_conditions(
    wanted: Sequence[Condition], previous: Sequence[Mapping[str, Any]], generation: int, now: str
) -> list[dict[str, Any]]:
    """metav1.Condition dictionaries; lastTransitionTime moves only when status changes."""
    before = {c.get("type"): c for c in previous}
    out = []
    for cond in wanted:
        status = "True" if cond.status else "False"
        old = before.get(cond.type)
        since = old["lastTransitionTime"] if old and old.get("status") == status else now
        out.append(
            {
                "type": cond.type,
                "status": status,
                "observedGeneration": generation,
                "lastTransitionTime": since,
                "reason": cond.reason,
                "message": cond.message,
            }
        )
    return out


def partition_state(
    members: Sequence[Member], reports: Mapping[str, MemberState], deleting: bool
) -> PartitionState:
    if deleting:
        return "Deleting"
    states = [reports.get(m.node, "Requested") for m in members]
    serving = sum(1 for s in states if s == "Serving")
    if serving == len(states):
        return "Serving"
    # A majority serving is a replication group that commits and elects: available with
    # less redundancy than asked (a killed pod's partitions keep serving).
    if any(s == "Failed" for s in states) or (len(states) > 2 and serving > len(states) // 2):
        return "Degraded"
    return "Pending"


def partition_conditions(state: PartitionState) -> list[Condition]:
    return [
        Condition(
            "Available",
            state in ("Serving", "Degraded"),
            {"Serving": "AllReplicasServing", "Degraded": "QuorumServing"}.get(state, "ReplicasNotServing"),
            f"partition is {state}",
        ),
        Condition(
            "Progressing",
            state in ("Pending", "Deleting"),
            {"Pending": "PlacingReplicas", "Deleting": "DroppingReplicas"}.get(state, "Reconciled"),
            f"partition is {state}",
        ),
        Condition(
            "Degraded",
            state == "Degraded",
            "ReplicaFailed" if state == "Degraded" else "AsExpected",
            "a replica reports Failed" if state == "Degraded" else "no replica reports a failure",
        ),
    ]


@dataclass(frozen=True)
class TableObservation:
    """What a Table reconcile saw: its partitions' states and figures, and any problem."""

    previous_status: str | None
    deleting: bool
    wanted_partitions: int
    partition_states: tuple[PartitionState, ...]
    item_count: int = 0
    size_bytes: int = 0
    problem: tuple[str, str] | None = None  # (reason, message) of a configuration problem
    # Partitions whose members are not yet `replication_factor` full replicas and nothing
    # else (a replicationFactor changed, or a repair under way).
    members_changing: int = 0
    replication_factor: int = 3


def at_replication_factor(members: Sequence[Member], replication_factor: int) -> bool:
    """Whether a Partition's members are exactly `replication_factor` full replicas."""
    return len(members) == replication_factor and all(m.role == "full" for m in members)


def table_conditions(obs: TableObservation, status: TableStatus) -> list[Condition]:
    serving = sum(1 for s in obs.partition_states if s in ("Serving", "Degraded"))
    progress = f"{serving} of {obs.wanted_partitions} partitions serving"
    degraded_parts = sum(1 for s in obs.partition_states if s == "Degraded")
    if obs.problem is not None:
        degraded = Condition("Degraded", True, obs.problem[0], obs.problem[1])
    elif degraded_parts:
        degraded = Condition("Degraded", True, "PartitionsDegraded", f"{degraded_parts} partitions degraded")
    else:
        degraded = Condition("Degraded", False, "AsExpected", "every partition has all its replicas")
    progressing_reason = {
        "CREATING": "CreatingPartitions",
        "UPDATING": "SplittingPartitions",
        "DELETING": "Deleting",
    }
    if status == "ACTIVE" and obs.members_changing:
        # The table serves throughout; its groups' leaders are moving members.
        progressing = Condition(
            "Progressing",
            True,
            "ChangingMembers",
            f"{obs.members_changing} of {obs.wanted_partitions} partitions not yet at "
            f"{obs.replication_factor} full replicas",
        )
    else:
        progressing = Condition(
            "Progressing",
            status != "ACTIVE",
            progressing_reason.get(status, "Reconciled"),
            progress if status != "DELETING" else "dropping partitions",
        )
    return [
        Condition(
            "Available",
            status == "ACTIVE",
            "AllPartitionsServing" if status == "ACTIVE" else "NotReady",
            progress,
        ),
        progressing,
        degraded,
    ]


def table_status_patch(
    obs: TableObservation,
    status: TableStatus,
    previous_conditions: Sequence[Mapping[str, Any]],
    generation: int,
    now: str,
) -> dict[str, Any]:
    """The Table's status for DynamoDB's `status` (the reconcile core's view,
    `control.model.table_status`) and what the partitions report."""
    return {
        "observedGeneration": generation,
        "tableStatus": status,
        "partitionCount": len(obs.partition_states),
        "itemCount": obs.item_count,
        "tableSizeBytes": obs.size_bytes,
        "conditions": render_conditions(table_conditions(obs, status), previous_conditions, generation, now),
    }
