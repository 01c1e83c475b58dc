"""A tiny in-memory cluster for unit tests of the consensus core: instant, lossless
delivery unless a test cuts links or drops messages, a shared clock moved by hand, and a
disk per replica so restarts keep what was persisted."""

from __future__ import annotations

from dataclasses import dataclass, field

from partita.storage.replication import (
    Entry,
    EntryKind,
    Message,
    PersistedState,
    ReadRefused,
    ReadState,
    Replica,
    ReplicationConfig,
    Role,
    bootstrap_state,
)

CONFIG = ReplicationConfig(
    heartbeat_interval=0.1, election_timeout=1.0, lease_duration=1.0, max_clock_drift=0.05, quiesce_after=2.0
)


@dataclass
class Node:
    replica: Replica
    disk: PersistedState
    applied: list[Entry] = field(default_factory=list)
    reads: list[ReadState] = field(default_factory=list)
    refused: list[ReadRefused] = field(default_factory=list)
    snapshots: int = 0


class Cluster:
    def __init__(
        self, names: list[str], config: ReplicationConfig = CONFIG, members: dict[str, Role] | None = None
    ) -> None:
        self.config = config
        self.now = 0.0
        self.members = members or {n: Role.FULL for n in names}
        self.nodes: dict[str, Node] = {}
        for i, name in enumerate(names):
            disk = bootstrap_state(self.members)
            # Booted one lease ago, so the promise every replica makes at start is over.
            booted = self.now - config.lease_duration
            self.nodes[name] = Node(Replica("g", name, _copy(disk), config, booted, seed=i), disk)
        self.cut: set[frozenset[str]] = set()
        self.down: set[str] = set()
        self.sent: list[Message] = []  # every message ever handed to the network
        self.in_flight: list[Message] = []

    def __getitem__(self, name: str) -> Replica:
        return self.nodes[name].replica

    def leaders(self) -> list[str]:
        return [n for n, node in self.nodes.items() if n not in self.down and node.replica.is_leader]

    def isolate(self, name: str) -> None:
        for other in self.nodes:
            if other != name:
                self.cut.add(frozenset((name, other)))

    def heal(self) -> None:
        self.cut.clear()

    def flush(self) -> None:
        for name, node in self.nodes.items():
            if name in self.down:
                continue
            rd = node.replica.ready()
            if rd.snapshot is not None:
                node.disk.snapshot, node.disk.entries = rd.snapshot, []
                node.snapshots += 1
            if rd.entries:
                first = rd.entries[0].index
                node.disk.entries = [e for e in node.disk.entries if e.index < first] + rd.entries
            if rd.hard_state is not None:
                node.disk.hard_state = rd.hard_state
            self.sent.extend(rd.messages)
            self.in_flight.extend(rd.messages)
            node.applied.extend(rd.committed)
            node.reads.extend(rd.reads)
            node.refused.extend(rd.refused_reads)

    def deliver(self, max_rounds: int = 100, drop: set[str] | None = None) -> None:
        """Deliver until quiet. `drop`: message kinds (names) to lose on the way."""
        for _ in range(max_rounds):
            self.flush()
            if not self.in_flight:
                return
            batch, self.in_flight = self.in_flight, []
            for m in batch:
                if m.dst in self.down or frozenset((m.src, m.dst)) in self.cut:
                    continue
                if drop and m.kind.name in drop:
                    continue
                self.nodes[m.dst].replica.step(m, self.now)
        raise AssertionError("messages still flowing after max_rounds")

    def advance(self, seconds: float, step: float = 0.05) -> None:
        for _ in range(round(seconds / step)):
            self.now += step
            for name, node in self.nodes.items():
                if name not in self.down:
                    node.replica.tick(self.now)
            self.deliver()

    def elect(self, name: str) -> None:
        """Make `name` time out first and run its election to the end."""
        self[name].election_deadline = self.now
        self[name].tick(self.now)
        self.deliver()
        assert self[name].is_leader, f"{name} was not elected"

    def crash(self, name: str) -> None:
        self.flush()
        self.down.add(name)

    def restart(self, name: str) -> None:
        node = self.nodes[name]
        node.replica = Replica("g", name, _copy(node.disk), self.config, self.now, seed=99)
        node.applied = []
        self.down.discard(name)

    def propose(self, leader: str, data: bytes) -> tuple[int, int]:
        result = self[leader].propose(data, self.now)
        self.deliver()
        return result

    def applied_data(self, name: str) -> list[bytes]:
        return [e.data for e in self.nodes[name].applied if e.kind == EntryKind.NORMAL]


def _copy(state: PersistedState) -> PersistedState:
    return PersistedState(state.hard_state, state.snapshot, list(state.entries))
