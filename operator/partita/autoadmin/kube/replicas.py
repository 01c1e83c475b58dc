"""How the operator tells storage nodes which replicas to host, and hears back.

The Partition handler depends only on the `ReplicaDirector` interface; the operator
runs `GrpcReplicaDirector` (grpc_director.py), which calls the storage nodes' admin
gRPC (HostReplica, DropReplica, Report).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from partita.autoadmin.kube.decisions import Member, MemberState
from partita.control.model import TableSpec


@dataclass(frozen=True)
class PartitionRef:
    namespace: str
    name: str  # the Partition resource (unique per namespace)
    table: str  # the Table resource
    start: int
    last: int
    # The Table's spec (ids, keys, throughput) the storage nodes need; None when the
    # Table resource is not found (a node cannot host a replica without it).
    table_spec: TableSpec | None = None
    replication_factor: int = 3
    # A replicated partition marked for a split at this key hash (0: none), and a split
    # child's parent and the index of the parent's SPLIT entry (the Partition's spec).
    split_at: int = 0
    parent: str = ""
    parent_index: int = 0


@dataclass(frozen=True)
class ReplicaReport:
    state: MemberState
    lag: int = 0


@dataclass(frozen=True)
class PartitionReport:
    """What the members say: each replica's state, the leader, the partition's figures."""

    replicas: Mapping[str, ReplicaReport]
    leader: str | None = None
    item_count: int = 0
    size_bytes: int = 0
    # Where a split for size would cut (the leader's size-weighted median key hash),
    # and whether one key hash holds every item; see storage/table_stats.py.
    split_hash: int | None = None
    single_key: bool = False
    # Its heat, as the leader measures it on the data path (storage/heat.py): how long it
    # has consumed near its allocation, where a split for consumption would cut, and
    # whether one key carries the load. Split for consumption (autoadmin/splits.py).
    hot_seconds: float = 0.0
    hot_split_hash: int | None = None
    hot_single_key: bool = False
    # The leader's term and commit index (0 while no group runs or none is elected).
    term: int = 0
    commit_index: int = 0


class ReplicaDirector(Protocol):
    async def host(self, partition: PartitionRef, members: Sequence[Member]) -> PartitionReport:
        """Ask each member to host a replica of `partition` (idempotent) and report."""
        ...

    async def drop(self, partition: PartitionRef, members: Sequence[Member]) -> bool:
        """Ask each member to drop its replica and data; True once all have."""
        ...

    async def published_members(self, partition: PartitionRef) -> tuple[Member, ...] | None:
        """The members the partition's replication group leader published (repair:
        docs/kubernetes.md), or None while it has published none."""
        ...

    async def published_split(self, partition: PartitionRef) -> tuple[int, int] | None:
        """(cut, index) of the SPLIT entry the group's leader applied and published, or
        None while it has published none."""
        ...

    async def forget_members(self, partition: PartitionRef) -> None:
        """Delete what the group's leader published (the partition is being dropped:
        nodes follow a published membership, so it must go before the replicas)."""
        ...
