"""Runs the repair policy (`repair.py`) on the groups this node leads: every pass, for
each led group, it makes the partition object in the control store say what the group
is (serving, joining and log-only members) and proposes at most one membership change.

An added member is written into the partition object *before* the change is proposed:
the node it lands on learns from the object that it hosts the group, and with four
members the quorum needs it, so the sooner it hosts, the shorter commits wait. A removed
member leaves the object only once the change is committed: the removed node stops
hosting and erases its replica (term, vote and log) when it reads the object, so a
removal a new leader's log lacks (the old leader failed before committing it) would
otherwise bring it back as a voter with no memory (docs/replication.md). The leader, not the autoadmin, does this: it is the one that knows within
seconds which members answer (seed 000 section 6), and one leader per group means one
writer per partition object at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from partita.common.partition_map import Partition
from partita.control.model import ReplicaMove
from partita.storage.group_split import PartitionWriter, SplitDriver
from partita.storage.repair import (
    ChangeKind,
    GroupView,
    MembershipChange,
    RepairConfig,
    down_members,
    next_change,
    partition_record,
    replication_config,
    serving,
    surplus_members,
)
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.core import MembershipChangeRefused, NotLeader
from partita.storage.replication.types import GroupId, NodeId

log = logging.getLogger(__name__)

# Seconds between two passes over the led groups.
REPAIR_INTERVAL_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class _QuietView:
    """What a repair pass saw of a quiesced group."""

    partition: Partition
    registered: frozenset[NodeId]
    zones: dict[NodeId, str]
    term: int
    commit: int
    draining: frozenset[NodeId]
    move_to: NodeId | None


class RepairDriver:
    def __init__(
        self,
        replicas: ReplicaHost,
        store: PartitionWriter,
        config: RepairConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        draining: Callable[[], frozenset[NodeId]] = frozenset,
        table_nodes: Callable[[int], frozenset[NodeId]] = lambda table_id: frozenset(),
        moves: Callable[[], Mapping[GroupId, ReplicaMove]] = dict,
        exposure: Callable[[int, frozenset[NodeId], Sequence[NodeId]], Mapping[NodeId, int]] = (
            lambda table_id, shard, candidates: {}
        ),
    ) -> None:
        self.replicas = replicas
        # The nodes each table's partitions are on, as this node last read them: a new
        # member goes on one of them where it can (`repair._best_candidate`).
        self.table_nodes = table_nodes
        # Where it cannot: how many other tables' partitions each candidate would take
        # past the shard bound, with the table's shard and candidates given
        # (`shard_bound.added_exposure` over every table this node has read).
        self.exposure = exposure
        # Nodes being drained (`partita node drain`), as the control store says.
        self.draining = draining
        # Replicas the autoadmin asked to move off busy nodes, by group (migration).
        self.moves = moves
        self.store = store
        self.config = config or RepairConfig()
        self._clock = clock
        self._added_at: dict[tuple[GroupId, NodeId], float] = {}
        self._started = clock()
        # Members judged down, by group, with when.
        self._down: dict[GroupId, dict[NodeId, float]] = {}
        # When each group this node leads was first seen awake, since it last quiesced.
        self._awake_since: dict[GroupId, float] = {}
        self._written: dict[GroupId, Partition] = {}
        # Membership changes proposed, by (kind, role): the metrics read them.
        self.changes: dict[tuple[str, str], int] = {}
        # A partition marked for a split is split, not repaired: its leader proposes the
        # SPLIT entry and publishes its index; nothing else writes its object.
        self.splits = SplitDriver(replicas, store)
        # Quiesced groups a pass found nothing to do for, with what that pass saw. Such a
        # group's repair depends on nothing else (a quiesced group has no heartbeats to
        # judge its members by, only their nodes' registrations), so later passes skip
        # it until one of these moves: at 4,000 groups a node, repairing every led group
        # twice a second was most of an idle node's CPU.
        self._quiet: dict[GroupId, _QuietView] = {}

    async def run(
        self,
        groups: Callable[[], Mapping[GroupId, tuple[int, Partition]]],
        zones: Callable[[], Mapping[NodeId, str]],
        registered: Callable[[], frozenset[NodeId]],
    ) -> None:
        while True:
            try:
                await self.pass_once(groups(), zones(), registered())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is down: try again next pass
                log.warning("repair pass failed: %s", exc)
            await asyncio.sleep(REPAIR_INTERVAL_SECONDS)

    async def pass_once(
        self,
        groups: Mapping[GroupId, tuple[int, Partition]],
        zones: Mapping[NodeId, str],
        registered: frozenset[NodeId],
    ) -> None:
        for group in self._quiet.keys() - groups.keys():
            del self._quiet[group]
        for group in self._down.keys() - groups.keys():
            del self._down[group]
        for group in self._awake_since.keys() - groups.keys():
            del self._awake_since[group]
        zones_now = dict(zones)
        drained = self.draining()
        moves = self.moves()
        for group, (table_id, partition) in list(groups.items()):
            if not self.replicas.is_leader(group):
                continue
            if partition.split_at or self.replicas.is_sealed(group):
                await self.splits.drive(group, table_id, partition)
                continue
            replica = self.replicas.multi.replicas[group]
            # A member moving off a busy node leaves as a draining node's would, for this
            # group alone; once it has left, the move is over (the autoadmin forgets it).
            draining, move_to = drained, None
            move = moves.get(group)
            if move is not None and move.source in replica.members:
                draining, move_to = drained | {move.source}, move.target
            # Only a group quiet before this pass's repair is remembered, with what the
            # repair saw (an awake group is repaired every pass: nothing to build).
            seen = (
                _QuietView(partition, registered, zones_now, replica.term, replica.commit, draining, move_to)
                if replica.quiesced
                else None
            )
            if seen is not None and self._quiet.get(group) == seen:
                continue
            acted = await self._repair(group, table_id, partition, zones, registered, draining, move_to)
            if (
                seen is not None
                and replica.quiesced
                and not acted
                and self.replicas.membership_settled(group)
            ):
                self._quiet[group] = seen
            else:
                self._quiet.pop(group, None)

    def view(
        self,
        group: GroupId,
        zones: Mapping[NodeId, str],
        registered: frozenset[NodeId],
        draining: frozenset[NodeId] = frozenset(),
        shard: frozenset[NodeId] = frozenset(),
        move_to: NodeId | None = None,
    ) -> GroupView:
        replica = self.replicas.multi.replicas[group]
        now = self._clock()
        members = dict(replica.members)
        node = self.replicas.node_id
        if now - self._started < self.config.registration_grace:
            # Registrations this node has not read yet (every pod starting at once) are
            # no sign of a dead member: only silence is, for now.
            registered = registered | frozenset(members)
        heard = {
            peer: max(
                pr.last_heard, self._added_at.get((group, peer), float("-inf")) + self.config.grace_after_add
            )
            for peer, pr in replica.progress.items()
        }
        # A member added a moment ago is given its grace even before it answers.
        for (g, peer), at in self._added_at.items():
            if g == group and peer not in heard:
                heard[peer] = at + self.config.grace_after_add
        down = down_members(members, node, registered | {node}, heard, replica.quiesced, now, self.config)
        # A member judged down stays down until it is heard again: a group that quiesces
        # meanwhile (its dead member's registration still alive) must not undo a repair
        # under way, then redo it once active again.
        # Only an answer counts as heard again: a leader newly elected, or woken from
        # quiescence, grants every member a fresh `last_heard`, a dead one too.
        answered = {peer: pr.last_answer for peer, pr in replica.progress.items()}
        judged = self._down.setdefault(group, {})
        for peer in list(judged):
            if peer not in members or answered.get(peer, float("-inf")) > judged[peer]:
                del judged[peer]
        for peer in down:
            judged.setdefault(peer, now)
        down = frozenset(judged)
        if replica.quiesced:
            self._awake_since.pop(group, None)
            awake_for = 0.0
        else:
            awake_for = now - self._awake_since.setdefault(group, now)
        return GroupView(
            leader=node,
            members=members,
            commit=replica.commit,
            match={peer: pr.match for peer, pr in replica.progress.items()},
            down=down,
            candidates=sorted(
                (n, z) for n, z in zones.items() if n in registered and n not in members and n not in draining
            ),
            zones=zones,
            awake_for=awake_for,
            draining=draining & frozenset(members),
            shard=shard,
            move_to=move_to,
        )

    async def _repair(
        self,
        group: GroupId,
        table_id: int,
        partition: Partition,
        zones: Mapping[NodeId, str],
        registered: frozenset[NodeId],
        draining: frozenset[NodeId] = frozenset(),
        move_to: NodeId | None = None,
    ) -> bool:
        """Whether it wrote the partition object or proposed a change."""
        view = self.view(group, zones, registered, draining, self.table_nodes(table_id), move_to)
        config = replication_config(self.config, partition)
        ok = serving(view, config)
        settled = self.replicas.membership_settled(group)
        # Until the newest change commits, a member it removes stays in the object (an
        # added one is in it already, written before the proposal).
        recorded = view.members if settled else {**self.replicas.committed_members(group), **view.members}
        record = partition_record(partition, recorded, ok, view.leader)
        wrote = record != partition
        if wrote:
            await self._write(table_id, group, record)
        if not settled:
            return wrote  # one change at a time: the previous one is not committed yet
        change = next_change(view, config)
        if change is not None and change.kind == ChangeKind.ADD and change.node not in view.shard:
            # Leaving the table's shard (rare: a repair or a move with no free node of it),
            # so only now is every other table's placement looked at.
            outside = [node for node, _ in view.candidates if node not in view.shard]
            view = replace(view, exposure=self.exposure(table_id, view.shard, outside))
            change = next_change(view, config)
        if change is None:
            if view.leader in view.draining:
                return self._hand_over(group, view, ok) or wrote
            if surplus_members(view, config):
                self._keep_awake(group)
            return wrote
        if change.kind == ChangeKind.ADD:
            grown = partition_record(record, change.applied_to(view.members), ok, view.leader)
            await self._write(table_id, group, grown)
            self._added_at[(group, change.node)] = self._clock()
        self._propose(group, view, change)
        return True

    def _hand_over(self, group: GroupId, view: GroupView, ok: list[NodeId]) -> bool:
        """A draining leader whose group has its replacements serving hands leadership
        to the most up-to-date member that stays; the new leader removes it."""
        if self.replicas.multi.replicas[group].transfer_target is not None:
            return True  # a hand-over under way
        stays = [(view.match.get(n, 0), n) for n in ok if n != view.leader and n not in view.draining]
        if not stays:
            return False
        target = max(stays)[1]
        try:
            self.replicas.multi.transfer_leadership(group, target, self._clock())
        except (NotLeader, ValueError):
            return False
        self.replicas.wake()
        log.info("group %s: leadership handed to %s (its member here is leaving)", group, target)
        return True

    def _keep_awake(self, group: GroupId) -> None:
        """A group due to shed a member is kept awake (a strongly consistent read is
        client work), so its members' silence shows who is down before one is removed."""
        try:
            gate = self.replicas.read_gate(group)
        except Exception:  # the group is gone: nothing to keep awake
            return
        gate.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def _write(self, table_id: int, group: GroupId, record: Partition) -> None:
        if self._written.get(group) == record:
            return
        await self.store.change_partitions(table_id, [record], [])
        self._written[group] = record

    def _propose(self, group: GroupId, view: GroupView, change: MembershipChange) -> None:
        members = self.replicas.members(group)
        if members != view.members or not self.replicas.is_leader(group):
            return  # the group moved on while the partition object was written
        try:
            self.replicas.change_membership(group, change.applied_to(view.members))
        except (NotLeader, MembershipChangeRefused) as exc:
            log.info("group %s: %s %s not proposed: %s", group, change.kind.value, change.node, exc)
            return
        key = (change.kind.value, change.role.name.lower())
        self.changes[key] = self.changes.get(key, 0) + 1
        log.info(
            "group %s: %s %s member %s (down: %s)",
            group,
            change.kind.value,
            change.role.name.lower(),
            change.node,
            ", ".join(sorted(view.down)) or "none",
        )
