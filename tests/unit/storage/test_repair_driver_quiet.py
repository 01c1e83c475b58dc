"""The repair driver looks at a quiesced, healthy group once, not on every pass: at
thousands of groups a node, repairing each twice a second was most of an idle node's
CPU. It looks again as soon as anything its repair depends on moves: a node's
registration (the only sign of a dead member a quiesced group has), the partition
object, or the group's log.

Three in-process nodes: real engines, the real node-pair transport on 127.0.0.1, the
real consensus core and repair driver; the control store records what is written."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from partita.common.partition_map import Partition
from partita.control.model import ReplicaMove
from partita.storage.effects import Effect, Kind
from partita.storage.repair import ChangeKind, GroupView, RepairConfig, next_change
from partita.storage.repair_driver import RepairDriver
from partita.storage.replication.config import ReplicationConfig
from partita.storage.replication.types import GroupId, NodeId, Role
from tests.unit.storage.polling import wait_until
from tests.unit.storage.test_removal_safety import TABLE, Recorder
from tests.unit.storage.test_replica_host import GROUP, NODES, Cluster, three_nodes

END = 2**64
SPARE = "node-d"  # registered, outside the group: where a log member can go
ZONES = {n: f"zone-{n}" for n in (*NODES, SPARE)}
CONFIG = ReplicationConfig(
    heartbeat_interval=0.05, election_timeout=1.5, lease_duration=1.2, quiesce_after=0.3
)


class CountingDriver(RepairDriver):
    """Counts the groups each pass actually looked at."""

    looked = 0

    def view(
        self,
        group: GroupId,
        zones: Mapping[NodeId, str],
        registered: frozenset[NodeId],
        draining: frozenset[NodeId] = frozenset(),
        shard: frozenset[NodeId] = frozenset(),
        move_to: NodeId | None = None,
    ) -> GroupView:
        self.looked += 1
        return super().view(group, zones, registered, draining, shard, move_to)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with three_nodes(tmp_path, CONFIG) as c:
        yield c


async def test_a_quiesced_healthy_group_is_repaired_once_until_what_repair_depends_on_moves(
    cluster: Cluster,
) -> None:
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    await wait_until(lambda: replica.quiesced)
    partition = Partition("p0", 0, END, NODES, leader.node)
    store = Recorder()
    # Judged by registrations from the start (no grace for registrations not yet read).
    driver = CountingDriver(leader.host, store, RepairConfig(registration_grace=0.0))
    everyone = frozenset((*NODES, SPARE))

    async def passes(n: int, registered: frozenset[str] = everyone, p: Partition = partition) -> int:
        before = driver.looked
        for _ in range(n):
            await driver.pass_once({GROUP: (TABLE, p)}, ZONES, registered)
        return driver.looked - before

    assert await passes(3) == 1  # looked at once, then skipped
    assert store.written == []

    # A write wakes the group: looked at while awake, once more when quiet again.
    await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k", b"v")]), 10)
    assert await passes(1) == 1
    await wait_until(lambda: replica.quiesced)
    assert await passes(3) == 1

    # The partition object changed under it (another writer): looked at again.
    moved = Partition("p0", 0, END, tuple(reversed(NODES)), leader.node)
    assert await passes(2, p=moved) == 1

    # A drain mark moved (here on a node outside the group): looked at again, once.
    driver.draining = lambda: frozenset({SPARE})
    assert await passes(2, p=moved) == 1
    driver.draining = frozenset

    # A follower's node lost its registration: the next pass repairs around it at once,
    # adding a log member on the spare node.
    gone = max(n for n in NODES if n != leader.node)
    assert await passes(1, registered=everyone - {gone}) == 1
    assert store.written and store.written[-1].log_replicas == (SPARE,)
    assert leader.host.members(GROUP) == {**{n: Role.FULL for n in NODES}, SPARE: Role.LOG}


async def test_a_member_whose_registration_was_not_read_yet_is_not_repaired_around_at_start(
    cluster: Cluster,
) -> None:
    # Every pod starting at once (Kubernetes): the leader's first passes may come before
    # it has read its peers' registrations. Within the grace that is no sign of death.
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    await wait_until(lambda: replica.quiesced)
    store = Recorder()
    driver = RepairDriver(leader.host, store)  # the default grace: 10 s from its start
    partition = Partition("p0", 0, END, NODES, leader.node)
    for _ in range(3):
        await driver.pass_once({GROUP: (TABLE, partition)}, ZONES, frozenset({leader.node, SPARE}))
    assert store.written == []
    assert leader.host.members(GROUP) == {n: Role.FULL for n in NODES}


async def test_a_member_judged_down_stays_down_while_its_group_quiesces(cluster: Cluster) -> None:
    # Judged down by silence while the group was active, a member is not judged up again
    # by its registration (alive for its TTL) once the group quiesces: the repair under
    # way is not undone. Heard again, it is up.
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    driver = RepairDriver(leader.host, Recorder(), RepairConfig(registration_grace=0.0))
    silent = max(n for n in NODES if n != leader.node)
    everyone = frozenset((*NODES, SPARE))
    replica.quiesced = False
    replica.progress[silent].last_heard = -1e9
    assert silent in driver.view(GROUP, ZONES, everyone).down
    replica.quiesced = True
    assert silent in driver.view(GROUP, ZONES, everyone).down
    replica.progress[silent].last_answer = 1e12  # an answer, later than the judgement
    assert silent not in driver.view(GROUP, ZONES, everyone).down


async def test_a_member_judged_down_stays_down_when_its_leader_grants_every_member_a_fresh_start(
    cluster: Cluster,
) -> None:
    # A leader newly elected, or waking its quiesced group, sets every member's
    # `last_heard` to now, a dead one's too. That is no answer: the dead member stays
    # judged down, so the log member added for it is not removed as surplus. Before, in
    # a Kubernetes repair test, the leader lost its term once the log member was added,
    # was elected again, judged the dead member up, removed the log member, then added
    # it back: an erased replica rejoining, and the group stalled.
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    dead = max(n for n in NODES if n != leader.node)
    await cluster.stop(dead)
    config = RepairConfig(down_after=0.5, registration_grace=0.0, grace_after_add=0.5)
    driver = RepairDriver(leader.host, Recorder(), config)
    partition = Partition("p0", 0, END, NODES, leader.node)
    everyone = frozenset((*NODES, SPARE))  # the dead node's registration is still alive
    await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k", b"v")]), 10)
    for _ in range(100):  # awake: the dead member's silence is judged, a log member added
        await driver.pass_once({GROUP: (TABLE, partition)}, ZONES, everyone)
        if leader.host.members(GROUP).get(SPARE) == Role.LOG:
            break
        await asyncio.sleep(0.1)
    assert leader.host.members(GROUP).get(SPARE) == Role.LOG
    # (node-d runs nothing here, so the change never commits: the view alone is checked.)
    for pr in replica.progress.values():
        pr.last_heard = driver._clock()  # the fresh start, as `_take_leadership` gives it
    view = driver.view(GROUP, ZONES, everyone)
    assert dead in view.down
    change = next_change(view, config)
    assert change is None or not (change.kind == ChangeKind.REMOVE and change.node == SPARE), change


async def test_a_move_wakes_the_quiet_group_and_builds_a_member_on_its_target(cluster: Cluster) -> None:
    # Migration: the autoadmin asks for a follower's replica to move to the spare node;
    # the next pass looks at the quiet group again and adds a full member there (the
    # zone rule and ids alone would pick the spare too, so a second spare, first by id,
    # shows the move's target is followed).
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    await wait_until(lambda: replica.quiesced)
    store = Recorder()
    driver = CountingDriver(leader.host, store, RepairConfig(registration_grace=0.0))
    partition = Partition("p0", 0, END, NODES, leader.node)
    first_by_id = "node-0"
    zones = {**ZONES, first_by_id: "zone-0"}
    everyone = frozenset((*NODES, SPARE, first_by_id))
    for _ in range(2):
        await driver.pass_once({GROUP: (TABLE, partition)}, zones, everyone)
    assert store.written == []
    source = max(n for n in NODES if n != leader.node)
    driver.moves = lambda: {GROUP: ReplicaMove(TABLE, "p0", source, SPARE, 0.0)}
    before = driver.looked
    await driver.pass_once({GROUP: (TABLE, partition)}, zones, everyone)
    assert driver.looked == before + 1
    assert store.written and store.written[-1].joining == (SPARE,)
    assert leader.host.members(GROUP) == {**{n: Role.FULL for n in NODES}, SPARE: Role.FULL}


async def test_a_leader_moving_off_a_busy_node_hands_its_leadership_over(cluster: Cluster) -> None:
    # Migration of the leader's own replica: a leader never removes itself, so once
    # enough other members serve it hands over and its successor removes it. A
    # replication factor of 2 stands in for the target built and serving (node-d runs
    # nothing here), so the two followers are enough.
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    await wait_until(lambda: replica.quiesced)
    store = Recorder()
    driver = RepairDriver(
        leader.host,
        store,
        RepairConfig(registration_grace=0.0),
        moves=lambda: {GROUP: ReplicaMove(TABLE, "p0", leader.node, SPARE, 0.0)},
    )
    partition = Partition("p0", 0, END, NODES, leader.node, replication_factor=2)
    await driver.pass_once({GROUP: (TABLE, partition)}, ZONES, frozenset((*NODES, SPARE)))
    target = replica.transfer_target
    assert target is not None and target != leader.node
    successor = cluster.members[target].host.multi.replicas[GROUP]
    await wait_until(lambda: successor.is_leader and not replica.is_leader)
    assert store.written == []  # no member added: the followers serve, the leader left first
