"""The consensus core of one replication group (one partition): Raft-style terms, log
matching and majority commit, with pre-vote, leader leases, a gray-failure check,
single-step membership changes with log-only members, snapshots, leadership transfer
and quiescence.

Sans-I/O in the style of etcd-io/raft's RawNode: the host calls `step(message, now)`,
`tick(now)`, `propose(...)`, `read(...)`, then takes `ready()` and does the I/O it
describes. `now` is the host's monotonic clock in seconds; nothing here reads a clock,
sleeps, or touches a socket or a file.

Lease safety, in one paragraph. A follower that hears the leader at local time t
promises not to vote (or pre-vote) for anyone else, itself included, until
t + lease_duration on its own clock, and a restarted replica makes the same promise
from its restart (it cannot remember what it promised before). Every message the leader sends carries a heartbeat
round; the leader's lease starts at the time it *sent* the newest round a majority has
acknowledged, and lasts lease_duration * (1 - drift) / (1 + drift) of its own clock: in
true time that ends before the promise of any follower in that majority ends. A new
leader needs votes from a majority, which shares a member with the old lease's majority,
so it is elected only after the old lease is over: at most one lease at any instant.
"""

from __future__ import annotations

import enum
import math
import random
from dataclasses import dataclass

import google_crc32c

from .config import ReplicationConfig
from .log import RaftLog
from .types import (
    ChecksumMismatch,
    Entry,
    EntryKind,
    GroupId,
    HardState,
    Members,
    Message,
    MsgKind,
    NodeId,
    PersistedState,
    ReadRefused,
    ReadState,
    Ready,
    Role,
    SnapshotMeta,
    encode_membership,
    make_entry,
    quorum,
    snapshot_meta,
)

# A leadership's heartbeat rounds start at its clock reading times this, so they are
# above every round an earlier leadership of the node sent, in the same term too (a
# leader resumes its term after a restart, and answers to its last process's rounds
# can still arrive: queued on a peer's link, or late). The host's clock is monotonic
# across the node's restarts; no node sends 2**30 rounds a second.
ROUNDS_PER_SECOND = 2**30


class State(enum.IntEnum):
    FOLLOWER = 1
    PRE_CANDIDATE = 2
    CANDIDATE = 3
    LEADER = 4


class NotLeader(Exception):
    """Proposals and strong reads go to the leader; `leader` is this replica's best guess."""

    def __init__(self, leader: NodeId | None) -> None:
        super().__init__(f"not the leader (leader hint: {leader})")
        self.leader = leader


class MembershipChangeRefused(ValueError):
    """A membership change that is not one step from the current one, or overlaps another."""


@dataclass(slots=True)
class Progress:
    """The leader's view of one follower."""

    match: int = 0
    next: int = 1
    # The highest commit index this follower was told and holds the entries for.
    told_commit: int = 0
    # Entries (or a snapshot) were sent and no answer has come since.
    awaiting: bool = False
    acked_round: int = 0
    # When the leader last heard the follower, or granted it a fresh start (on taking
    # leadership, on waking from quiescence): what check-quorum and repair judge by.
    last_heard: float = float("-inf")
    # When an answer from the follower last arrived: only this says it is alive again.
    last_answer: float = float("-inf")


@dataclass(slots=True)
class Counters:
    """Events the host exports as metrics."""

    elections_started: int = 0
    elections_avoided: int = 0  # pre-votes abandoned because a peer still hears the leader
    leader_terms: int = 0  # times this replica became leader
    checksum_failures: int = 0
    snapshots_sent: int = 0
    snapshots_installed: int = 0
    lease_reads: int = 0  # strong reads served locally under the lease
    read_index_reads: int = 0  # strong reads that waited for a heartbeat round
    quiesced: int = 0  # times this replica's group went quiet


@dataclass(slots=True)
class _PendingRead:
    request_id: int
    round: int


class Replica:
    """One member of one replication group."""

    def __init__(
        self,
        group: GroupId,
        node: NodeId,
        persisted: PersistedState,
        config: ReplicationConfig,
        now: float,
        seed: int,
    ) -> None:
        self.group = group
        self.node = node
        self.config = config
        self._rng = random.Random(seed)
        self.log = RaftLog(persisted.snapshot, persisted.entries)
        hs = persisted.hard_state
        self.term = hs.term
        self.vote = hs.vote
        self.commit = max(hs.commit, self.log.base.index)
        self.applied = self.log.base.index
        self.members: Members = self.log.members_at(self.log.last_index)
        self.state = State.FOLLOWER
        self.leader: NodeId | None = None
        # Whatever this replica promised before a crash is forgotten: promise afresh. A
        # replica whose durable hard state is still the initial one (term 0, no vote)
        # never answered a leader of this group (a follower persists a new term before
        # it answers), so it promised nothing: a new group (a new table's partition, a
        # split's child) elects at once instead of a lease later.
        pristine = hs.term == 0 and hs.vote is None
        self.promise_until = now if pristine else now + config.lease_duration
        self.election_deadline = 0.0
        self._first_election_timer(now)
        self.counters = Counters()
        # Set when an entry in this replica's own log fails its checksum: the host must
        # discard the replica and rebuild it (restart from the WAL, or a snapshot).
        self.corrupted = False
        self.quiesced = False
        # Set by the host while this replica rebuilds what it acknowledged and then lost
        # (a snapshot install cut short by a crash empties its log): it neither votes
        # nor campaigns, as if down, so its empty log cannot help elect a leader that
        # lacks entries it once counted towards committing.
        self.abstaining = False
        # The host's node liveness: a quiesced follower asks it instead of heartbeats.
        self.leader_node_alive = True
        self._votes: dict[NodeId, bool] = {}
        # Leader state.
        self.progress: dict[NodeId, Progress] = {}
        self.round = self._round_base = 0
        self._round_sent: dict[int, float] = {}
        self._round_in_outbox = False
        self.lease_until = float("-inf")
        self._lease_forfeited = False
        self._committed_in_term = False
        # Whether a proposal, read or transfer reached this leader in its current term:
        # a leader that has had none quiesces as soon as its term's first entry is
        # committed everywhere (quiesce_after is for groups in use).
        self._client_work_in_term = False
        self._heartbeat_due = 0.0
        self._check_quorum_due = 0.0
        self._last_activity = now
        self.transfer_target: NodeId | None = None
        self._transfer_deadline = 0.0
        self._pending_reads: list[_PendingRead] = []
        self._appends_due = False
        # Outbox, drained by ready().
        self._messages: list[Message] = []
        self._persist_from: int | None = None
        self._hard_state = HardState(self.term, self.vote, self.commit, hs.leader)
        self._snapshot_to_install: SnapshotMeta | None = None
        self._reads: list[ReadState] = []
        self._refused: list[ReadRefused] = []
        self._restart_as(hs, now)

    # ------------------------------------------------------------------ queries

    @property
    def role(self) -> Role:
        return self.members.get(self.node, Role.FULL)

    @property
    def is_leader(self) -> bool:
        return self.state == State.LEADER

    def has_lease(self, now: float) -> bool:
        """Whether this replica may serve a strongly consistent read locally, now."""
        return (
            self.state == State.LEADER
            and self._committed_in_term
            and not self._lease_forfeited
            and now < self.lease_until
        )

    def hard_state(self) -> HardState:
        return HardState(self.term, self.vote, self.commit, self._leader_to_keep())

    def _leader_to_keep(self) -> NodeId | None:
        """The leader the hard state names. A leader that forfeited its lease (it sent
        TIMEOUT_NOW: the target's election ignores promises to it) must not resume its
        term after a restart and take a new lease while the target is being elected:
        from then on its hard state names no leader (the host writes that change before
        the TIMEOUT_NOW leaves)."""
        if self.state == State.LEADER and self._lease_forfeited:
            return None
        return self.leader

    def next_deadline(self, loop_lag: float = 0.0) -> float:
        """The local time by which this replica wants its next tick (inf: none needed),
        given the host's event-loop lag (see `tick`). Ticking earlier is harmless; a host
        may skip ticks until then."""
        if self.quiesced:
            return math.inf
        if self.state == State.LEADER:
            due = min(self._heartbeat_due, self._check_quorum_due)
            return min(due, self._transfer_deadline) if self.transfer_target is not None else due
        if self.node in self.members and self.role == Role.FULL:
            return self.election_deadline + loop_lag
        return math.inf

    def has_ready(self) -> bool:
        """Whether ready() would return anything (cheap; lets hosts skip idle groups)."""
        return bool(
            self._messages
            or self._appends_due
            or self._persist_from is not None
            or self._snapshot_to_install is not None
            or self.commit > self.applied
            or self._reads
            or self._refused
            or self.term != self._hard_state.term
            or self.vote != self._hard_state.vote
            or self.commit != self._hard_state.commit
            or self._leader_to_keep() != self._hard_state.leader
        )

    # ------------------------------------------------------------------ inputs

    def tick(self, now: float, loop_lag: float = 0.0) -> None:
        """Let time pass. A quiesced replica needs no ticks.

        `loop_lag`: how late the host's own event loop has recently been running (its
        measure, an input like `now`). A heartbeat may be sitting unread in this node's
        socket buffer for that long, so every election timeout is stretched by it, and
        a leader whose loop is late does not step down for want of a quorum: on an
        overloaded node, timeouts that fire because the node itself is slow would start
        elections that make it slower still."""
        if self.quiesced:
            return
        if self.state == State.LEADER:
            self._tick_leader(now, loop_lag)
        elif (
            self.node in self.members and self.role == Role.FULL and now >= self.election_deadline + loop_lag
        ):
            self._start_pre_vote(now)

    def campaign(self, now: float) -> None:
        """Start an election now (with a pre-vote), e.g. to place a group's first leader
        or move leadership back to a preferred replica, instead of waiting for a timeout."""
        if self.state != State.LEADER and self.members.get(self.node) == Role.FULL:
            self._start_pre_vote(now)

    def propose(self, data: bytes, now: float) -> tuple[int, int]:
        """Append a write; returns its (term, index). The write is durable on a quorum once
        the entry appears in Ready.committed with the same term."""
        return self._propose(EntryKind.NORMAL, data, now)

    def propose_membership(self, members: Members, now: float) -> tuple[int, int]:
        """Change the membership by one step: add one member, remove one, or nothing else.

        One change at a time (Raft dissertation 4.1): refused while an earlier change is
        uncommitted. The leader cannot remove itself; transfer leadership first.
        """
        if self.state != State.LEADER:
            raise NotLeader(self.leader)
        if self.log.newest_membership_index() > self.commit:
            raise MembershipChangeRefused("an earlier membership change is not committed yet")
        added = members.keys() - self.members.keys()
        removed = self.members.keys() - members.keys()
        changed = {n for n in members.keys() & self.members.keys() if members[n] != self.members[n]}
        if len(added) + len(removed) != 1 or changed:
            raise MembershipChangeRefused("add or remove exactly one member per change")
        if self.node in removed:
            raise MembershipChangeRefused("the leader cannot remove itself; transfer leadership first")
        return self._propose(EntryKind.MEMBERSHIP, encode_membership(members), now)

    def read(self, request_id: int, now: float) -> None:
        """Ask to serve a strongly consistent read. Answered in Ready.reads (serve once the
        state machine has applied that index) or Ready.refused_reads (not the leader)."""
        if self.state != State.LEADER or self.role != Role.FULL:
            self._refused.append(ReadRefused(request_id, self.leader))
            return
        self._wake(now, client_work=True)
        if self.has_lease(now):
            self.counters.lease_reads += 1
            self._reads.append(ReadState(request_id, self.commit))
            return
        self.counters.read_index_reads += 1
        # Read-index: confirm leadership with a heartbeat round that leaves after this read
        # arrived. A round still in the outbox (not yet taken by ready()) qualifies, so
        # the reads of one batch share one round.
        if not self._round_in_outbox:
            self._broadcast_heartbeat(now)
        self._pending_reads.append(_PendingRead(request_id, self.round))
        self._update_lease()  # a group of one has confirmed the round already

    def transfer_leadership(self, target: NodeId, now: float) -> None:
        """Hand leadership to `target` (graceful shutdown): stop taking proposals, bring the
        target up to date, then tell it to campaign at once (TIMEOUT_NOW)."""
        if self.state != State.LEADER:
            raise NotLeader(self.leader)
        if target == self.node or self.members.get(target) != Role.FULL:
            raise ValueError(f"cannot transfer leadership to {target}: not another full member")
        self._wake(now, client_work=True)
        self.transfer_target = target
        self._transfer_deadline = now + self.config.election_timeout
        self._maybe_send_timeout_now()
        if self.transfer_target is not None:
            self._send_append(target)

    def compact(self, index: int) -> None:
        """The host holds a snapshot of the state machine at `index` (<= applied): drop
        the log up to there. Followers behind it will be sent that snapshot."""
        if index <= self.log.base.index:
            return
        if index > self.applied or index > self.log.last_index:
            raise ValueError(f"cannot compact to {index}: applied {self.applied}")
        term = self.log.term_at(index)
        assert term is not None
        self.log.compact(snapshot_meta(index, term, self.log.members_at(index)))

    def set_leader_node_alive(self, alive: bool, now: float) -> None:
        """Node liveness for the leader's node. When it dies, a follower (waking if its
        group was quiesced) campaigns after a delay set by its rank among the surviving
        full members: the first in a stable per-group order goes as soon as its promise
        to the dead leader has run out, the next half an election timeout later. A node
        hosting thousands of groups then fails them over in about a round trip each,
        without the split votes of simultaneous random timeouts, and leadership spreads
        evenly over the survivors."""
        self.leader_node_alive = alive
        if alive or self.state != State.FOLLOWER or self.leader is None:
            return
        self.quiesced = False
        # Never before this replica's own promise to the old leader runs out.
        if not self._deadline_in_stable_order(max(now, self.promise_until), without=self.leader):
            self._reset_election_timer(now)

    def step(self, m: Message, now: float) -> None:
        """Consume one message addressed to this replica."""
        if (m.kind != MsgKind.PRE_VOTE or self.state == State.LEADER) and m.kind != MsgKind.HEARTBEAT_RESP:
            # A quiesced follower answers a pre-vote from node liveness without waking; the
            # acks of the quiescing heartbeat must not wake the leader again.
            self._wake(now)
        is_vote = m.kind in (MsgKind.PRE_VOTE, MsgKind.VOTE)
        if is_vote and m.term > self.term and not m.force and self._hears_leader(now, m.src):
            # Gray-failure check and lease promise: the leader is still there.
            kind = MsgKind.PRE_VOTE_RESP if m.kind == MsgKind.PRE_VOTE else MsgKind.VOTE_RESP
            self._send(m.src, kind, term=self.term, reject=True, leader_alive=True)
            return
        if m.term > self.term:
            if m.kind == MsgKind.PRE_VOTE or (m.kind == MsgKind.PRE_VOTE_RESP and not m.reject):
                pass  # a pre-vote never changes terms
            else:
                from_leader = m.kind in (MsgKind.APPEND, MsgKind.HEARTBEAT, MsgKind.SNAPSHOT)
                self._become_follower(m.term, m.src if from_leader else None, now)
        elif m.term < self.term:
            if m.kind in (MsgKind.APPEND, MsgKind.HEARTBEAT, MsgKind.SNAPSHOT):
                # A stale leader: tell it the term so it steps down.
                self._send(m.src, MsgKind.APPEND_RESP, term=self.term, reject=True, index=self.log.last_index)
            elif m.kind == MsgKind.PRE_VOTE:
                self._send(m.src, MsgKind.PRE_VOTE_RESP, term=self.term, reject=True)
            return
        handler = _HANDLERS[m.kind]
        handler(self, m, now)

    def ready(self) -> Ready:
        """Drain everything the host must do since the last call."""
        out = Ready(self.group)
        if self._appends_due:
            self._appends_due = False
            if self.state == State.LEADER:
                self._send_proposed_appends()
        if self._persist_from is not None:
            out.entries = self.log.slice(self._persist_from, self.log.last_index)
            self._persist_from = None
        hs = self.hard_state()
        if hs != self._hard_state:
            out.hard_state = hs
            self._hard_state = hs
        out.snapshot, self._snapshot_to_install = self._snapshot_to_install, None
        out.messages, self._messages = self._messages, []
        self._round_in_outbox = False
        if self.commit > self.applied:
            if self.role == Role.FULL:
                out.committed = self.log.slice(self.applied + 1, self.commit)
            self.applied = self.commit
        out.reads, self._reads = self._reads, []
        out.refused_reads, self._refused = self._refused, []
        return out

    # ------------------------------------------------------------------ elections

    def _hears_leader(self, now: float, candidate: NodeId) -> bool:
        if self.state == State.LEADER:
            return True
        if self.config.unsafe_ignore_lease_promise:
            return self.quiesced and self.leader_node_alive
        if self.quiesced:
            # Node liveness vouches for the leader's node, not for its leadership: a
            # leader that asks for votes itself has lost it (it restarted faster than
            # its registration expired, or stepped down), so its group must elect.
            return self.leader_node_alive and candidate != self.leader
        return now < self.promise_until

    def _first_election_timer(self, now: float) -> None:
        """A replica that starts (a new group, or a node's restart) knows no leader. With
        random timeouts every member of each of a node's thousands of groups would
        campaign within the same second: split votes, and on a loaded machine a storm of
        terms that did not settle in minutes (bench/scale.py, a restart of 4,000 groups).
        Members go in the stable per-group order of failover instead: the first when its
        promise from the start has run out (at once in a new group: no promise), the
        next half an election timeout later; after that the usual random timer."""
        full = sum(1 for role in self.members.values() if role == Role.FULL)
        if full < 2 or not self._deadline_in_stable_order(max(now, self.promise_until), without=None):
            self._reset_election_timer(now)

    def _deadline_in_stable_order(self, start: float, without: NodeId | None) -> bool:
        """Sets the election deadline by this replica's rank among the group's full
        members (`without` left out) in their stable per-group order (CRC32C of group
        and node): the first at `start`, each next half an election timeout later, with
        a little jitter. False, and nothing set, if this replica is not among them."""
        order = sorted(
            (n for n, role in self.members.items() if role == Role.FULL and n != without),
            key=lambda n: stable_rank(self.group, n),
        )
        if self.node not in order:
            return False
        timeout = self.config.election_timeout
        self.election_deadline = start + timeout * (0.5 * order.index(self.node) + 0.1 * self._rng.random())
        return True

    def _ranks_ahead(self, node: NodeId) -> bool:
        """Whether `node` comes before this replica in the group's stable order."""
        return stable_rank(self.group, node) < stable_rank(self.group, self.node)

    def _reset_election_timer(self, now: float) -> None:
        timeout = self.config.election_timeout
        self.election_deadline = now + timeout + self._rng.random() * timeout

    def _start_pre_vote(self, now: float) -> None:
        if self.abstaining:
            self._reset_election_timer(now)
            return
        if now < self.promise_until and not self.config.unsafe_ignore_lease_promise:
            # This replica's own promise to the last leader holds: it may be one of the
            # majority behind that leader's lease, so it may not vote for itself yet.
            self.election_deadline = (
                self.promise_until + self._rng.random() * 0.1 * self.config.election_timeout
            )
            return
        self.state = State.PRE_CANDIDATE
        self.leader = None
        self._votes = {self.node: True}
        self._reset_election_timer(now)
        self._request_votes(MsgKind.PRE_VOTE, self.term + 1, force=False)
        self._maybe_win(now)

    def _campaign(self, now: float, force: bool) -> None:
        self.counters.elections_started += 1
        self.term += 1
        self.vote = self.node
        self.state = State.CANDIDATE
        self.leader = None
        self._votes = {self.node: True}
        self._reset_election_timer(now)
        self._request_votes(MsgKind.VOTE, self.term, force=force)
        self._maybe_win(now)

    def _request_votes(self, kind: MsgKind, term: int, force: bool) -> None:
        for peer in self.members:
            if peer != self.node:
                self._send(
                    peer, kind, term=term, index=self.log.last_index, log_term=self.log.last_term, force=force
                )

    def _maybe_win(self, now: float) -> None:
        granted = sum(1 for node, yes in self._votes.items() if yes and node in self.members)
        if granted < quorum(self.members):
            return
        if self.state == State.PRE_CANDIDATE:
            self._campaign(now, force=False)
        elif self.state == State.CANDIDATE:
            self._become_leader(now)

    def _on_vote_request(self, m: Message, now: float) -> None:
        kind = MsgKind.PRE_VOTE_RESP if m.kind == MsgKind.PRE_VOTE else MsgKind.VOTE_RESP
        up_to_date = self.log.is_up_to_date(m.index, m.log_term)
        if m.kind == MsgKind.PRE_VOTE:
            grant = up_to_date and m.term > self.term
        else:
            grant = up_to_date and self.vote in (None, m.src)
        grant = grant and not self.abstaining
        if grant and m.kind == MsgKind.VOTE:
            self.vote = m.src
            self._reset_election_timer(now)
        elif grant and self.state == State.PRE_CANDIDATE and self._ranks_ahead(m.src):
            # Two pre-candidates that grant each other's pre-votes both campaign in the
            # same term and split the vote: on loaded nodes, where a round trip outlasts
            # the next successor's turn, a dead node's groups did that by the thousand.
            # The one later in the group's stable order steps back (the other's request
            # reached it before the other's answer could, on one node pair's stream).
            self.state = State.FOLLOWER
            self._reset_election_timer(now)
        # A granted pre-vote answers in the candidate's future term, so it is not taken as
        # "a newer term exists"; a refusal carries ours.
        self._send(m.src, kind, term=m.term if grant else self.term, reject=not grant)

    def _on_vote_response(self, m: Message, now: float) -> None:
        expected = State.PRE_CANDIDATE if m.kind == MsgKind.PRE_VOTE_RESP else State.CANDIDATE
        if self.state != expected:
            return
        self._votes[m.src] = not m.reject
        if m.kind == MsgKind.PRE_VOTE_RESP and m.leader_alive:
            # Seed 000 section 6.2: a peer still hears the leader, so do not hold an
            # election; wait another timeout as a follower.
            self.counters.elections_avoided += 1
            self.state = State.FOLLOWER
            self._reset_election_timer(now)
            return
        if sum(1 for yes in self._votes.values() if not yes) >= quorum(self.members):
            self._become_follower(self.term, None, now)
            return
        self._maybe_win(now)

    def _become_follower(self, term: int, leader: NodeId | None, now: float) -> None:
        if term != self.term:
            self.term = term
            self.vote = None
        if self.state == State.LEADER:
            for pending in self._pending_reads:
                self._refused.append(ReadRefused(pending.request_id, leader))
            self._pending_reads = []
        self.state = State.FOLLOWER
        self.leader = leader
        self.lease_until = float("-inf")
        self.transfer_target = None
        self._reset_election_timer(now)

    def _become_leader(self, now: float) -> None:
        self._take_leadership(now)
        self._append_local(EntryKind.NOOP, b"", now)
        self._broadcast_heartbeat(now)
        self._broadcast_append()
        self._maybe_commit()

    def _take_leadership(self, now: float) -> None:
        self.state = State.LEADER
        self.leader = self.node
        self.counters.leader_terms += 1
        self.progress = {
            peer: Progress(match=0, next=self.log.last_index + 1, last_heard=now)
            for peer in self.members
            if peer != self.node
        }
        self.round = self._round_base = max(0, int(now * ROUNDS_PER_SECOND))
        self._round_sent = {}
        self.lease_until = float("-inf")
        self._lease_forfeited = False
        # A resumed term's first entry may be committed already (see _restart_as).
        self._committed_in_term = self.log.term_at(self.commit) == self.term
        self._client_work_in_term = False
        self.transfer_target = None
        self._last_activity = now
        self._check_quorum_due = now + self.config.election_timeout

    def _restart_as(self, hs: HardState, now: float) -> None:
        """A restart with the leader of its term on disk needs no election while that
        leader lives. The leader itself resumes leading the term: it was elected in it,
        so no other replica can lead it; its log holds everything it ever sent, its
        term's NOOP among it (its appends leave before its own write, so the host names
        it leader in the hard state it gives only after a clean stop, every write of the
        last process done: `SENDABLE_BEFORE_PERSIST`); the commit index on disk is at
        most the true one. Its followers name it as leader and give it a
        grace period before their ordered election (if its node did not come back)."""
        leader = hs.leader
        if leader is None or hs.term != self.term or self.members.get(leader) != Role.FULL:
            return
        if len(self.members) < 2 or self.node not in self.members:
            return
        if leader == self.node:
            self._take_leadership(now)
            self._broadcast_heartbeat(now)
            self._broadcast_append()
            return
        self.leader = leader
        grace = now + self.config.lease_duration + self.config.election_timeout
        self._deadline_in_stable_order(grace, without=leader)

    # ------------------------------------------------------------------ leader

    def _tick_leader(self, now: float, loop_lag: float) -> None:
        if self.transfer_target is not None and now >= self._transfer_deadline:
            self.transfer_target = None  # the target did not take over; carry on leading
        if now >= self._check_quorum_due:
            self._check_quorum_due = now + self.config.election_timeout
            # Check-quorum only frees a group from a leader cut off from it; safety never
            # depends on it (a deposed leader's lease has ended before another is elected).
            # So a leader whose own loop is late does not judge its followers silent: their
            # answers are likely still unread.
            if loop_lag <= self.config.loop_lag_tolerance:
                horizon = now - self.config.election_timeout - loop_lag
                heard = 1 + sum(
                    1 for p, pr in self.progress.items() if p in self.members and pr.last_heard >= horizon
                )
                if heard < quorum(self.members):
                    self._become_follower(self.term, None, now)  # cut off from a majority
                    return
        if now >= self._heartbeat_due:
            if self._can_quiesce(now):
                self._quiesce(now)
                return
            self._broadcast_heartbeat(now)

    def _can_quiesce(self, now: float) -> bool:
        if self.transfer_target is not None or self._pending_reads or not self._committed_in_term:
            return False
        in_use = self._client_work_in_term or not self.config.quiesce_when_elected
        if in_use and now - self._last_activity < self.config.quiesce_after:
            return False
        last = self.log.last_index
        if self.commit != last:
            return False
        return all(self.progress[p].match == last for p in self.members if p != self.node)

    def _quiesce(self, now: float) -> None:
        """Go quiet: the quiescing heartbeat carries the commit index to every follower
        (each holds the whole log), so a commit notice still due would only wake them."""
        self._appends_due = False
        self._broadcast_heartbeat(now, quiesce=True)
        self.quiesced = True
        self.counters.quiesced += 1

    def _maybe_quiesce_after_election(self, now: float) -> None:
        """A leader no client has used in its term quiesces the moment every follower
        holds its committed log, not after quiesce_after of heartbeats: after a restart
        thousands of groups elect at once, and every second a group stays awake costs
        ticks and heartbeats that an overloaded node delivers late, which set off
        elections again."""
        if (
            self.config.quiesce_when_elected
            and not self.quiesced
            and not self._client_work_in_term
            and self._can_quiesce(now)
        ):
            self._quiesce(now)

    def _wake(self, now: float, client_work: bool = False) -> None:
        """Leave quiescence. Only client work (proposals, reads, transfers) counts as
        activity that keeps a group from quiescing; protocol chatter does not."""
        if client_work:
            self._last_activity = now
            self._client_work_in_term = True
        if not self.quiesced:
            return
        self.quiesced = False
        self._last_activity = now
        if self.state == State.LEADER:
            self._check_quorum_due = now + self.config.election_timeout
            for pr in self.progress.values():
                pr.last_heard = max(pr.last_heard, now)
            self._broadcast_heartbeat(now)
        else:
            self._reset_election_timer(now)

    def _propose(self, kind: EntryKind, data: bytes, now: float) -> tuple[int, int]:
        if self.state != State.LEADER:
            raise NotLeader(self.leader)
        if self.transfer_target is not None:
            raise NotLeader(self.transfer_target)
        self._wake(now, client_work=True)
        entry = self._append_local(kind, data, now)
        # The APPENDs go out at the next ready(): every proposal until then shares them.
        self._appends_due = True
        self._maybe_commit()
        return entry.term, entry.index

    def _append_local(self, kind: EntryKind, data: bytes, now: float) -> Entry:
        entry = make_entry(self.term, self.log.last_index + 1, kind, data)
        self.log.append(entry)
        if self._persist_from is None:
            self._persist_from = entry.index
        if kind == EntryKind.MEMBERSHIP:
            self._apply_membership_change(now)
        return entry

    def _apply_membership_change(self, now: float) -> None:
        self.members = self.log.members_at(self.log.last_index)
        if self.state != State.LEADER:
            return
        for peer in self.members:
            if peer != self.node and peer not in self.progress:
                # Counted as heard now: the next check-quorum may come before its first
                # answer, and a leader of four members with one down that did not count
                # the member it just added stepped down (and a new term began).
                self.progress[peer] = Progress(match=0, next=self.log.last_index + 1, last_heard=now)
        for peer in list(self.progress):
            if peer not in self.members:
                del self.progress[peer]

    def _broadcast_heartbeat(self, now: float, quiesce: bool = False) -> None:
        self.round += 1
        self._round_sent[self.round] = now
        self._round_in_outbox = True
        self._heartbeat_due = now + self.config.heartbeat_interval
        for peer, pr in self.progress.items():
            pr.told_commit = max(pr.told_commit, min(self.commit, pr.match))
            self._send(
                peer,
                MsgKind.HEARTBEAT,
                commit=min(self.commit, pr.match),
                round=self.round,
                quiesce=quiesce,
                index=self.log.last_index,
            )
        self._update_lease()  # a group of one confirms its own rounds

    def _broadcast_append(self) -> None:
        for peer in self.progress:
            self._send_append(peer)

    def _send_proposed_appends(self) -> None:
        """Send what was proposed since the last ready() to each follower with no append
        unanswered. One append in flight per follower: what is proposed meanwhile leaves
        with the answer (`_on_append_response` sends the rest), so under load a follower
        takes one message, one WAL batch and one acknowledgement per round trip instead of
        one per ready(). The follower's WAL syncs one batch at a time anyway, so an append
        sent earlier would only have waited there (a follower's CPU per write -16 to -33%
        under load, docs/benchmarks.md "P3: RF=3 speed, round 10"). An append or answer
        lost on the way is resent at the next heartbeat's answer, as before."""
        last = self.log.last_index
        for peer, pr in self.progress.items():
            if pr.awaiting:
                continue
            if pr.match >= last and pr.told_commit >= min(self.commit, last):
                continue  # it holds every entry and knows the commit: nothing new
            self._send_append(peer)

    def _send_append(self, peer: NodeId) -> None:
        pr = self.progress[peer]
        prev = pr.next - 1
        prev_term = self.log.term_at(prev)
        if prev_term is None or prev < self.log.base.index:
            self._send_snapshot(peer)
            return
        last = min(self.log.last_index, prev + self.config.max_append_entries)
        entries = tuple(self.log.slice(prev + 1, last)) if last > prev else ()
        try:
            for entry in entries:
                entry.verify()  # on send too: what memory corrupted must not spread
        except ChecksumMismatch:
            self.counters.checksum_failures += 1
            self.corrupted = True
            return
        self._send(
            peer,
            MsgKind.APPEND,
            index=prev,
            log_term=prev_term,
            entries=entries,
            commit=self.commit,
            round=self.round,
        )
        pr.told_commit = max(pr.told_commit, min(self.commit, last))
        if entries:
            pr.awaiting = True
            pr.next = last + 1  # optimistic; a rejection or heartbeat response rewinds it

    def _send_snapshot(self, peer: NodeId) -> None:
        self.counters.snapshots_sent += 1
        base = self.log.base
        self._send(peer, MsgKind.SNAPSHOT, snapshot=base, round=self.round)
        self.progress[peer].next = base.index + 1
        self.progress[peer].awaiting = True

    def _on_append_response(self, m: Message, now: float) -> None:
        if self.state != State.LEADER or m.src not in self.progress:
            return
        pr = self.progress[m.src]
        pr.awaiting = False
        self._heard(pr, m.round, now)
        if m.reject:
            if m.index < pr.match:
                # The follower holds less than it acknowledged (its log emptied by an
                # install cut short, or erased and named a member again; a rejection
                # reports its last index, and one node pair's messages keep their
                # order): count only what it holds, or it is probed at its old match
                # forever. Commit never moves back; a stale answer costs a resend.
                pr.match = m.index
            pr.next = max(pr.match + 1, min(pr.next - 1, m.index + 1))
            self._send_append(m.src)
            return
        if m.index > pr.match:
            pr.match = m.index
            self._maybe_commit()
        pr.next = max(pr.next, pr.match + 1)
        if pr.match < self.log.last_index and pr.next <= self.log.last_index:
            self._send_append(m.src)
        elif pr.told_commit < min(self.commit, pr.match):
            # The commit notice it missed while this answer was on its way: a follower
            # serves eventually consistent reads, and should find the write applied.
            self._send_append(m.src)
        self._maybe_send_timeout_now()
        self._maybe_quiesce_after_election(now)

    def _on_heartbeat_response(self, m: Message, now: float) -> None:
        if self.state != State.LEADER or m.src not in self.progress:
            return
        pr = self.progress[m.src]
        # Ends the wait for an append's answer: a node pair keeps its messages' order, so
        # if the append left before this heartbeat, it or its answer was lost. If it left
        # after, a second append may follow it: what every append cost before the wait.
        pr.awaiting = False
        self._heard(pr, m.round, now)
        if pr.match < self.log.last_index:
            # Something was lost on the way, or this leader does not know yet what the
            # follower holds (just elected or restarted: match 0). Resend from `next`: a
            # follower lacking the entry before it rejects with its last index, which
            # moves `next` back exactly there. Rewinding to match + 1 instead sent every
            # follower of a restarted leader a whole snapshot (its log starts near its
            # applied index, and match 0 is below that).
            self._wake(now)
            self._send_append(m.src)

    def _heard(self, pr: Progress, round_: int, now: float) -> None:
        pr.last_heard = pr.last_answer = now
        # Only rounds this leadership sent: an answer to another's (this node's before a
        # restart) says nothing of when the follower last heard this one.
        if self._round_base < round_ <= self.round and round_ > pr.acked_round:
            pr.acked_round = round_
            self._update_lease()

    def _update_lease(self) -> None:
        rounds = sorted(
            (self.round if node == self.node else self.progress[node].acked_round for node in self.members),
            reverse=True,
        )
        confirmed = rounds[quorum(self.members) - 1]
        if confirmed <= 0:
            return
        sent = self._round_sent.get(confirmed)
        if sent is None:
            return  # a membership change moved the quorum back to an older round
        self.lease_until = max(self.lease_until, sent + self.config.lease_duration_at_leader)
        if self._pending_reads and self._committed_in_term:
            still = []
            for pending in self._pending_reads:
                if pending.round <= confirmed:
                    self._reads.append(ReadState(pending.request_id, self.commit))
                else:
                    still.append(pending)
            self._pending_reads = still
        # Old rounds are no longer needed once a quorum is past them.
        for old in [r for r in self._round_sent if r < confirmed]:
            del self._round_sent[old]

    def _maybe_commit(self) -> None:
        matches = sorted(
            (
                self.log.last_index if node == self.node else self.progress[node].match
                for node in self.members
            ),
            reverse=True,
        )
        candidate = matches[quorum(self.members) - 1]
        # Raft 5.4.2: only an entry of the leader's own term is committed by counting.
        if candidate > self.commit and self.log.term_at(candidate) == self.term:
            self.commit = candidate
            # Tell the followers now (as etcd-raft's bcastAppend after maybeCommit), not
            # with the next heartbeat: they serve eventually consistent reads, and a read
            # right after an acknowledged write should find it applied there.
            self._appends_due = bool(self.progress)
            if not self._committed_in_term:
                self._committed_in_term = True
                self._update_lease()  # release reads that waited for the first commit

    def _maybe_send_timeout_now(self) -> None:
        target = self.transfer_target
        if target is None or target not in self.progress:
            return
        if self.progress[target].match == self.log.last_index:
            # From here on this leader holds no lease in this term: the target is about to
            # be elected without waiting for promises to it to run out.
            self._lease_forfeited = True
            self._send(target, MsgKind.TIMEOUT_NOW)

    # ------------------------------------------------------------------ follower

    def _accept_leader(self, m: Message, now: float) -> None:
        if self.state != State.FOLLOWER or self.leader != m.src:
            self._become_follower(self.term, m.src, now)
        self.promise_until = now + self.config.lease_duration
        self._reset_election_timer(now)

    def _on_append(self, m: Message, now: float) -> None:
        try:
            for entry in m.entries:
                entry.verify()
        except ChecksumMismatch:
            self.counters.checksum_failures += 1
            return  # dropped whole; the leader resends
        self._accept_leader(m, now)
        if m.index < self.commit:
            self._send(m.src, MsgKind.APPEND_RESP, index=self.commit, round=m.round)
            return
        if self.log.term_at(m.index) != m.log_term:
            self._send(
                m.src,
                MsgKind.APPEND_RESP,
                reject=True,
                index=min(m.index - 1, self.log.last_index),
                round=m.round,
            )
            return
        written = self.log.merge(m.index, m.entries)
        if written is not None:
            self._persist_from = written if self._persist_from is None else min(self._persist_from, written)
            # New entries or a truncated tail may bring or drop a membership change.
            self.members = self.log.members_at(self.log.last_index)
        last_new = m.index + len(m.entries)
        known = self.commit
        self.commit = max(self.commit, min(m.commit, last_new))
        if not m.entries and m.index == self.log.last_index and self.commit > known:
            # A commit notice (an APPEND with nothing new, sent when the leader's commit
            # advanced): the leader learns nothing from an answer, as this replica's
            # answer to the entries already told it `m.index`, and its lease comes from
            # heartbeat rounds. Unanswered, it costs the pair one message each way less
            # per write round; if it was lost, the next heartbeat brings the commit.
            return
        self._send(m.src, MsgKind.APPEND_RESP, index=last_new, round=m.round)

    def _on_heartbeat(self, m: Message, now: float) -> None:
        self._accept_leader(m, now)
        # commit is at most what the leader knows we hold, so our prefix matches there.
        self.commit = max(self.commit, min(m.commit, self.log.last_index))
        self._send(m.src, MsgKind.HEARTBEAT_RESP, round=m.round)
        if m.quiesce and self.log.last_index == m.index and self.commit == m.index:
            self.quiesced = True
            self.leader_node_alive = True
            self.counters.quiesced += 1

    def _on_snapshot(self, m: Message, now: float) -> None:
        self._accept_leader(m, now)
        meta = m.snapshot
        assert meta is not None
        if meta.index <= self.commit:
            self._send(m.src, MsgKind.APPEND_RESP, index=self.commit, round=m.round)
            return
        if self.log.term_at(meta.index) == meta.term:
            # We hold the snapshot's entries already (and maybe entries we acked after
            # them): keep the log, commit up to the snapshot and apply from the log.
            self.commit = meta.index
            self._send(m.src, MsgKind.APPEND_RESP, index=meta.index, round=m.round)
            return
        self.counters.snapshots_installed += 1
        self.log.reset(meta)
        self.members = meta.member_map()
        self.commit = self.applied = meta.index
        self._persist_from = None
        self._snapshot_to_install = meta
        self._send(m.src, MsgKind.APPEND_RESP, index=meta.index, round=m.round)

    def _on_timeout_now(self, m: Message, now: float) -> None:
        if self.state == State.LEADER or self.members.get(self.node) != Role.FULL:
            return
        self._campaign(now, force=True)

    # ------------------------------------------------------------------ output

    def _send(
        self,
        to: NodeId,
        kind: MsgKind,
        *,
        term: int | None = None,
        index: int = 0,
        log_term: int = 0,
        entries: tuple[Entry, ...] = (),
        commit: int = 0,
        reject: bool = False,
        round: int = 0,
        leader_alive: bool = False,
        force: bool = False,
        quiesce: bool = False,
        snapshot: SnapshotMeta | None = None,
    ) -> None:
        self._messages.append(
            Message(
                kind,
                self.group,
                self.node,
                to,
                self.term if term is None else term,
                index=index,
                log_term=log_term,
                entries=entries,
                commit=commit,
                reject=reject,
                round=round,
                leader_alive=leader_alive,
                force=force,
                quiesce=quiesce,
                snapshot=snapshot,
            )
        )


def stable_rank(group: GroupId, node: NodeId) -> int:
    """A member's place in its group's stable election order (lower goes first); the
    same order names each group's preferred leader (`storage/leader_balance.py`), so
    elections and rebalancing agree on where a group belongs.

    CRC32C alone is linear: the CRCs of "<group>/a" and "<group>/b" differ by the same
    XOR for every group id of one length, so only four of the six orders of three
    nodes ever occurred and one node came first in half of all groups (it won half of
    every start-up's elections). MurmurHash3's finalizer mixes that away: each order,
    and each node first, about equally often (tests/unit/storage/test_leader_balance.py).
    """
    h: int = google_crc32c.value(f"{group}/{node}".encode())
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


_HANDLERS = {
    MsgKind.APPEND: Replica._on_append,
    MsgKind.APPEND_RESP: Replica._on_append_response,
    MsgKind.HEARTBEAT: Replica._on_heartbeat,
    MsgKind.HEARTBEAT_RESP: Replica._on_heartbeat_response,
    MsgKind.PRE_VOTE: Replica._on_vote_request,
    MsgKind.PRE_VOTE_RESP: Replica._on_vote_response,
    MsgKind.VOTE: Replica._on_vote_request,
    MsgKind.VOTE_RESP: Replica._on_vote_response,
    MsgKind.SNAPSHOT: Replica._on_snapshot,
    MsgKind.TIMEOUT_NOW: Replica._on_timeout_now,
}

__all__ = ["Counters", "MembershipChangeRefused", "NotLeader", "Progress", "Replica", "State", "stable_rank"]
