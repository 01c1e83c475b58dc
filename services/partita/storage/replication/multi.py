"""Many replication groups on one node: routes inputs to their group's replica and ticks
a group only when its next deadline (heartbeat, election timeout) has come, so idle and
quiesced groups cost nothing per tick: no per-group timer fires every tick.
"""

from __future__ import annotations

import heapq
import math

from .config import ReplicationConfig
from .core import Replica
from .types import GroupId, Members, Message, NodeId, PersistedState, Ready


class MultiReplica:
    """The replicas one node hosts, keyed by group (partition) id."""

    def __init__(self, node: NodeId, config: ReplicationConfig) -> None:
        self.node = node
        self.config = config
        self.replicas: dict[GroupId, Replica] = {}
        self._active: set[GroupId] = set()  # groups that are not quiesced
        # Groups with output for ready(), in the order they got it (a dict, not a set:
        # the output order must not depend on string hashing, or simulations would not
        # replay).
        self._touched: dict[GroupId, None] = {}
        # Timer heap of (deadline, sequence, group); an entry whose deadline is no longer
        # the group's current one is stale and skipped when popped.
        self._timers: list[tuple[float, int, GroupId]] = []
        self._deadline: dict[GroupId, float] = {}
        self._sequence = 0
        # The host's event-loop lag as of its last tick (`Replica.tick`).
        self.loop_lag = 0.0

    def add_group(self, group: GroupId, persisted: PersistedState, now: float, seed: int) -> Replica:
        replica = Replica(group, self.node, persisted, self.config, now, seed)
        self.replicas[group] = replica
        self._after(group)
        return replica

    def remove_group(self, group: GroupId) -> None:
        self.replicas.pop(group, None)
        self._active.discard(group)
        self._touched.pop(group, None)
        self._deadline.pop(group, None)

    @property
    def active_groups(self) -> int:
        return len(self._active)

    def tick(self, now: float, loop_lag: float = 0.0) -> None:
        """Tick the groups whose deadline has come; `loop_lag` is how late the host's
        event loop has been running lately (it stretches election timeouts)."""
        self.loop_lag = loop_lag
        timers = self._timers
        while timers and timers[0][0] <= now:
            deadline, _, group = heapq.heappop(timers)
            if self._deadline.get(group) != deadline:
                continue  # stale: the group moved its deadline since
            del self._deadline[group]
            self.replicas[group].tick(now, loop_lag)
            self._after(group)

    def step(self, m: Message, now: float) -> None:
        replica = self.replicas.get(m.group)
        if replica is None:
            return  # not hosted here (yet, or any more): the sender retries or moves on
        replica.step(m, now)
        self._after(m.group)

    def propose(self, group: GroupId, data: bytes, now: float) -> tuple[int, int]:
        try:
            return self.replicas[group].propose(data, now)
        finally:
            self._after(group)

    def read(self, group: GroupId, request_id: int, now: float) -> None:
        self.replicas[group].read(request_id, now)
        self._after(group)

    def propose_membership(self, group: GroupId, members: Members, now: float) -> tuple[int, int]:
        try:
            return self.replicas[group].propose_membership(members, now)
        finally:
            self._after(group)

    def campaign(self, group: GroupId, now: float) -> None:
        self.replicas[group].campaign(now)
        self._after(group)

    def transfer_leadership(self, group: GroupId, target: NodeId, now: float) -> None:
        try:
            self.replicas[group].transfer_leadership(target, now)
        finally:
            self._after(group)

    def leading(self) -> list[GroupId]:
        """The groups this node leads (graceful shutdown hands each of them off)."""
        return [group for group, replica in self.replicas.items() if replica.is_leader]

    def node_liveness(self, node: NodeId, alive: bool, now: float) -> None:
        """Node liveness stands in for the heartbeats of quiesced groups."""
        for group, replica in self.replicas.items():
            if replica.leader == node and replica.leader_node_alive != alive:
                replica.set_leader_node_alive(alive, now)
                self._after(group)

    def ready(self) -> list[Ready]:
        out = []
        for group in self._touched:
            replica = self.replicas.get(group)
            if replica is None or not replica.has_ready():
                continue
            out.append(replica.ready())
        self._touched.clear()
        return out

    def _after(self, group: GroupId) -> None:
        replica = self.replicas[group]
        if replica.has_ready():
            self._touched[group] = None
        if replica.quiesced:
            self._active.discard(group)
        else:
            self._active.add(group)
        deadline = replica.next_deadline(self.loop_lag)
        if deadline != self._deadline.get(group) and deadline != math.inf:
            self._deadline[group] = deadline
            self._sequence += 1
            heapq.heappush(self._timers, (deadline, self._sequence, group))
        elif deadline == math.inf:
            self._deadline.pop(group, None)
