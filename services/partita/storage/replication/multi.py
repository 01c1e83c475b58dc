"""Many replication groups on one node: routes inputs to their group's replica and ticks
only the groups that are not quiesced, so thousands of idle groups cost nothing per tick.
"""

from __future__ import annotations

from .config import ReplicationConfig
from .core import Replica
from .types import GroupId, Message, NodeId, PersistedState, Ready


class MultiReplica:
    """The replicas one node hosts, keyed by group (partition) id."""

    def __init__(self, node: NodeId, config: ReplicationConfig) -> None:
        self.node = node
        self.config = config
        self.replicas: dict[GroupId, Replica] = {}
        self._active: set[GroupId] = set()  # groups that want ticks
        self._touched: set[GroupId] = set()  # groups that may have output for ready()

    def add_group(self, group: GroupId, persisted: PersistedState, now: float, seed: int) -> Replica:
        replica = Replica(group, self.node, persisted, self.config, now, seed)
        self.replicas[group] = replica
        self._active.add(group)
        return replica

    def remove_group(self, group: GroupId) -> None:
        self.replicas.pop(group, None)
        self._active.discard(group)
        self._touched.discard(group)

    @property
    def active_groups(self) -> int:
        return len(self._active)

    def tick(self, now: float) -> None:
        for group in list(self._active):
            self.replicas[group].tick(now)
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
            if replica is None:
                continue
            rd = replica.ready()
            if not rd.is_empty():
                out.append(rd)
        self._touched.clear()
        return out

    def _after(self, group: GroupId) -> None:
        self._touched.add(group)
        if self.replicas[group].quiesced:
            self._active.discard(group)
        else:
            self._active.add(group)
