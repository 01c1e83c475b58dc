"""The migration checks against the control store, for both drivers: the local
autoadmin and the Kubernetes operator. A check reads the storage nodes' load reports
and the moves under way (two range reads), and, only when a node is hot or a move is
under way, the members of the partitions concerned (`members_of`: the partition
objects locally, Partition resources on Kubernetes), and when a node is hot every
table's placement (`placements_of`, for the shuffle-shard bound); it decides with `migration.py` and
writes what it decided. The storage nodes, which report the loads and carry the moves
out, are the same on both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from partita.autoadmin import metrics
from partita.autoadmin.migration import (
    Fleet,
    MigrationPlan,
    MigrationPolicy,
    PartitionKey,
    fresh_loads,
    hot_nodes,
    plan_moves,
)
from partita.control.model import NodeLoad, NodeRecord, ReplicaMove

log = logging.getLogger(__name__)

# The members of every partition of the given tables, by (table id, partition id).
MembersOf = Callable[[frozenset[int]], Awaitable[Mapping[PartitionKey, frozenset[str]]]]
# Every table's partitions' replica sets, by table id.
PlacementsOf = Callable[[], Awaitable[Mapping[int, tuple[frozenset[str], ...]]]]


async def no_placements() -> Mapping[int, tuple[frozenset[str], ...]]:
    return {}


class MigrationStore(Protocol):
    async def list_node_loads(self) -> list[NodeLoad]: ...
    async def list_moves(self) -> list[ReplicaMove]: ...
    async def put_move(self, move: ReplicaMove) -> None: ...
    async def delete_move(self, table_id: int, partition_id: str) -> None: ...
    async def list_nodes(self) -> list[NodeRecord]: ...
    async def list_draining(self) -> frozenset[str]: ...


class MigrationDriver:
    def __init__(
        self,
        store: MigrationStore,
        policy: MigrationPolicy,
        members_of: MembersOf,
        wall_clock: Callable[[], float] = time.time,
        placements_of: PlacementsOf = no_placements,
    ) -> None:
        self.store = store
        self.policy = policy
        self.members_of = members_of
        # Read only when a node is hot: a move's target is weighed against the
        # shuffle-shard bound, which counts every other table's replicas.
        self.placements_of = placements_of
        # Load reports carry wall-clock times (their nodes' clocks).
        self.wall_clock = wall_clock
        # When a move of each node last ended: its reports until then are out of date.
        self._last_moved: dict[str, float] = {}

    async def migrate_once(self) -> MigrationPlan | None:
        """One check; what it decided, or None when there was nothing to decide."""
        now = self.wall_clock()
        loads = await self.store.list_node_loads()
        moves = await self.store.list_moves()
        hot = hot_nodes(fresh_loads(loads, now, self.policy.max_age), self.policy.above)
        metrics.HOT_NODES.set(len(hot))
        if not moves and (not hot or not self.policy.enabled):
            metrics.STUCK_NODES.set(0)
            return None
        tables = frozenset({m.table_id for m in moves} | {r.table_id for n in hot for r in n.replicas})
        fleet = Fleet(
            await self.store.list_nodes(),
            loads,
            await self.members_of(tables),
            moves,
            await self.store.list_draining(),
            now,
            self._last_moved,
            await self.placements_of() if hot and self.policy.enabled else {},
        )
        plan = plan_moves(fleet, self.policy)
        metrics.STUCK_NODES.set(len(plan.stuck))
        for move, reason in plan.end:
            await self.store.delete_move(move.table_id, move.partition_id)
            self._last_moved[move.source] = self._last_moved[move.target] = now
            metrics.ACTIONS.labels("end_move", reason).inc()
            log.info(
                "partition %s of table %d: move %s -> %s over (%s)",
                move.partition_id,
                move.table_id,
                move.source,
                move.target,
                reason,
            )
        for move in plan.start:
            await self.store.put_move(move)
            metrics.ACTIONS.labels("move_replica", move.reason).inc()
            log.info(
                "partition %s of table %d: replica on %s (hot) moves to %s",
                move.partition_id,
                move.table_id,
                move.source,
                move.target,
            )
        for node in plan.stuck:
            log.debug("storage node %s is hot and no node of its zone has room for a replica", node)
        return plan
