"""A deterministic simulation of replication groups on a faulty network.

Everything runs from one seeded RNG and one event queue in simulated true time: nodes
(each a MultiReplica host with a disk that survives crashes and a register state
machine per group), a network that loses, delays, duplicates and reorders envelopes and
can be partitioned, clocks that drift within a bound, and clients that read, write and
compare-and-set registers through the groups. While it runs it checks election safety,
that no committed entry changes, and that at most one replica per group holds a lease
at any instant; at the end it checks that no committed entry was lost and hands the
client history to the linearizability checker.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from partita.storage.replication import (
    SENDABLE_BEFORE_PERSIST,
    Entry,
    EntryKind,
    Envelope,
    HardState,
    MembershipChangeRefused,
    Message,
    MsgKind,
    MultiReplica,
    NotLeader,
    PersistedState,
    Ready,
    ReplicationConfig,
    Role,
    SnapshotMeta,
    bootstrap_state,
    coalesce,
    expand,
)
from tests.sim.replication.linearizability import CAS, READ, WRITE, Operation, check_history, explain

OP_TIMEOUT = 1.0  # true seconds before a client gives up on an operation
# True seconds after everything healed before each group's liveness probe starts: a
# healed cluster elects (pre-vote, election timeout, restarted members' grace) within it.
PROBE_AFTER = 1.0
# True seconds a probe's strong read may take once its write committed: the leader that
# committed it confirms its leadership in a heartbeat round (a timed-out try and a
# second one fit in it).
READ_AFTER_WRITE = OP_TIMEOUT + 0.5


@dataclass
class SimConfig:
    nodes: int = 3
    log_replicas: int = 0  # extra members of every group with Role.LOG
    spares: int = 0  # extra nodes, not members at first; faults add and remove them
    groups: int = 2
    keys_per_group: int = 2
    clients: int = 3
    duration: float = 12.0  # true seconds of faults and load
    settle: float = 6.0  # true seconds after healing everything, before final checks
    tick: float = 0.05  # local seconds between ticks
    drift: float = 0.05  # each clock's rate is in [1 - drift, 1 + drift]
    drop: float = 0.03
    duplicate: float = 0.03
    delay: tuple[float, float] = (0.001, 0.02)
    slow: float = 0.05  # chance an envelope takes up to `slow_delay` (reordering)
    slow_delay: float = 0.4
    fault_every: tuple[float, float] = (0.8, 2.5)
    # Chance that a node whose round sends a leader's appends before its write (as the
    # real host does) crashes right after they left, before that write.
    crash_before_write: float = 0.02
    # Broken on purpose (a test shows the checks catch it): a node crashed mid-write
    # still resumes the terms it led.
    unsafe_resume_after_crash: bool = False
    corrupt: float = 0.01  # chance an envelope's first entry arrives with flipped bytes
    idle: float = 0.02  # chance a client pauses 1-3 s after an operation (groups quiesce)
    compact_every: int = 25  # applied entries between snapshots
    replication: ReplicationConfig = field(
        default_factory=lambda: ReplicationConfig(
            heartbeat_interval=0.1,
            election_timeout=0.5,
            lease_duration=0.5,
            max_clock_drift=0.05,
            quiesce_after=0.8,
        )
    )


@dataclass
class Disk:
    """One group's durable state on one node: what survives a crash."""

    hard_state: HardState
    snapshot: SnapshotMeta
    snapshot_data: bytes
    entries: list[Entry]


@dataclass
class PendingOp:
    client: int
    key: str
    kind: str
    value: Any
    call: float
    uid: str


class SimNode:
    def __init__(self, sim: Simulation, name: str) -> None:
        self.sim = sim
        self.name = name
        self.rate = 1.0
        self.offset = sim.rng.uniform(0, 1000)
        self.rate_since = 0.0
        self.alive = True
        self.disks: dict[str, Disk] = {}
        self.host: MultiReplica | None = None
        self.machines: dict[str, dict[str, Any]] = {}
        self.applied: dict[str, int] = {}
        self.snapshots: dict[str, tuple[SnapshotMeta, bytes]] = {}
        self.incoming_snapshots: dict[str, bytes] = {}
        self.pending_writes: dict[tuple[str, int], tuple[int, PendingOp]] = {}
        self.pending_reads: dict[int, PendingOp] = {}
        self.waiting_reads: list[tuple[str, int, int]] = []
        self.boots = 0
        self.checked: dict[str, int] = {}  # group -> commit index already compared
        # Whether the next boot may resume the terms it led, as after a clean stop (the
        # real host's `resume_leadership`): never after a crash that cut a write short.
        self.resume_leadership = True

    # clock: continuous and piecewise linear in true time
    def local(self, t: float) -> float:
        return self.offset + (t - self.rate_since) * self.rate

    def set_rate(self, rate: float, t: float) -> None:
        self.offset = self.local(t)
        self.rate_since = t
        self.rate = rate

    def boot(self, members: dict[str, Role]) -> None:
        self.boots += 1
        now = self.local(self.sim.now)
        self.host = MultiReplica(self.name, self.sim.config.replication)
        for group in self.sim.group_ids:
            disk = self.disks.get(group)
            if disk is None:
                state = bootstrap_state(members)
                disk = Disk(state.hard_state, state.snapshot, b"{}", [])
                self.disks[group] = disk
            if disk.hard_state.leader == self.name and not self.resume_leadership:
                # As the real node does at a start that follows no clean stop
                # (`Engine.forget_leadership`), on disk.
                disk.hard_state = replace(disk.hard_state, leader=None)
            persisted = PersistedState(disk.hard_state, disk.snapshot, list(disk.entries))
            self.host.add_group(group, persisted, now, seed=self.sim.rng.randrange(2**32))
            self.snapshots[group] = (disk.snapshot, disk.snapshot_data)
            self.machines[group] = json.loads(disk.snapshot_data)
            self.applied[group] = disk.snapshot.index
        self.checked.clear()
        self.pending_writes.clear()
        self.pending_reads.clear()
        self.waiting_reads.clear()
        self.incoming_snapshots.clear()

    def crash(self) -> None:
        self.sim.add_counters(self)
        self.alive = False
        self.host = None  # volatile state is gone; self.disks stays

    # ----------------------------------------------------------------- host loop

    def flush(self) -> None:
        assert self.host is not None
        readies = self.host.ready()
        # As the real host (ReplicaHost.pump): a leader's appends and heartbeats first,
        # then the write, then the rest; a crash may fall between.
        early = [m for rd in readies for m in rd.messages if m.kind in SENDABLE_BEFORE_PERSIST]
        for env in coalesce(early):
            self.sim.network_send(env)
        if early and self.sim.crash_before_write(self, readies):
            return
        envelopes: list[Message] = []
        for rd in readies:
            self._persist(rd)
            for m in rd.messages:
                if m.kind in SENDABLE_BEFORE_PERSIST:
                    continue
                if m.kind == MsgKind.SNAPSHOT:
                    meta, data = self.snapshots[rd.group]
                    assert m.snapshot == meta, "the core asked to send a snapshot the host does not hold"
                    m = replace(m, snapshot_data=data)
                envelopes.append(m)
            self._apply(rd)
        for env in coalesce(envelopes):
            self.sim.network_send(env)
        self.sim.after_flush(self)

    def _persist(self, rd: Ready) -> None:
        disk = self.disks[rd.group]
        if rd.snapshot is not None:
            data = self.incoming_snapshots.pop(rd.group)
            assert self.host is not None
            if self.host.replicas[rd.group].role == Role.LOG:
                data = b"{}"  # a log replica keeps the snapshot's position, not its data
            disk.snapshot, disk.snapshot_data, disk.entries = rd.snapshot, data, []
            self.snapshots[rd.group] = (rd.snapshot, data)
            self.machines[rd.group] = json.loads(data)
            self.applied[rd.group] = rd.snapshot.index
        if rd.entries:
            first = rd.entries[0].index
            disk.entries = [e for e in disk.entries if e.index < first] + list(rd.entries)
        if rd.hard_state is not None:
            disk.hard_state = rd.hard_state

    def _apply(self, rd: Ready) -> None:
        group = rd.group
        machine = self.machines[group]
        for entry in rd.committed:
            assert entry.index == self.applied[group] + 1, "committed entries must come in order"
            self.applied[group] = entry.index
            result: Any = None
            command = json.loads(entry.data) if entry.kind == EntryKind.NORMAL else None
            if command is not None:
                key = command["key"]
                if command["kind"] == WRITE:
                    machine[key] = command["value"]
                else:
                    expected, new = command["value"]
                    result = machine.get(key) == expected
                    if result:
                        machine[key] = new
            pending = self.pending_writes.pop((group, entry.index), None)
            if pending is not None:
                term, op = pending
                if entry.term == term and command is not None and command["uid"] == op.uid:
                    self.sim.complete(op, result)
                else:
                    self.sim.fail(op)  # another entry took its place: it never happened
        self._maybe_snapshot(group)
        for refused in rd.refused_reads:
            op = self.pending_reads.pop(refused.request_id, None)
            if op is not None:
                self.sim.fail(op, hint=refused.leader)
        for read in rd.reads:
            self.waiting_reads.append((group, read.request_id, read.index))
        still = []
        for group_, rid, index in self.waiting_reads:
            op = self.pending_reads.get(rid)
            if op is None:
                continue
            if self.applied[group_] >= index:
                del self.pending_reads[rid]
                self.sim.complete(op, self.machines[group_].get(op.key))
            else:
                still.append((group_, rid, index))
        self.waiting_reads = still

    def _maybe_snapshot(self, group: str) -> None:
        assert self.host is not None
        replica = self.host.replicas[group]
        if replica.role != Role.FULL:
            if replica.commit - replica.log.base.index >= self.sim.config.compact_every:
                replica.compact(min(replica.applied, replica.commit))
                self._store_snapshot(group, replica.log.base, b"{}")
            return
        applied = self.applied[group]
        if applied - replica.log.base.index >= self.sim.config.compact_every and applied <= replica.applied:
            replica.compact(applied)
            self._store_snapshot(group, replica.log.base, json.dumps(self.machines[group]).encode())

    def _store_snapshot(self, group: str, meta: SnapshotMeta, data: bytes) -> None:
        disk = self.disks[group]
        disk.snapshot, disk.snapshot_data = meta, data
        disk.entries = [e for e in disk.entries if e.index > meta.index]
        self.snapshots[group] = (meta, data)


class Simulation:
    def __init__(self, seed: int, config: SimConfig | None = None) -> None:
        self.seed = seed
        self.config = config or SimConfig()
        self.rng = random.Random(seed)
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self.group_ids = [f"g{i}" for i in range(self.config.groups)]
        full = [f"n{i}" for i in range(self.config.nodes)]
        logs = [f"l{i}" for i in range(self.config.log_replicas)]
        self.members: dict[str, Role] = {n: Role.FULL for n in full} | {n: Role.LOG for n in logs}
        spares = [f"s{i}" for i in range(self.config.spares)]
        self.nodes = {name: SimNode(self, name) for name in [*self.members, *spares]}
        for node in self.nodes.values():
            node.set_rate(self.rng.uniform(1 - self.config.drift, 1 + self.config.drift), 0.0)
            node.boot(self.members)
        self.cut: set[frozenset[str]] = set()
        self.history: list[Operation] = []
        self.violations: list[str] = []
        self.committed: dict[str, dict[int, tuple[int, int]]] = {g: {} for g in self.group_ids}
        self.leaders: dict[tuple[str, int], str] = {}
        self.lease_reads = 0
        self.elections_avoided = 0
        self._op_seq = 0
        self._read_seq = 0
        self._client_ops: dict[int, PendingOp | None] = {}
        # Liveness probes: one client per group writing its probe key once everything
        # healed until a write commits, then reading it strongly until a read is served
        # (`probed_writes`, `probed` say when each group's did).
        self._probes: dict[int, str] = {}
        self.probed_writes: dict[str, float] = {}
        self.probed: dict[str, float] = {}
        self._client_guess: dict[int, str] = {}
        self.client_targets: dict[int, list[str]] = {}
        self.envelopes_sent = 0
        self.messages_sent = 0
        self.membership_changes = 0
        self.crashes_before_write = 0
        self._spares_used: dict[str, set[str]] = {}
        # Scripted runs (no random load or faults) until run() says otherwise.
        self._load_until = 0.0
        self._faults_until = 0.0
        self.totals: dict[str, int] = {}
        for node in self.nodes.values():
            self._schedule_tick(node, first=True)

    # ------------------------------------------------------------------ events

    def at(self, t: float, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (t, self._seq, action))

    def run_until(self, t_end: float, max_events: int = 2_000_000) -> None:
        for _ in range(max_events):
            if not self._queue or self._queue[0][0] > t_end:
                self.now = t_end
                return
            t, _, action = heapq.heappop(self._queue)
            self.now = t
            action()
        raise RuntimeError(f"seed {self.seed}: more than {max_events} events before t={t_end}")

    def _schedule_tick(self, node: SimNode, first: bool = False) -> None:
        interval = self.config.tick / node.rate
        delay = self.rng.uniform(0, interval) if first else interval
        self.at(self.now + delay, lambda: self._tick(node))

    def _tick(self, node: SimNode) -> None:
        if node.alive and node.host is not None:
            node.host.tick(node.local(self.now))
            node.flush()
        self._schedule_tick(node)

    # ------------------------------------------------------------------ network

    def reachable(self, a: str, b: str) -> bool:
        return frozenset((a, b)) not in self.cut

    def network_send(self, env: Envelope) -> None:
        self.envelopes_sent += 1
        self.messages_sent += len(env)
        if not self.reachable(env.src, env.dst) or self.rng.random() < self.config.drop:
            return
        if env.messages and self.rng.random() < self.config.corrupt:
            env = _corrupt(env)
        copies = 2 if self.rng.random() < self.config.duplicate else 1
        for _ in range(copies):
            delay = self.rng.uniform(*self.config.delay)
            if self.rng.random() < self.config.slow:
                delay += self.rng.uniform(0, self.config.slow_delay)
            self.at(self.now + delay, lambda env=env: self._deliver(env))

    def _deliver(self, env: Envelope) -> None:
        node = self.nodes[env.dst]
        if not node.alive or node.host is None or not self.reachable(env.src, env.dst):
            return
        now = node.local(self.now)
        for m in expand(env):
            if m.kind == MsgKind.SNAPSHOT:
                node.incoming_snapshots[m.group] = m.snapshot_data
            node.host.step(m, now)
        node.flush()

    def partition(self, side: set[str]) -> None:
        """Cut every link between `side` and the other nodes."""
        for a in side:
            for b in self.nodes:
                if b not in side:
                    self.cut.add(frozenset((a, b)))
        self._report_liveness()

    def heal(self) -> None:
        self.cut.clear()
        self._report_liveness()

    def crash(self, name: str, mid_write: bool = False) -> None:
        """Between two of its rounds a node may come back as after a clean stop (its
        every write done) or not; after a crash that cut a write short, never."""
        node = self.nodes[name]
        if not node.alive:
            return
        unsafe = self.config.unsafe_resume_after_crash
        node.resume_leadership = (unsafe or not mid_write) and self.rng.random() < 0.5
        node.crash()
        self._report_liveness()

    def crash_before_write(self, node: SimNode, readies: list[Ready]) -> bool:
        """Sometimes, while faults run, crash `node` between its early messages and the
        write of its round (when it has entries or a hard state to lose); it restarts
        later."""
        if (
            self.now >= self._faults_until
            or not any(rd.entries or rd.hard_state for rd in readies)
            or self.rng.random() >= self.config.crash_before_write
        ):
            return False
        self.crashes_before_write += 1
        self.crash(node.name, mid_write=True)
        self.at(self.now + self.rng.uniform(0.3, 2.5), lambda: self.restart(node.name))
        return True

    def restart(self, name: str) -> None:
        node = self.nodes[name]
        if node.alive:
            return
        node.alive = True
        node.boot(self.members)
        self._report_liveness()
        node.flush()

    def _report_liveness(self) -> None:
        """Node liveness as a node sees it: alive and reachable (a liveness record
        renewed over the same network would tell the same, a little later)."""
        for node in self.nodes.values():
            if not node.alive or node.host is None:
                continue
            now = node.local(self.now)
            for other in self.nodes.values():
                if other is not node:
                    node.host.node_liveness(
                        other.name, other.alive and self.reachable(node.name, other.name), now
                    )
            node.flush()

    # ------------------------------------------------------------------ invariants

    def after_flush(self, node: SimNode) -> None:
        assert node.host is not None
        self._check_leases(node)
        for group, replica in node.host.replicas.items():
            if replica.is_leader:
                holder = self.leaders.setdefault((group, replica.term), node.name)
                if holder != node.name:
                    self.violations.append(f"t={self.now:.3f} two leaders in {group} term {replica.term}")
            record = self.committed[group]
            # Each committed index is compared once per boot of each node.
            lo = max(replica.log.base.index + 1, node.checked.get(group, 0) + 1)
            node.checked[group] = max(node.checked.get(group, 0), replica.commit)
            for index in range(lo, replica.commit + 1):
                entry = replica.log.entry(index)
                seen = record.setdefault(index, (entry.term, entry.crc))
                if seen != (entry.term, entry.crc):
                    self.violations.append(
                        f"t={self.now:.3f} committed entry {group}[{index}] changed on {node.name}: {seen} -> "
                        f"{(entry.term, entry.crc)}"
                    )

    def add_counters(self, node: SimNode) -> None:
        """Fold a node's replica counters into the run's totals (before they are lost)."""
        if node.host is None:
            return
        for replica in node.host.replicas.values():
            for f in fields(replica.counters):
                self.totals[f.name] = self.totals.get(f.name, 0) + getattr(replica.counters, f.name)

    def _check_leases(self, node: SimNode) -> None:
        """A lease only starts while its node handles an input and only shrinks as time
        passes, so checking each node's new leases against all others when it has handled
        an input sees every instant two leases overlap."""
        assert node.host is not None
        local = node.local(self.now)
        for group, replica in node.host.replicas.items():
            if not replica.has_lease(local):
                continue
            holders = [
                n.name
                for n in self.nodes.values()
                if n.alive and n.host is not None and n.host.replicas[group].has_lease(n.local(self.now))
            ]
            if len(holders) > 1:
                self.violations.append(f"t={self.now:.3f} {group}: leases held at once by {holders}")

    # ------------------------------------------------------------------ clients

    def _client_nodes(self) -> list[str]:
        """Where clients send requests: every node but the fixed log replicas (spares may
        become full members, and leaders)."""
        return [n for n in self.nodes if self.members.get(n, Role.FULL) == Role.FULL]

    def key_group(self, key: str) -> str:
        return key.split("/")[0]

    def start_clients(self) -> None:
        for client in range(self.config.clients):
            self._client_guess[client] = self.rng.choice(self._client_nodes())
            self.at(self.now + self.rng.uniform(0, 0.05), lambda c=client: self._next_op(c))

    def _next_op(self, client: int) -> None:
        probed_group = self._probes.get(client)
        if probed_group is not None:
            self._probe(client, probed_group)
            return
        if self.now >= self._load_until:
            return
        group = self.rng.choice(self.group_ids)
        key = f"{group}/k{self.rng.randrange(self.config.keys_per_group)}"
        self._op_seq += 1
        uid = f"{client}-{self._op_seq}"
        choice = self.rng.random()
        if choice < 0.4:
            op = PendingOp(client, key, READ, None, self.now, uid)
        elif choice < 0.75:
            op = PendingOp(client, key, WRITE, self._op_seq, self.now, uid)
        else:
            op = PendingOp(
                client,
                key,
                CAS,
                (self.rng.choice([None, *range(self._op_seq)[-5:]]), self._op_seq),
                self.now,
                uid,
            )
        self.submit(op, self._target(client))

    def start_probes(self) -> None:
        for i, group in enumerate(self.group_ids):
            client = self.config.clients + i
            self._probes[client] = group
            self._client_guess[client] = self.rng.choice(self._client_nodes())
            self.at(self.now, lambda c=client, g=group: self._probe(c, g))

    def _probe(self, client: int, group: str) -> None:
        if group in self.probed:
            return
        self._op_seq += 1
        kind, value = (READ, None) if group in self.probed_writes else (WRITE, self._op_seq)
        op = PendingOp(client, f"{group}/probe", kind, value, self.now, f"{client}-{self._op_seq}")
        self.submit(op, self._target(client))

    def _target(self, client: int) -> str:
        targets = self.client_targets.get(client)
        if targets:
            return self.rng.choice(targets)
        return self._client_guess[client]

    def client_busy(self, client: int) -> bool:
        """Whether `client` waits for an operation (clients have one at a time)."""
        return self._client_ops.get(client) is not None

    def submit(self, op: PendingOp, target: str) -> None:
        self._client_ops[op.client] = op
        node = self.nodes[target]
        if not node.alive or node.host is None:
            self.fail(op, hint=None)
            return
        group = self.key_group(op.key)
        now = node.local(self.now)
        try:
            if op.kind == READ:
                self._read_seq += 1
                node.pending_reads[self._read_seq] = op
                node.host.read(group, self._read_seq, now)
            else:
                command = {"key": op.key, "kind": op.kind, "value": op.value, "uid": op.uid}
                term, index = node.host.propose(group, json.dumps(command).encode(), now)
                node.pending_writes[(group, index)] = (term, op)
        except NotLeader as e:
            self.fail(op, hint=e.leader)
            node.flush()
            return
        node.flush()
        self.at(self.now + OP_TIMEOUT, lambda: self._timeout(op))

    def complete(self, op: PendingOp, result: Any) -> None:
        if self._client_ops.get(op.client) is not op:
            return  # already timed out
        self._client_ops[op.client] = None
        output = result if op.kind in (READ, CAS) else None
        self.history.append(Operation(op.client, op.key, op.kind, op.value, output, op.call, self.now))
        probed_group = self._probes.get(op.client)
        if probed_group is not None:
            done = self.probed if op.kind == READ else self.probed_writes
            done.setdefault(probed_group, self.now)
        self._after_op(op.client)

    def fail(self, op: PendingOp, hint: str | None = None) -> None:
        """A definite failure: the operation had no effect, so it stays out of the history."""
        if self._client_ops.get(op.client) is not op:
            return
        self._client_ops[op.client] = None
        full = self._client_nodes()
        self._client_guess[op.client] = hint if hint in full else self.rng.choice(full)
        self._after_op(op.client, backoff=0.02)

    def _timeout(self, op: PendingOp) -> None:
        if self._client_ops.get(op.client) is not op:
            return
        self._client_ops[op.client] = None
        if op.kind != READ:
            # The outcome is unknown: it may take effect at any time, or never.
            self.history.append(Operation(op.client, op.key, op.kind, op.value, None, op.call, math.inf))
        full = self._client_nodes()
        self._client_guess[op.client] = self.rng.choice(full)
        self._after_op(op.client)

    def _after_op(self, client: int, backoff: float = 0.0) -> None:
        if client in self._probes:  # a probe tries again at once, never idles
            self.at(self.now + backoff + self.rng.uniform(0, 0.02), lambda: self._next_op(client))
            return
        pause = self.rng.uniform(1.0, 3.0) if self.rng.random() < self.config.idle else 0.0
        self.at(self.now + backoff + pause + self.rng.uniform(0, 0.02), lambda: self._next_op(client))

    # ------------------------------------------------------------------ chaos

    def _fault(self) -> None:
        if self.now >= self._faults_until:
            return
        names = list(self.nodes)
        roll = self.rng.random()
        # Until one membership change went through, every fault is one: a run with
        # spares must exercise them whatever its random draws.
        if self.config.spares and (self.membership_changes == 0 or self.rng.random() < 0.4):
            self._change_membership()
        elif roll < 0.35:
            victim = self.rng.choice(names)
            self.crash(victim)
            self.at(self.now + self.rng.uniform(0.3, 2.5), lambda: self.restart(victim))
        elif roll < 0.7:
            side = set(self.rng.sample(names, self.rng.randint(1, len(names) // 2)))
            self.partition(side)
            self.at(self.now + self.rng.uniform(0.5, 3.0), self.heal)
        elif roll < 0.85:
            # One broken link while both ends still reach the others: the gray failure of
            # seed 000 section 6.2.
            a, b = self.rng.sample(names, 2)
            self.cut.add(frozenset((a, b)))
            self.at(
                self.now + self.rng.uniform(0.5, 2.0), lambda a=a, b=b: self.cut.discard(frozenset((a, b)))
            )
        else:
            node = self.nodes[self.rng.choice(names)]
            if node.alive and node.host is not None:
                for group in node.host.leading():
                    members = node.host.replicas[group].members
                    targets = [p for p, role in members.items() if role == Role.FULL and p != node.name]
                    with contextlib.suppress(NotLeader, ValueError):
                        node.host.transfer_leadership(group, self.rng.choice(targets), node.local(self.now))
                node.flush()
        self.at(self.now + self.rng.uniform(*self.config.fault_every), self._fault)

    def _change_membership(self) -> None:
        """On some group's leader: add an unused spare (as a log or a full replica) or
        remove the one that is a member. A removed replica is never added back under the
        same id (its data is stale: a host destroys it and a new replica gets a new id)."""
        group = self.rng.choice(self.group_ids)
        for node in self.nodes.values():
            if node.host is None or not node.host.replicas[group].is_leader:
                continue
            members = dict(node.host.replicas[group].members)
            used = self._spares_used.setdefault(group, set())
            current = [n for n in members if n.startswith("s")]
            unused = [f"s{i}" for i in range(self.config.spares) if f"s{i}" not in used]
            if current:
                del members[current[0]]
            elif unused:
                members[unused[0]] = self.rng.choice([Role.LOG, Role.FULL])
            else:
                return
            with contextlib.suppress(NotLeader, MembershipChangeRefused):
                node.host.propose_membership(group, members, node.local(self.now))
                used.update(n for n in members if n.startswith("s"))
                self.membership_changes += 1
            node.flush()
            return

    def run(self) -> SimResult:
        cfg = self.config
        self._load_until = cfg.duration + cfg.settle  # load runs on while the cluster settles
        self._faults_until = cfg.duration
        self.start_clients()
        self.at(self.rng.uniform(*cfg.fault_every), self._fault)
        self.run_until(cfg.duration)
        # Heal everything, let the cluster settle, then prove nothing committed was lost.
        self.heal()
        for name, node in self.nodes.items():
            if not node.alive:
                self.restart(name)
        self.at(self.now + PROBE_AFTER, self.start_probes)
        self.run_until(cfg.duration + cfg.settle + OP_TIMEOUT + 0.5)
        self._check_nothing_lost()
        self._check_live()
        for node in self.nodes.values():
            self.add_counters(node)
        bad_keys = check_history(self.history)
        for key in bad_keys:
            key_ops = [op for op in self.history if op.key == key]
            self.violations.append(f"history of {key} is not linearizable: {explain(key_ops)}")
        return SimResult(self.seed, list(self.violations), len(self.history), self)

    def _check_live(self) -> None:
        """Every group commits a write and then serves a strongly consistent read once
        the cluster healed: no election stalls, no member deferring to one that never
        takes over, no leader that cannot confirm its leadership (probes retry through
        NOT_LEADER hints and timeouts until the run ends)."""
        window = self.now - self.config.duration - PROBE_AFTER
        for group in self.group_ids:
            if group not in self.probed_writes:
                self.violations.append(
                    f"{group}: no write committed in the {window:.1f} s after everything healed"
                )
            elif group not in self.probed:
                self.violations.append(
                    f"{group}: no read served in the {window:.1f} s after everything healed"
                )
            elif self.probed[group] - self.probed_writes[group] > READ_AFTER_WRITE:
                waited = self.probed[group] - self.probed_writes[group]
                self.violations.append(
                    f"{group}: a strong read waited {waited:.2f} s after a write committed"
                )

    def _check_nothing_lost(self) -> None:
        for group in self.group_ids:
            record = self.committed[group]
            if not record:
                continue
            top = max(record)
            holders = [
                n for n in self.nodes.values() if n.host is not None and n.host.replicas[group].commit >= top
            ]
            if not holders:
                self.violations.append(f"{group}: no replica has commit index {top} any more")
            for node in holders:
                assert node.host is not None
                log = node.host.replicas[group].log
                for index in range(log.first_index, min(top, log.last_index) + 1):
                    entry = log.entry(index)
                    if record[index] != (entry.term, entry.crc):
                        self.violations.append(
                            f"{group}[{index}] on {node.name} differs from what was committed"
                        )
            # Full replicas that applied the same prefix hold the same registers.
            full = [
                n
                for n in self.nodes.values()
                if n.host is not None
                and n.host.replicas[group].role == Role.FULL
                and n.host.replicas[group].node in n.host.replicas[group].members
                and n.applied[group] == top
            ]
            states = {json.dumps(n.machines[group], sort_keys=True) for n in full}
            if len(states) > 1:
                self.violations.append(f"{group}: replicas at index {top} disagree on the registers")


def _corrupt(env: Envelope) -> Envelope:
    """Flip a byte of the first entry in the envelope, keeping its old checksum."""
    messages = list(env.messages)
    for i, m in enumerate(messages):
        if m.entries:
            first = m.entries[0]
            bad = replace(first, data=bytes([first.data[0] ^ 0xFF]) + first.data[1:] if first.data else b"x")
            messages[i] = replace(m, entries=(bad, *m.entries[1:]))
            break
    return replace(env, messages=tuple(messages))


@dataclass
class SimResult:
    seed: int
    violations: list[str]
    operations: int
    sim: Simulation

    def __str__(self) -> str:
        return f"seed {self.seed}: {self.operations} ops, violations: {self.violations[:5]}"
