"""Pure decisions of the Kubernetes operator: how many partitions, which hash ranges,
which nodes, and what status and conditions a Table or Partition shows.

No I/O and no clock: handlers pass in what they observed (and `now`), and get back
plans and status dictionaries. The partition-count rule and the per-zone placement are
the autoadmin's shared decisions (`partition_count`, `placement`), called from here
only, so moving them is a one-line change.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from partita.autoadmin import partition_count, placement
from partita.common.partition_map import HASH_SPACE
from partita.control.model import NodeRecord

# A partition holds at most 10 GB before it must split (the DynamoDB paper).
PARTITION_SIZE_LIMIT = 10 * 1000**3

TableStatus = Literal["CREATING", "ACTIVE", "UPDATING", "DELETING"]
PartitionState = Literal["Pending", "Serving", "Degraded", "Deleting"]
MemberState = Literal["Requested", "CatchingUp", "Serving", "Failed"]


@dataclass(frozen=True)
class TableSpec:
    """The parts of a Table's spec the operator decides on."""

    table_name: str
    billing_mode: str = "PAY_PER_REQUEST"
    read_capacity_units: int = 0
    write_capacity_units: int = 0
    replication_factor: int = 3
    deletion_protection: bool = False

    @property
    def on_demand(self) -> bool:
        return self.billing_mode == "PAY_PER_REQUEST"

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> TableSpec:
        throughput = spec.get("provisionedThroughput") or {}
        return cls(
            table_name=str(spec["tableName"]),
            billing_mode=str(spec.get("billingMode", "PAY_PER_REQUEST")),
            read_capacity_units=int(throughput.get("readCapacityUnits", 0)),
            write_capacity_units=int(throughput.get("writeCapacityUnits", 0)),
            replication_factor=int(spec.get("replicationFactor", 3)),
            deletion_protection=bool(spec.get("deletionProtectionEnabled", False)),
        )


@dataclass(frozen=True)
class Member:
    node: str
    zone: str
    role: Literal["full", "log"] = "full"


@dataclass(frozen=True)
class PartitionPlan:
    """One partition: the hash range [start, last] (inclusive) and its desired members."""

    start: int
    last: int
    members: tuple[Member, ...]

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.last < HASH_SPACE:
            raise ValueError(f"bad hash range [{self.start:#x}, {self.last:#x}]")


# --- partition count and ranges -------------------------------------------------------


def desired_partition_count(spec: TableSpec, current: int, size_bytes: int, on_demand_default: int) -> int:
    """Partitions the table should have now: DynamoDB's throughput rule, then size.

    A new table starts with ceil(RCU/3000 + WCU/1000) partitions (on demand: a configured
    count); a throughput increase splits every partition until there are enough; more
    than 10 GB per partition splits them again. Partitions never merge.
    """
    if current == 0:
        count = partition_count.initial_partition_count(
            spec.read_capacity_units, spec.write_capacity_units, spec.on_demand, on_demand_default
        )
    elif spec.on_demand:
        count = current
    else:
        count = partition_count.partition_count_after_update(
            current, spec.read_capacity_units, spec.write_capacity_units
        )
    needed_for_size = -(-size_bytes // PARTITION_SIZE_LIMIT)
    while count < needed_for_size:
        count *= 2
    return count


def initial_ranges(count: int) -> list[tuple[int, int]]:
    """The hash space cut into `count` contiguous ranges of (nearly) equal width."""
    if count < 1:
        raise ValueError("a table has at least one partition")
    bounds = [HASH_SPACE * i // count for i in range(count + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(count)]


def split(plan: PartitionPlan) -> tuple[PartitionPlan, PartitionPlan]:
    """Halve a range. Both halves stay on the parent's nodes: a split moves no data."""
    if plan.start == plan.last:
        raise ValueError(f"partition at {plan.start:#x} holds one hash and cannot split")
    middle = plan.start + (plan.last - plan.start + 1) // 2
    return PartitionPlan(plan.start, middle - 1, plan.members), PartitionPlan(middle, plan.last, plan.members)


def grow(existing: Sequence[PartitionPlan], count: int) -> list[PartitionPlan]:
    """Split the widest partition in two until there are at least `count`.

    From equal ranges this splits every partition once per doubling; from a half-done
    split (an interrupted reconcile) it finishes the job instead of splitting again.
    """
    plans = list(existing)
    while len(plans) < count:
        widest = max(plans, key=lambda p: (p.last - p.start, -p.start))
        plans.remove(widest)
        plans.extend(split(widest))
    return sorted(plans, key=lambda p: p.start)


# --- placement ------------------------------------------------------------------------


def table_seed(namespace: str, name: str) -> int:
    """A stable seed per table, so re-planning after a restart places the same way."""
    return zlib.crc32(f"{namespace}/{name}".encode())


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


def plan_partitions(
    existing: Sequence[PartitionPlan],
    count: int,
    nodes: Sequence[NodeRecord],
    replication_factor: int,
    seed: int,
) -> list[PartitionPlan]:
    """The table's partitions after this reconcile: new ones placed, or existing ones split."""
    if existing:
        return grow(existing, count)
    members = place(count, nodes, replication_factor, seed)
    return [PartitionPlan(start, last, members[i]) for i, (start, last) in enumerate(initial_ranges(count))]


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
    if all(s == "Serving" for s in states):
        return "Serving"
    if any(s == "Failed" for s in states):
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


def table_status(obs: TableObservation) -> TableStatus:
    """DynamoDB's TableStatus: CREATING until every partition first serves, UPDATING while
    a later change (a split) is being carried out, DELETING once deletion started."""
    if obs.deleting:
        return "DELETING"
    settled = len(obs.partition_states) == obs.wanted_partitions and all(
        s in ("Serving", "Degraded") for s in obs.partition_states
    )
    if settled:
        return "ACTIVE"
    return "CREATING" if obs.previous_status in (None, "CREATING") else "UPDATING"


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
    return [
        Condition(
            "Available",
            status == "ACTIVE",
            "AllPartitionsServing" if status == "ACTIVE" else "NotReady",
            progress,
        ),
        Condition(
            "Progressing",
            status != "ACTIVE",
            progressing_reason.get(status, "Reconciled"),
            progress if status != "DELETING" else "dropping partitions",
        ),
        degraded,
    ]


def table_status_patch(
    obs: TableObservation, previous_conditions: Sequence[Mapping[str, Any]], generation: int, now: str
) -> dict[str, Any]:
    status = table_status(obs)
    return {
        "observedGeneration": generation,
        "tableStatus": status,
        "partitionCount": len(obs.partition_states),
        "itemCount": obs.item_count,
        "tableSizeBytes": obs.size_bytes,
        "conditions": render_conditions(table_conditions(obs, status), previous_conditions, generation, now),
    }
