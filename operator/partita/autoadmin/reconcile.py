"""The reconcile core: what to do next for one table, as a pure function of what is
observed (desired spec, the autoadmin's own state record, partitions, ready replicas,
registered nodes).

Level-based and idempotent: the decision depends only on the observed state, never on
what a previous pass did, so a driver that dies between two writes simply decides the
rest on its next pass, and a pass over a settled table decides nothing (no writes).

The lifecycle:
  spec, no partitions      -> place them (count from throughput), state CREATING
  CREATING, all replicas ready            -> ACTIVE
  ACTIVE, spec generation moved on        -> split partitions if throughput needs more,
                                             ACTIVE at the new generation once the new
                                             layout's replicas are all ready (UPDATING
                                             until then, as DynamoDB reports)
  ACTIVE, settled, a partition too large   -> split it at its data's median key hash,
  or hot for long enough                     or at its load's (`splits.py`); the table
                                             stays ACTIVE
  spec deleting, no replica ready any more -> remove the table entirely
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from partita.autoadmin.partition_count import initial_partition_count, partition_count_after_update
from partita.autoadmin.placement import ShardPolicy, initial_placement, shuffle_shard
from partita.autoadmin.splits import DEFAULT_HOT_SECONDS, Blocked, Cut, Obstacle, consumption_cuts, size_cuts
from partita.common import config
from partita.common.partition_map import HASH_SPACE, Partition, is_replicated, split_evenly
from partita.common.shard_bound import exposed_partitions
from partita.control.model import (
    NO_REVISION,
    NodeRecord,
    PartitionStats,
    SplitParent,
    TablePhase,
    TableSpec,
    TableState,
    prepared_rates,
)

# Replica node ids of each of `count` new partitions, from the registered nodes and a
# seed that is stable per table (a pass repeated after a crash places the same way).
Placement = Callable[[int, Sequence[NodeRecord], int], list[tuple[str, ...]]]


@dataclass(frozen=True)
class Settings:
    # Partitions of a new PAY_PER_REQUEST table.
    on_demand_partitions: int = config.DEFAULT_ON_DEMAND_PARTITIONS
    # Where new partitions go: the driver's deployment decides (the local cluster:
    # `replicated_placement(--replication-factor)`, round-robin, distinct zones first;
    # Kubernetes: one replica per zone, replicationFactor of them).
    placement: Placement = initial_placement
    # How a new table's shuffle shard is chosen (`placement.ShardPolicy`): sized for its
    # replicas, holding at most so many replicas of any other table's partition.
    shards: ShardPolicy = field(default_factory=ShardPolicy)
    # A partition whose measured items pass this many bytes is split in two.
    split_size_bytes: int = config.DEFAULT_SPLIT_SIZE_BYTES
    # A partition hot (consuming at or near its allocation) this long is split.
    split_hot_seconds: float = DEFAULT_HOT_SECONDS
    # Whether the storage nodes run replication groups, which split a replicated
    # partition at a log index (`MarkSplit`; the local cluster with several replicas,
    # and Kubernetes with `storage.replication`). Off (`--no-split-replicated-groups`,
    # or storage pods without replication): a replicated partition is kept whole, since
    # its children would start from whatever each replica applied.
    split_replicated: bool = False


@dataclass(frozen=True)
class Observed:
    spec: TableSpec
    state: TableState | None  # None also when it belongs to an older incarnation
    partitions: tuple[Partition, ...]
    ready: frozenset[tuple[str, str]]  # (partition id, node id) replicas serving
    stats: Mapping[str, PartitionStats] = field(default_factory=dict)  # by partition id
    # The replica sets of the other tables' partitions: read by the driver only to
    # place a new table, and only when its shard would leave out some node
    # (`needs_others`).
    others: tuple[frozenset[str], ...] = ()


# Why partitions are placed or split: a new table, more throughput asked for, a
# partition grown past the split size, or one that ran hot.
ChangeReason = Literal[
    "new_table", "throughput_raised", "size_exceeded", "consumption_hot", "split_committed"
]


@dataclass(frozen=True)
class ChangePartitions:
    table_id: int
    put: tuple[Partition, ...]
    remove: tuple[str, ...] = ()
    # Estimated counts of split children until their leaders recount them, so a
    # table's ItemCount/TableSizeBytes do not drop to zero across a split.
    stats: tuple[tuple[str, PartitionStats], ...] = ()
    reason: ChangeReason = "new_table"
    # A new table's: the other tables' partitions of which its nodes hold more replicas
    # than the shard bound (`ShardPolicy.max_shared`), where the fleet did not allow
    # fewer; the drivers report it.
    exposed: int = 0


@dataclass(frozen=True)
class PutState:
    state: TableState


@dataclass(frozen=True)
class RemoveTable:
    spec: TableSpec


@dataclass(frozen=True)
class MarkSplit:
    """Ask the groups of replicated partitions to split: each of `partitions` is its
    stored object with `split_at` set. Its leader commits a SPLIT entry and records its
    index; the children replace it on a later pass (`finish_splits`)."""

    table_id: int
    partitions: tuple[Partition, ...]
    reason: ChangeReason


@dataclass(frozen=True)
class CannotSplit:
    """A partition is due a split that would not help (no store write: drivers log it
    and count it, once per partition)."""

    table_id: int
    partition_id: str
    obstacle: Obstacle


Action = ChangePartitions | PutState | RemoveTable | CannotSplit | MarkSplit


def is_settled(spec: TableSpec, state: TableState | None) -> bool:
    """True if nothing can be due: the driver skips reading partitions for it."""
    return (
        not spec.deleting
        and state is not None
        and state.table_id == spec.table_id
        and state.phase == "ACTIVE"
        and state.observed_generation >= spec.generation
    )


def decide(observed: Observed, nodes: Sequence[NodeRecord], settings: Settings) -> list[Action]:
    spec, state, partitions = observed.spec, observed.state, observed.partitions
    if spec.deleting:
        # Storage nodes drop a deleting table's data and clear their ready markers.
        return [RemoveTable(spec)] if not observed.ready else []
    if state is not None and state.table_id != spec.table_id:
        state = None
    if not partitions:
        if not nodes:
            return []  # nothing to place on yet; the next pass tries again
        placed = place_new_table(spec, nodes, settings, observed.others)
        used = {node for p in placed for node in p.replicas}
        exposed = exposed_partitions(used, observed.others, settings.shards.max_shared)
        return [
            ChangePartitions(spec.table_id, placed, exposed=exposed),
            _put(observed.state, spec, "CREATING", spec.generation),
        ]
    if state is None:  # the previous pass placed the partitions and stopped there
        return [_put(observed.state, spec, "CREATING", spec.generation)]
    serving = all_ready(partitions, observed.ready)
    if state.phase == "CREATING":
        return [_put(state, spec, "ACTIVE", state.observed_generation)] if serving else []
    splitting = finish_splits(spec.table_id, partitions, observed.stats)
    if splitting is not None:
        return splitting  # a group split in flight goes before anything else
    if state.observed_generation >= spec.generation:
        # Split only a layout that serves in full: a split just made is counted afresh
        # by its children's leaders before anything else is decided about it.
        return split_for_load(spec.table_id, partitions, observed.stats, settings) if serving else []
    layout, marks = throughput_plan(partitions, spec, settings.split_replicated)
    if marks:
        return [MarkSplit(spec.table_id, marks, "throughput_raised")]
    kept: list[Action] = (
        []
        if settings.split_replicated
        else [CannotSplit(spec.table_id, p.partition_id, "replicated") for p in held_whole(partitions, spec)]
    )
    if layout != partitions:
        new = {p.partition_id for p in layout}
        put = tuple(p for p in layout if p not in partitions)
        return [
            ChangePartitions(
                spec.table_id,
                put,
                tuple(p.partition_id for p in partitions if p.partition_id not in new),
                estimated_stats(partitions, put, observed.stats),
                "throughput_raised",
            )
        ]
    return [_put(state, spec, "ACTIVE", spec.generation), *kept] if serving else kept


def split_for_load(
    table_id: int, partitions: Sequence[Partition], stats: Mapping[str, PartitionStats], settings: Settings
) -> list[Action]:
    """Cut each partition past the split size at its data's median, and each partition
    hot for long enough at its load's (see `splits`), in place: the children keep the
    parent's replicas, which already hold their halves. One change per reason."""
    replicated_ok = settings.split_replicated
    by_size, blocked = size_cuts(partitions, stats, settings.split_size_bytes, replicated_ok)
    cut_for_size = frozenset(c.partition.partition_id for c in by_size)
    by_load, cooling = consumption_cuts(
        partitions, stats, settings.split_hot_seconds, cut_for_size, replicated_ok
    )
    actions: list[Action] = []
    reasons: tuple[tuple[list[Cut], ChangeReason], ...] = (
        (by_size, "size_exceeded"),
        (by_load, "consumption_hot"),
    )
    for cuts, reason in reasons:
        alone = [c for c in cuts if not is_replicated(c.partition)]
        grouped = tuple(replace(c.partition, split_at=c.at) for c in cuts if is_replicated(c.partition))
        if alone:
            actions.append(_change(table_id, alone, stats, reason))
        if grouped:
            actions.append(MarkSplit(table_id, grouped, reason))
    return actions + [CannotSplit(table_id, b.partition_id, b.obstacle) for b in _unique(blocked + cooling)]


def _change(
    table_id: int, cuts: Sequence[Cut], stats: Mapping[str, PartitionStats], reason: ChangeReason
) -> ChangePartitions:
    put: list[Partition] = []
    estimates: list[tuple[str, PartitionStats]] = []
    for cut in cuts:
        children = _cut(cut)
        put += children
        counted = stats.get(cut.partition.partition_id)
        if counted is not None:
            estimates += _shares(cut.partition.partition_id, children, counted, cut.left_share)
    return ChangePartitions(
        table_id, tuple(put), tuple(c.partition.partition_id for c in cuts), tuple(estimates), reason
    )


def _unique(blocked: Sequence[Blocked]) -> list[Blocked]:
    """One report per partition: its first obstacle (size before consumption)."""
    seen: set[str] = set()
    out = []
    for b in blocked:
        if b.partition_id not in seen:
            seen.add(b.partition_id)
            out.append(b)
    return out


def _put(current: TableState | None, spec: TableSpec, phase: TablePhase, generation: int) -> PutState:
    # The CAS is against whatever state record is stored, even an older incarnation's.
    revision = current.revision if current is not None else NO_REVISION
    return PutState(TableState(spec.name, spec.table_id, phase, generation, revision))


def initial_id(table_id: int, index: int) -> str:
    return f"{table_id:016x}-{index:04d}"


# A partition id is also a Kubernetes resource name (a replicated split's children are
# named by their ids there), which is at most 253 characters.
MAX_ID_LENGTH = 253
# Hex digits of the digest a too-long parent id is shortened to.
ID_DIGEST_HEX = 12


def child_ids(partition_id: str) -> tuple[str, str]:
    """Ids of a split's children: derived from the parent's, so a split decided twice
    (a driver restarted between its writes) names its children the same way. Each split
    adds two characters; a parent id that leaves no room for them keeps its first
    characters and a digest of the whole of it, so ids stay within MAX_ID_LENGTH however
    often a partition is split."""
    base = partition_id
    if len(base) + 2 > MAX_ID_LENGTH:
        digest = hashlib.blake2b(partition_id.encode(), digest_size=ID_DIGEST_HEX // 2).hexdigest()
        base = f"{partition_id[: MAX_ID_LENGTH - 3 - ID_DIGEST_HEX]}-{digest}"
    return f"{base}-0", f"{base}-1"


def all_ready(partitions: Sequence[Partition], ready: frozenset[tuple[str, str]]) -> bool:
    return all((p.partition_id, node) in ready for p in partitions for node in p.replicas)


def new_table_partitions(spec: TableSpec, settings: Settings) -> int:
    """Partitions of a new table: for its throughput, or for the rates its warm
    throughput prepares if that needs more (DynamoDB makes a table's partitions for its
    warm rate). The rates are `prepared_rates`, as a later raise counts them
    (`_throughput_width`), so a new table is never short of what an update would ask."""
    count = initial_partition_count(
        spec.read_capacity,
        spec.write_capacity,
        spec.billing_mode == "PAY_PER_REQUEST",
        settings.on_demand_partitions,
    )
    if any(spec.warm_throughput):
        rates = prepared_rates(
            spec.billing_mode, (spec.read_capacity, spec.write_capacity), spec.warm_throughput
        )
        count = max(count, initial_partition_count(*rates, on_demand=False))
    return count


def needs_others(
    spec: TableSpec, partitions: Sequence[Partition], nodes: Sequence[NodeRecord], settings: Settings
) -> bool:
    """Whether `decide` would place this table now on a shard narrower than the fleet,
    so the driver must give it the other tables' replica sets (`Observed.others`)."""
    return (
        not spec.deleting
        and not partitions
        and bool(nodes)
        and settings.shards.restricts(nodes, new_table_partitions(spec, settings))
    )


def place_new_table(
    spec: TableSpec,
    nodes: Sequence[NodeRecord],
    settings: Settings,
    others: Sequence[frozenset[str]] = (),
) -> tuple[Partition, ...]:
    count = new_table_partitions(spec, settings)
    # Seeded by the table id: a pass repeated after a crash places the same way.
    shard = shuffle_shard(spec.table_id, nodes, count, settings.shards, others)
    placement = settings.placement(count, shard, spec.table_id)
    return tuple(
        Partition(initial_id(spec.table_id, i), start, end, replicas, replicas[0])
        for i, ((start, end), replicas) in enumerate(zip(split_evenly(count), placement, strict=True))
    )


def finish_splits(
    table_id: int, partitions: Sequence[Partition], stats: Mapping[str, PartitionStats]
) -> list[Action] | None:
    """None if no replicated partition is marked for a split. Otherwise: nothing until
    a marked partition's leader has recorded its SPLIT entry's index, then the children
    of every such partition in its place, naming it and that index (a member starts a
    child's group only once it has applied the parent that far)."""
    marked = [p for p in partitions if p.split_at]
    if not marked:
        return None
    done = [p for p in marked if p.split_index]
    if not done:
        return []
    put: list[Partition] = []
    estimates: list[tuple[str, PartitionStats]] = []
    for p in done:
        children = group_children(p)
        put += children
        counted = stats.get(p.partition_id)
        if counted is not None:
            estimates += _shares(
                p.partition_id, children, counted, (p.split_at - p.start) / (p.end - p.start)
            )
    return [
        ChangePartitions(
            table_id, tuple(put), tuple(p.partition_id for p in done), tuple(estimates), "split_committed"
        )
    ]


def group_children(p: Partition) -> tuple[Partition, Partition]:
    """The children of a replicated partition split at its SPLIT entry's index: the
    parent's serving members, each starting from the parent's data at that index."""
    left_id, right_id = child_ids(p.partition_id)
    parent, index = p.partition_id, p.split_index
    return (
        Partition(left_id, p.start, p.split_at, p.replicas, p.leader, parent=parent, parent_index=index),
        Partition(right_id, p.split_at, p.end, p.replicas, p.leader, parent=parent, parent_index=index),
    )


def throughput_plan(
    partitions: tuple[Partition, ...], spec: TableSpec, split_replicated: bool
) -> tuple[tuple[Partition, ...], tuple[Partition, ...]]:
    """The layout after this round's split for throughput (single-replica partitions
    cut at once, as often as needed), and the replicated partitions to mark for a cut
    at their middle (one level per round: their children are cut again, if need be,
    once they replace them)."""
    layout = split_for_throughput(partitions, spec)
    if not split_replicated:
        return layout, ()
    return layout, tuple(replace(p, split_at=_middle(p)) for p in held_whole(partitions, spec))


def _middle(p: Partition) -> int:
    return p.start + (p.end - p.start) // 2


def split_for_throughput(partitions: tuple[Partition, ...], spec: TableSpec) -> tuple[Partition, ...]:
    """The layout after splitting for the spec's throughput (unchanged if enough).

    The layout counts as `level` partitions of the widest one's size; if the throughput
    needs more, every partition wider than the target size splits at its midpoint, as
    often as needed. An even layout thus doubles as in DynamoDB's worked example (4 ->
    8 at 6000 WCU), and a round that a restarted driver left half done is finished the
    same way. The children keep the parent's replicas, so each already holds its half
    of the data and no item moves; a decrease never merges.

    A replicated partition is kept whole (see `splits`: its children would start fresh
    replication groups from whatever each replica had applied), so the table reaches
    its new throughput with fewer partitions than DynamoDB would have.
    """
    limit = _throughput_width(partitions, spec)
    if limit is None:
        return partitions
    layout: list[Partition] = []
    pending = sorted(partitions, key=lambda p: p.start, reverse=True)
    while pending:
        p = pending.pop()
        if p.end - p.start > limit and not is_replicated(p):
            left, right = _halves(p)
            pending += [right, left]
        else:
            layout.append(p)
    return tuple(layout)


def held_whole(partitions: Sequence[Partition], spec: TableSpec) -> list[Partition]:
    """The replicated partitions a throughput split keeps whole though they are wider
    than its target (reported as `replicated`)."""
    limit = _throughput_width(partitions, spec)
    if limit is None:
        return []
    return [p for p in partitions if is_replicated(p) and p.end - p.start > limit]


def _throughput_width(partitions: Sequence[Partition], spec: TableSpec) -> int | None:
    """The widest partition the spec's throughput (provisioned or warm) allows, None if
    the layout is enough."""
    rates = prepared_rates(spec.billing_mode, (spec.read_capacity, spec.write_capacity), spec.warm_throughput)
    if not any(rates):
        return None  # on demand, no warm throughput asked: the layout follows the load
    widest = max(p.end - p.start for p in partitions)
    # Nearest, not floor: an even layout's widest range is a unit above HASH_SPACE/n.
    level = max(1, (HASH_SPACE + widest // 2) // widest)
    target = partition_count_after_update(level, *rates)
    if target == level:
        return None
    return -(-HASH_SPACE // target)  # the widest partition of an even layout of `target`


def estimated_stats(
    parents: Sequence[Partition], children: Sequence[Partition], stats: Mapping[str, PartitionStats]
) -> tuple[tuple[str, PartitionStats], ...]:
    """Each child's share of its parent's last count, by the share of the hash range
    (keys hash uniformly); children of a parent never counted get nothing."""
    out = []
    for child in children:
        parent = next((p for p in parents if p.start <= child.start and child.end <= p.end), None)
        counted = stats.get(parent.partition_id) if parent is not None else None
        if parent is None or counted is None:
            continue
        width, share = parent.end - parent.start, child.end - child.start
        out.append(
            (
                child.partition_id,
                PartitionStats(
                    counted.item_count * share // width,
                    counted.size_bytes * share // width,
                    counted.measured_at,
                    estimated=True,
                    parent=split_parent(parent.partition_id, counted),
                ),
            )
        )
    return tuple(out)


def split_parent(partition_id: str, counted: PartitionStats) -> SplitParent:
    """What a split child's estimate started from: the parent's count, or, when that
    was itself an estimate, the count it started from (the family's last real count)."""
    if counted.estimated and counted.parent is not None:
        return counted.parent
    return SplitParent(partition_id, counted.item_count, counted.size_bytes)


def _cut(cut: Cut) -> tuple[Partition, Partition]:
    p = cut.partition
    left_id, right_id = child_ids(p.partition_id)
    return (
        Partition(left_id, p.start, cut.at, p.replicas, p.leader),
        Partition(right_id, cut.at, p.end, p.replicas, p.leader),
    )


def _shares(
    parent_id: str, children: tuple[Partition, Partition], counted: PartitionStats, left_share: float
) -> list[tuple[str, PartitionStats]]:
    """The children's estimated figures: `left_share` of the parent's on the left."""
    left_items = round(counted.item_count * left_share)
    left_bytes = round(counted.size_bytes * left_share)
    base = replace(
        counted,
        split_hash=None,
        single_key=False,
        estimated=True,
        hot_seconds=0.0,
        hot_split_hash=None,
        hot_single_key=False,
        parent=split_parent(parent_id, counted),
    )
    return [
        (children[0].partition_id, replace(base, item_count=left_items, size_bytes=left_bytes)),
        (
            children[1].partition_id,
            replace(
                base, item_count=counted.item_count - left_items, size_bytes=counted.size_bytes - left_bytes
            ),
        ),
    ]


def _halves(p: Partition) -> tuple[Partition, Partition]:
    middle = p.start + (p.end - p.start) // 2
    left_id, right_id = child_ids(p.partition_id)
    return (
        Partition(left_id, p.start, middle, p.replicas, p.leader),
        Partition(right_id, middle, p.end, p.replicas, p.leader),
    )
