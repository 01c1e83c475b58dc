"""The I/O side of replication on one storage node: drives the consensus core
(`replication.MultiReplica`) over the engine and the node-pair transport.

One pump turns the core's output into effects, in the order docs/replication.md
requires: persist the round's entries and hard states (every group's records go in one
WAL append: one batch, one fsync; a hard state that only moves the commit index waits for
the node's next batch, `_defer_commit`), then send the round's messages (one envelope per peer), then
apply the committed entries (`Engine.apply`, the applied position in the data's batch),
then answer the proposals and reads they complete. Proposals and messages that arrive
while a round is being persisted go into the next round: group commit across groups.

Membership changes one member at a time (`change_membership`, driven by the repair
policy on the leader, `repair_driver.py`); a log-only member keeps the WAL and applies
nothing. A follower behind the leader's log base, or a member just added when the
leader's log does not reach back to the start, is sent a snapshot: the partition's key
range read from a RocksDB checkpoint at the leader's applied index, in checksummed chunks
(`snapshot.py`), staged on disk by the receiver and installed in bounded RocksDB batches
under an "installing" mark (`Engine.install_snapshot`), after which the log catches it up.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import logging
import random
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partita.common.metrics import LATENCY_BUCKETS, HistogramCell
from partita.storage.effects import Effect, decode_effects, encode_effects
from partita.storage.engine import Engine
from partita.storage.group_split import decode_split, encode_split
from partita.storage.replication.coalesce import Envelope, coalesce, expand
from partita.storage.replication.config import ReplicationConfig
from partita.storage.replication.core import NotLeader
from partita.storage.replication.multi import MultiReplica
from partita.storage.replication.types import (
    SENDABLE_BEFORE_PERSIST,
    Entry,
    EntryKind,
    GroupId,
    HardState,
    Members,
    Message,
    MsgKind,
    NodeId,
    PersistedState,
    Ready,
    Role,
    bootstrap_state,
    inherited_state,
    snapshot_meta,
)
from partita.storage.snapshot import SnapshotError, Staging, chunks, encode_chunk

log = logging.getLogger(__name__)
# Seconds a stop waits for the round under way to finish its write.
STOP_ROUND_SECONDS = 2.0

# How often the host offers the core its clock: a fraction of the heartbeat interval.
# The core only ticks the groups whose deadline has come (a timer heap), so this costs
# nothing per idle group.
TICK_FRACTION = 0.25
# Pause after each snapshot chunk sent: about 256 KB per 5 ms at most, so a snapshot
# leaves room for the node's other traffic and the link's buffer stays small.
SNAPSHOT_CHUNK_PAUSE = 0.005
# A follower sent a whole snapshot is not sent another for this long (its install and
# answer are on their way).
SNAPSHOT_RESEND_SECONDS = 2.0


class LoopLag:
    """How late this node's event loop has run its replication ticks lately: the largest
    lateness (time since the previous tick beyond the tick interval) seen over the last
    `window` seconds. A long pump round, a burst of envelopes or a starved process all
    show up here; the core stretches its election timeouts by it (`Replica.tick`)."""

    def __init__(self, interval: float, window: float) -> None:
        self.interval = interval
        self.window = window
        self._previous: float | None = None
        self._samples: collections.deque[tuple[float, float]] = collections.deque()
        self.worst = 0.0  # the largest lateness in the window (the value the core gets)

    def sample(self, now: float) -> float:
        """Record a tick at `now`; returns the lag to pass to the core."""
        if self._previous is not None:
            late = now - self._previous - self.interval
            if late > 0:
                self._samples.append((now, late))
        self._previous = now
        while self._samples and self._samples[0][0] < now - self.window:
            self._samples.popleft()
        self.worst = max((late for _, late in self._samples), default=0.0)
        return self.worst


class Superseded(Exception):
    """Another entry was committed where this proposal was: the write never happened."""


@dataclass(frozen=True, slots=True)
class Leadership:
    """What the node reports about one group (for the router and `partita status`)."""

    group: GroupId
    leader: NodeId | None
    term: int
    is_leader: bool
    has_lease: bool
    commit: int
    applied: int
    lag: dict[NodeId, int]  # on the leader: entries each follower is behind


class ReplicaHost:
    def __init__(
        self,
        node_id: NodeId,
        engine: Engine,
        send: Callable[[list[Envelope]], None],
        config: ReplicationConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        ranges: Callable[[GroupId], tuple[bytes, bytes] | None] = lambda group: None,
        snapshot_dir: Path | None = None,
    ) -> None:
        self.node_id = node_id
        # A stop cut a round's write short: not a clean stop (`stop`, `Engine.close`).
        self.stopped_mid_write = False
        self._stopping = False
        # A group's key range (its partition's), for snapshots sent and installed.
        self._ranges = ranges
        self._snapshot_dir = snapshot_dir or Path(tempfile.gettempdir()) / f"partita-snapshots-{node_id}"
        self._streams: dict[tuple[GroupId, NodeId], asyncio.Task[None]] = {}
        self._streamed: dict[tuple[GroupId, NodeId], float] = {}  # when the last stream ended
        self._staging: dict[GroupId, Staging] = {}  # snapshots being received
        self._staged: dict[GroupId, Staging] = {}  # received whole, handed to the core
        self._staging_count = 0
        self.snapshots_sent = 0
        self.snapshots_installed = 0
        self.snapshot_bytes_sent = 0
        self.snapshot_bytes_installed = 0
        self.engine = engine
        self.config = config or ReplicationConfig()
        self.multi = MultiReplica(node_id, self.config)
        self._send = send
        self._clock = clock
        # (group, index) -> (term, the proposer's future, when it was proposed)
        self._proposals: dict[tuple[GroupId, int], tuple[int, asyncio.Future[None], float]] = {}
        self.commit_latency = HistogramCell(LATENCY_BUCKETS)  # the node's metrics cell replaces it
        self._reads: dict[int, tuple[GroupId, asyncio.Future[None]]] = {}
        self._waiting_reads: list[tuple[GroupId, int, asyncio.Future[None]]] = []
        self._next_read = 0
        self._term_start: dict[GroupId, tuple[int, int]] = {}  # group -> (term, its NOOP's index)
        self._wake = asyncio.Event()
        # Lateness remembered for two election timeouts: long enough to cover the
        # heartbeat gap a stall has just caused.
        self.loop_lag = LoopLag(
            self.config.heartbeat_interval * TICK_FRACTION, 2 * self.config.election_timeout
        )
        self._runner: asyncio.Task[None] | None = None
        self._unawaited: set[asyncio.Task[list[list[int]]]] = set()  # commit-only hard states being written
        # Commit-only hard states not written yet (see `_persist`), and since when.
        self._deferred_commits: dict[GroupId, HardState] = {}
        self._deferred_since = 0.0
        self.snapshots_unavailable = 0  # SNAPSHOT messages the host could not back with data
        # Groups in which this node is a log-only member: it keeps their WAL and applies
        # no effects (a newcomer may see committed entries before the entry that makes
        # it a log member).
        self._log_only: set[GroupId] = set()
        # Splits at a log index (`group_split.py`): groups whose SPLIT entry this node
        # proposed, and (cut, index) of the SPLIT entry each group applied here. Either
        # seals the group: no write is planned for it any more.
        self._sealing: set[GroupId] = set()
        self._split_entries: dict[GroupId, tuple[int, int]] = {}
        # Groups whose replica restarted from a snapshot install cut short (the engine's
        # `installing`): it abstains from elections until the install is redone or the
        # log has applied as far.
        self._abstaining: set[GroupId] = set()
        # ... and groups whose replica rejoined after its erasure: it abstains until it
        # has applied this far (its old log's last index, `Engine.left_replica`).
        self._abstain_until: dict[GroupId, int] = {}
        # Rejoined replicas whose restored hard state is not in the WAL yet: it goes with
        # their first write (the engine treats a group's entries without a hard state as
        # committed on replay, as for a single-member group).
        self._unsaved_hard_states: set[GroupId] = set()
        # Snapshot installs under way (their RocksDB writes in a worker thread), and the
        # group's Readies since, held until it ends: the group persists, sends, applies
        # and serves nothing meanwhile, the node's other groups go on.
        self._installs: dict[GroupId, asyncio.Task[None]] = {}
        self._held: dict[GroupId, list[Ready]] = {}
        self._released: list[Ready] = []  # held Readies of installs that ended, in order
        self._install_failure: BaseException | None = None

    # --- groups ---------------------------------------------------------------------

    def add_group(
        self,
        group: GroupId,
        members: list[NodeId],
        log_members: Sequence[NodeId] = (),
        newcomer: bool = False,
        inherited: bool = False,
    ) -> None:
        """Host this node's replica of `group` (idempotent). `members` are the full
        members, `log_members` the log-only ones. A `newcomer` (added to a running
        group) starts empty and outside its own membership, so it never campaigns on an
        empty log: it learns the group, itself included, from the leader's log.

        `inherited`: a split child's group, whose members start from the data they hold
        (the parent's, applied up to its SPLIT entry): its log starts after index 1,
        which stands for that data, so a member that did not inherit it (a `newcomer`,
        whose log starts at 0) is sent a snapshot, never only the child's entries."""
        if self.node_id in log_members:
            self._log_only.add(group)
        if group in self.multi.replicas:
            return
        roles: Members = {node: Role.FULL for node in members}
        roles.update({node: Role.LOG for node in log_members})
        fresh = self.engine.hard_state(group) is None and self.engine.applied_index(group) == 0
        # A replica this node erased, named a member again (any role, whoever wrote the
        # partition object: a leader whose log lacks the removal, say): it may have
        # voted in the group and counted towards committing entries it no longer holds.
        # It rejoins as a newcomer with its old term and vote, and abstains until it
        # holds its old log's length again (across restarts too: its hard state is back
        # by then, not its log).
        left = self.engine.left_replica(group)
        behind = left is not None and self.engine.applied_index(group) < left[1]
        rejoining = left is not None and self.engine.hard_state(group) is None
        if (newcomer or rejoining) and self.engine.hard_state(group) is None:
            roles.pop(self.node_id, None)
        elif inherited and fresh:
            index, term = inherited_state(roles).snapshot.index, inherited_state(roles).snapshot.term
            self.engine.apply(group, index, [], term=term)
        persisted = self._persisted(group, roles)
        if rejoining and left is not None:
            persisted.hard_state = left[0]
            self._unsaved_hard_states.add(group)
        replica = self.multi.add_group(group, persisted, self._clock(), random.getrandbits(64))
        if behind and left is not None:
            self._abstain_until[group] = left[1]
            log.warning(
                "group %s: this node's erased replica is named a member again: it rejoins in "
                "term %d and votes once it has applied up to %d",
                group,
                replica.term,
                left[1],
            )
        if self.engine.installing(group) or behind:
            replica.abstaining = True
            self._abstaining.add(group)
        self._wake.set()

    @property
    def log_member_groups(self) -> int:
        """Groups in which this node is a log-only member."""
        return len(self._log_only)

    def members(self, group: GroupId) -> Members | None:
        """The group's membership as this replica's log says (uncommitted changes
        included: a membership takes effect when appended)."""
        replica = self.multi.replicas.get(group)
        return dict(replica.members) if replica is not None else None

    def change_membership(self, group: GroupId, members: Members) -> None:
        """Propose one membership change (add or remove one member) on the leader;
        raises NotLeader or MembershipChangeRefused."""
        self.multi.propose_membership(group, members, self._clock())
        self._wake.set()

    def committed_members(self, group: GroupId) -> Members:
        """The group's membership as of this replica's commit index (what no leader
        change can undo); empty if the group is not hosted here."""
        replica = self.multi.replicas.get(group)
        return replica.log.members_at(replica.commit) if replica is not None else {}

    def membership_settled(self, group: GroupId) -> bool:
        """Whether the group's newest membership change is committed (the next may go)."""
        replica = self.multi.replicas.get(group)
        return replica is not None and replica.log.newest_membership_index() <= replica.commit

    def remove_group(self, group: GroupId) -> None:
        self.multi.remove_group(group)
        self._log_only.discard(group)
        self._sealing.discard(group)
        self._split_entries.pop(group, None)
        self._deferred_commits.pop(group, None)
        self._abstaining.discard(group)
        self._abstain_until.pop(group, None)
        self._unsaved_hard_states.discard(group)
        # An install under way ends on its own (the engine makes an erasure wait for it);
        # what the group held back is dropped with it.
        self._installs.pop(group, None)
        self._held.pop(group, None)
        self._released = [rd for rd in self._released if rd.group != group]
        for held in (self._staging, self._staged):
            staging = held.pop(group, None)
            if staging is not None:
                staging.close()
        for key in [k for k in self._proposals if k[0] == group]:
            future = self._proposals.pop(key)[1]
            if not future.done():
                future.set_exception(NotLeader(None))

    def _persisted(self, group: GroupId, members: Members) -> PersistedState:
        hard_state = self.engine.hard_state(group)
        if hard_state is None:
            # The group's first start here. Data the replica already holds is its log's
            # base, so a member whose log starts below it is sent a snapshot, never only
            # the entries after it: a split child's (its parent's data, which index 1 term
            # 1 stands for), or a single replica's own writes, made outside consensus
            # (local entries, term 1) before its replication factor was raised. Its
            # entries continue from there: none of them is taken for one already applied.
            index, term = self.engine.applied_position(group)
            if index == 0:
                return bootstrap_state(members)
            return PersistedState(HardState(), snapshot_meta(index, term, members), [])
        index, term = self.engine.applied_position(group)
        entries = self.engine.read_entries(group, index + 1, self.engine.last_index(group))
        tail = self.engine.take_applied_tail(group)
        if tail:
            # The log reaches back before the applied index (entries the WAL still holds):
            # the core hands them to `_apply` as committed again, which skips them.
            base = tail[0]
            hard_state = dataclasses.replace(hard_state, commit=max(hard_state.commit, index))
            return PersistedState(
                hard_state, snapshot_meta(base.index, base.term, members), tail[1:] + entries
            )
        return PersistedState(hard_state, snapshot_meta(index, term, members), entries)

    def leadership(self, group: GroupId) -> Leadership | None:
        replica = self.multi.replicas.get(group)
        if replica is None:
            return None
        last = replica.log.last_index
        lag = {peer: last - pr.match for peer, pr in replica.progress.items()} if replica.is_leader else {}
        return Leadership(
            group,
            replica.leader,
            replica.term,
            replica.is_leader,
            replica.has_lease(self._clock()),
            replica.commit,
            self.engine.applied_index(group),
            lag,
        )

    # --- the data path --------------------------------------------------------------

    def hosts(self, group: GroupId) -> bool:
        return group in self.multi.replicas

    def is_leader(self, group: GroupId) -> bool:
        replica = self.multi.replicas.get(group)
        return replica is not None and replica.is_leader

    def ready_to_plan(self, group: GroupId) -> bool:
        """Whether this leader may plan writes from its local state: it has applied
        every entry of earlier terms (up to its own first entry, the NOOP it appended on
        election). Before that, a conditional write planned here could miss a write the
        previous leader committed: a lost update. Its own later entries are staged
        (`Engine.stage`) when proposed, so planning sees them before they apply."""
        replica = self.multi.replicas.get(group)
        if replica is None or not replica.is_leader:
            return False
        start = self._term_start.get(group)
        if start is None or start[0] != replica.term:
            # First look in this term: no client proposal yet (submit asks this first),
            # so the log ends at the election's NOOP.
            start = self._term_start[group] = (replica.term, replica.log.last_index)
        return self.engine.applied_index(group) >= start[1]

    def leader_of(self, group: GroupId) -> NodeId | None:
        replica = self.multi.replicas.get(group)
        return replica.leader if replica is not None else None

    def submit(self, group: GroupId, effects: list[Effect]) -> tuple[int, asyncio.Future[None]]:
        """Propose `effects` now (in the caller's synchronous step, so proposals keep
        the order their effects were planned in). Returns the entry's log index (what
        the write's answer reports, so the router can ask later reads for at least that
        much) and a future that completes once the entry is committed (durable on a
        majority) and applied here. Raises NotLeader (with the hint) at once on a
        follower; the future fails with Superseded if a new leader's entry took the
        proposal's place."""
        term, index = self.multi.propose(group, encode_effects(effects), self._clock())
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._proposals[(group, index)] = (term, future, time.perf_counter())
        self._wake.set()
        return index, future

    async def propose(self, group: GroupId, effects: list[Effect]) -> None:
        await self.submit(group, effects)[1]

    async def propose_split(self, group: GroupId, at: int) -> None:
        """Seal `group` and propose its SPLIT entry (cut at key hash `at`); completes
        once the entry is committed and applied here (then `split_entry` names its
        index). Raises NotLeader at once on a follower."""
        self._sealing.add(group)
        term, index = self.multi.propose(group, encode_split(at), self._clock())
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._proposals[(group, index)] = (term, future, time.perf_counter())
        self._wake.set()
        await future

    def split_entry(self, group: GroupId) -> tuple[int, int] | None:
        """(cut, log index) of the group's SPLIT entry if this replica applied one."""
        return self._split_entries.get(group)

    def is_sealed(self, group: GroupId) -> bool:
        """Whether the group takes no more writes: its SPLIT entry was proposed here or
        applied here."""
        return group in self._sealing or group in self._split_entries

    def read_gate(self, group: GroupId) -> asyncio.Future[None]:
        """Completes once a strongly consistent read of `group` may be served here: this
        node leads under a lease (or confirmed its leadership with a heartbeat round)
        and has applied everything committed before the read. Fails with NotLeader."""
        self._next_read += 1
        request_id = self._next_read
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reads[request_id] = (group, future)
        self.multi.read(group, request_id, self._clock())
        self._wake.set()
        return future

    async def read_barrier(self, group: GroupId) -> None:
        await self.read_gate(group)

    def wake(self) -> None:
        """Run the pump soon (after an input made outside `receive`/`submit`)."""
        self._wake.set()

    def receive(self, envelope: Envelope) -> None:
        now = self._clock()
        for message in expand(envelope):
            if message.kind == MsgKind.SNAPSHOT:
                # Only through staging: a position without its data would reset the log
                # of a replica that then holds nothing.
                if message.snapshot_data:
                    self._on_snapshot_chunk(message, now)
            else:
                self.multi.step(message, now)
        self._wake.set()

    # --- snapshots ------------------------------------------------------------------

    def _on_snapshot_chunk(self, m: Message, now: float) -> None:
        """Stage one chunk of a snapshot; once the final one is in, the core gets the
        SNAPSHOT message (and asks, in its next Ready, for the install)."""
        meta = m.snapshot
        if meta is None or m.group not in self.multi.replicas:
            return
        staging = self._staging.get(m.group)
        if staging is None or (staging.index, staging.term) != (meta.index, meta.term):
            if staging is not None:
                staging.close()
            # Unique per staging: two leaders (a resumed one and the next) may both send
            # the snapshot at one (index, term); a shared file would be truncated by the
            # second stream, or deleted with the first staging, under the staged one.
            self._staging_count += 1
            name = f"{m.group.replace('/', '_')}.{meta.index}.{meta.term}.{self._staging_count}"
            staging = self._staging[m.group] = Staging(self._snapshot_dir / name, meta.index, meta.term)
        try:
            staging.add(m.snapshot_data)
        except SnapshotError as exc:
            log.warning("group %s: snapshot at %d dropped: %s", m.group, meta.index, exc)
            staging.close()
            del self._staging[m.group]
            return
        if staging.complete:
            # Kept apart from the chunks of any newer snapshot until the core says
            # whether to install it.
            old = self._staged.pop(m.group, None)
            if old is not None:
                old.close()
            self._staged[m.group] = self._staging.pop(m.group)
            self.multi.step(dataclasses.replace(m, snapshot_data=b""), now)

    def _start_snapshot(self, m: Message) -> None:
        key = (m.group, m.dst)
        if key in self._streams:
            return  # one stream per follower at a time: it carries the newest data anyway
        if self._clock() - self._streamed.get(key, float("-inf")) < SNAPSHOT_RESEND_SECONDS:
            # The follower rejects appends until its install answers: those rejections
            # ask for the snapshot just sent, not for another.
            return
        rng = self._ranges(m.group)
        replica = self.multi.replicas.get(m.group)
        if rng is None or replica is None:
            self.snapshots_unavailable += 1
            return
        progress = replica.progress.get(m.dst)
        if progress is None or progress.match >= replica.log.base.index:
            # The follower's answers in the same round showed it holds the log up to the
            # base already (a rejection from before it caught up asked for this one).
            return
        task = asyncio.get_running_loop().create_task(self._stream_snapshot(m, rng), name=f"snapshot {key}")
        self._streams[key] = task
        task.add_done_callback(lambda _: self._streams.pop(key, None))

    async def _stream_snapshot(self, m: Message, rng: tuple[bytes, bytes]) -> None:
        """Send the group's data as of its applied index to one follower, chunk by chunk
        (paced, so a large partition neither floods the link nor the memory), then the
        final chunk with the snapshot's position. Abandoned if leadership changes."""
        replica = self.multi.replicas[m.group]
        term = replica.term
        index, applied_term, pairs = await self.engine.snapshot_range(m.group, *rng)
        if replica.log.term_at(index) != applied_term:
            self.snapshots_unavailable += 1  # the core's log no longer reaches there
            return
        meta = snapshot_meta(index, applied_term, replica.log.members_at(index))
        if replica.members.get(m.dst) == Role.LOG:
            pairs = iter(())  # a log-only member keeps the position, not the data
        for chunk in chunks(pairs):
            if not replica.is_leader or replica.term != term or m.group not in self.multi.replicas:
                return
            data = encode_chunk(chunk)
            self._send(coalesce([dataclasses.replace(m, term=term, snapshot=meta, snapshot_data=data)]))
            self.snapshot_bytes_sent += len(data)
            if not chunk.final:
                await asyncio.sleep(SNAPSHOT_CHUNK_PAUSE)
        self.snapshots_sent += 1
        self._streamed[(m.group, m.dst)] = self._clock()
        log.info("group %s: snapshot at %d sent to %s", m.group, index, m.dst)

    def _hold_installs(self, readies: list[Ready]) -> list[Ready]:
        """The Readies to handle now: a group's Ready with a snapshot starts its install
        (off the loop) and is held with every later Ready of the group until it ends,
        since all of them build on the installed data (entries after the snapshot, the
        answer that acknowledges it, applies). Order within a group is kept."""
        out: list[Ready] = []
        for rd in readies:
            held = self._held.get(rd.group)
            if held is not None:
                held.append(rd)
            elif rd.snapshot is not None:
                meta, rd.snapshot = rd.snapshot, None
                self._held[rd.group] = [rd]
                # The staged snapshot is the task's from now on (stop closes the others).
                staging = self._staged.pop(rd.group, None)
                task = asyncio.get_running_loop().create_task(
                    self._install(rd.group, meta.index, meta.term, staging), name=f"install {rd.group}"
                )
                self._installs[rd.group] = task
                task.add_done_callback(functools.partial(self._installed, rd.group))
            else:
                out.append(rd)
        return out

    def _installed(self, group: GroupId, task: asyncio.Task[None]) -> None:
        if self._installs.get(group) is not task:
            return  # the group was removed meanwhile
        del self._installs[group]
        held = self._held.pop(group, [])
        if task.cancelled():
            return
        failure = task.exception()
        if failure is not None:
            self._install_failure = failure  # the pump stops on it
        else:
            self._released.extend(held)
        self._wake.set()

    async def _install(self, group: GroupId, index: int, term: int, staging: Staging | None) -> None:
        rng = self._ranges(group)
        try:
            if staging is None or not staging.complete or staging.index != index or rng is None:
                # The core has reset its log to the snapshot: without the data this
                # replica must not serve. A failed WAL is the closest: stop loudly.
                raise RuntimeError(f"group {group}: snapshot at {index} installed by the core but not staged")
            if group in self._log_only:
                self.engine.apply(group, index, [], term=term)
            else:
                self.snapshot_bytes_installed += await self.engine.install_snapshot_off_loop(
                    group, rng[0], rng[1], staging.pairs(), index, term
                )
            self.snapshots_installed += 1
            self._end_abstention(group)
            log.info("group %s: snapshot at %d installed", group, index)
        finally:
            if staging is not None:
                staging.close()

    # --- the pump -------------------------------------------------------------------

    def start(self) -> None:
        self._runner = asyncio.get_running_loop().create_task(self._run(), name="replica-host")

    async def stop(self) -> None:
        for stream in list(self._streams.values()):
            stream.cancel()
        for staging in [*self._staging.values(), *self._staged.values()]:
            staging.close()
        if self._runner is not None:
            if not self._runner.done():
                # The round under way finishes its write first (`stopped_mid_write`),
                # unless the WAL takes longer than a stop should.
                self._stopping = True
                self._wake.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._runner), STOP_ROUND_SECONDS)
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        if self._installs:
            # Not cancelled: the thread would go on reading the staging file closed here.
            await asyncio.wait(list(self._installs.values()))
        for _, future, _ in self._proposals.values():
            if not future.done():
                future.set_exception(NotLeader(None))
        self._flush_deferred_commits(force=True)
        if self._unawaited:
            await asyncio.wait(list(self._unawaited), timeout=5)

    async def _run(self) -> None:
        interval = self.config.heartbeat_interval * TICK_FRACTION
        # asyncio.timeout, not wait_for: Python 3.11's wait_for drops a cancellation that
        # arrives as the event is set, and this loop then ran on and stop() waited forever.
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            now = self._clock()
            self.multi.tick(now, self.loop_lag.sample(now))
            try:
                await self.pump()
                self._flush_deferred_commits(force=False)
            except asyncio.CancelledError:
                raise
            except Exception:  # a failed WAL: nothing more is acknowledged
                log.exception("replication pump failed")
                raise

    async def pump(self) -> None:
        """Handle every round of output the core has (until it has none)."""
        for _ in range(1000):  # bounded: each round is followed by at most a few more
            if self._install_failure is not None:
                raise self._install_failure
            released, self._released = self._released, []
            readies = self._hold_installs([*released, *self.multi.ready()])
            if not readies:
                return
            # A leader's appends and heartbeats leave before its own write, which then
            # runs beside the followers' (`SENDABLE_BEFORE_PERSIST`; docs/benchmarks.md,
            # round 15). The rounds go one at a time, so what a later one commits was
            # written here first.
            early = SENDABLE_BEFORE_PERSIST
            self._send(coalesce([m for rd in readies for m in rd.messages if m.kind in early]))
            try:
                await self._persist(readies)
            except BaseException:  # cancelled by a stop, or the WAL failed
                self.stopped_mid_write = True
                raise
            self._send(coalesce([m for rd in readies for m in self._sendable(rd) if m.kind not in early]))
            for rd in readies:
                self._apply(rd)
            self._serve_reads(readies)

    async def _persist(self, readies: list[Ready]) -> None:
        writes: list[tuple[GroupId, list[Entry], HardState | None]] = []
        for rd in readies:
            hard_state = rd.hard_state
            if rd.group in self._unsaved_hard_states:
                self._unsaved_hard_states.discard(rd.group)
                replica = self.multi.replicas.get(rd.group)
                if hard_state is None and replica is not None:
                    hard_state = replica.hard_state()
            if hard_state is not None and not rd.entries and rd.snapshot is None and self._commit_only(rd):
                self._defer_commit(rd.group, hard_state)
                continue
            if rd.entries or hard_state is not None:
                # A deferred commit index of the group rides along (a newer hard state
                # replaces it).
                deferred = self._deferred_commits.pop(rd.group, None)
                writes.append((rd.group, rd.entries, hard_state if hard_state is not None else deferred))
        if writes:
            # Every group's records, and the other groups' deferred commit indexes, in one
            # WAL append: one batch, one fsync, one future (no task per group).
            writes.extend((group, [], state) for group, state in self._deferred_commits.items())
            self._deferred_commits = {}
            await self.engine.append_groups(writes)

    def _defer_commit(self, group: GroupId, hard_state: HardState) -> None:
        """Keep a commit-only hard state for the node's next WAL batch instead of making
        a batch (and an fsync) of its own: under load every round has entries to write,
        and a leader's commit notice otherwise cost each replica a second fsync per round.
        Raft needs the commit index durable for nothing (`_commit_only`)."""
        if not self._deferred_commits:
            self._deferred_since = self._clock()
        self._deferred_commits[group] = hard_state

    def _flush_deferred_commits(self, force: bool) -> None:
        """Write the deferred commit indexes (not awaited): at once with other writes or
        at stop (`force`), else once they have waited a tick (an idle node), so a restart
        re-applies little."""
        if not self._deferred_commits:
            return
        if (
            not force
            and self._clock() - self._deferred_since < self.config.heartbeat_interval * TICK_FRACTION
        ):
            return
        states, self._deferred_commits = self._deferred_commits, {}
        self._write_unawaited(
            self.engine.append_groups([(group, [], state) for group, state in states.items()])
        )

    def _commit_only(self, rd: Ready) -> bool:
        """Whether the round's hard state differs from the persisted one only in its
        commit index. Raft needs that durable for nothing (a restarted replica learns the
        commit again from the leader; etcd-raft's MustSync), so it is written later and not
        waited for: the committed entries are applied, and a write answered, without a
        second fsync, and a follower applies the moment it hears of a commit (fresh
        eventual reads). Term and vote changes are always written and waited for."""
        persisted = self.engine.hard_state(rd.group)
        hs = rd.hard_state
        # The leader named is a hint, except that a leader giving up its term (a
        # transfer) must have that on disk before its TIMEOUT_NOW leaves (`Replica.
        # _leader_to_keep`).
        me = self.node_id
        return (
            hs is not None
            and persisted is not None
            and (hs.term, hs.vote) == (persisted.term, persisted.vote)
            and (hs.leader == me) == (persisted.leader == me)
        )

    def _write_unawaited(self, write: Coroutine[Any, Any, list[list[int]]]) -> None:
        # A task started now reaches the WAL before any later round's write (tasks run in
        # creation order), so a group's hard states stay in order in the log.
        task = asyncio.get_running_loop().create_task(write)
        self._unawaited.add(task)
        task.add_done_callback(self._written)

    def _written(self, task: asyncio.Task[list[list[int]]]) -> None:
        self._unawaited.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # The WAL is failed: the next awaited write fails too and stops the pump.
            log.error("writing a commit index failed: %r", task.exception())

    def _sendable(self, rd: Ready) -> list[Message]:
        out: list[Message] = []
        for m in rd.messages:
            if m.kind == MsgKind.SNAPSHOT and not m.snapshot_data:
                self._start_snapshot(m)  # the data goes in chunks, the position last
                continue
            out.append(m)
        return out

    def _apply(self, rd: Ready) -> None:
        if rd.group in self._log_only:
            self._advance_log_member(rd.group)
            return
        committed = rd.committed
        if not committed:
            return
        # The round's committed entries go into RocksDB as one batch (their effects in
        # log order, then the last one's position): atomic, and one write, not one per entry.
        applied = self.engine.applied_index(rd.group)
        effects: list[Effect] = []
        last = None
        for entry in committed:
            # Every committed entry is read (a SPLIT entry seals the group even when
            # replayed), but only those above the applied index are applied.
            entry_effects = self._effects_of(rd.group, entry.index, entry.kind, entry.data)
            if entry.index > applied:
                effects.extend(entry_effects)
                last = entry
        if last is not None:
            self.engine.apply(rd.group, last.index, effects, term=last.term)
            if self._abstaining:
                self._end_abstention(rd.group)
        for entry in committed:
            held = self._proposals.pop((rd.group, entry.index), None)
            if held is not None and not held[1].done():
                if held[0] == entry.term:
                    self.commit_latency.observe(time.perf_counter() - held[2])
                    held[1].set_result(None)
                else:
                    held[1].set_exception(Superseded(f"entry {entry.index} of {rd.group} was replaced"))

    def _end_abstention(self, group: GroupId) -> None:
        """The replica votes again once what it lost is back: the engine's install mark
        gone, and, for a replica added back after its erasure, its old log's length applied."""
        if (
            group in self._abstaining
            and not self.engine.installing(group)
            and self.engine.applied_index(group) >= self._abstain_until.get(group, 0)
        ):
            self._abstaining.discard(group)
            self._abstain_until.pop(group, None)
            replica = self.multi.replicas.get(group)
            if replica is not None:
                replica.abstaining = False
            log.info("group %s: holds what it had acknowledged again; it votes again", group)

    def _effects_of(self, group: GroupId, index: int, kind: EntryKind, data: bytes) -> list[Effect]:
        """A committed entry's effects; a SPLIT entry has none and seals the group."""
        if kind != EntryKind.NORMAL:
            return []
        at = decode_split(data)
        if at is None:
            return decode_effects(data)
        self._split_entries.setdefault(group, (at, index))
        return []

    def _advance_log_member(self, group: GroupId) -> None:
        """A log-only member applies nothing, but records how far its log is committed,
        so its WAL records stop holding the log back and a restart starts from there."""
        replica = self.multi.replicas.get(group)
        if replica is None:
            return
        term = replica.log.term_at(replica.commit)
        if term is not None and replica.commit > self.engine.applied_index(group):
            self.engine.apply(group, replica.commit, [], term=term)
            if self._abstaining:
                self._end_abstention(group)

    def _serve_reads(self, readies: list[Ready]) -> None:
        for rd in readies:
            for refused in rd.refused_reads:
                held = self._reads.pop(refused.request_id, None)
                if held is not None and not held[1].done():
                    held[1].set_exception(NotLeader(refused.leader))
            for state in rd.reads:
                held = self._reads.pop(state.request_id, None)
                if held is not None:
                    self._waiting_reads.append((held[0], state.index, held[1]))
        still = []
        for group, index, future in self._waiting_reads:
            if future.done():
                continue
            if self.engine.applied_index(group) >= index:
                future.set_result(None)
            else:
                still.append((group, index, future))
        self._waiting_reads = still
