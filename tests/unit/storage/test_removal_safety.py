"""A removed member learns its removal only once the removal is committed, and a node
named a member of a group whose replica it erased rejoins with its old term and vote,
outside its own membership, and does not vote before it holds its old log again.

Three in-process nodes: real engines (RocksDB and the WAL in tmp_path), the real
node-pair transport on 127.0.0.1, the real consensus core and repair driver; the
control store is a recorder of the partition objects written."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from partita.common.partition_map import Partition
from partita.control.model import PartitionStats, TableRecord
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.node import NodeState, erase_removed, sync_groups
from partita.storage.repair_driver import RepairDriver
from partita.storage.replication.config import ReplicationConfig
from partita.storage.replication.types import HardState, Role
from tests.unit import records
from tests.unit.storage.polling import wait_until
from tests.unit.storage.test_replica_host import GROUP, NODES, Cluster, Member, three_nodes

END = 2**64
TABLE = 7
# An election timeout long enough that a leader cut off from both followers still leads
# while the test proposes and runs a repair pass on a loaded machine.
CONFIG = ReplicationConfig(
    heartbeat_interval=0.05, election_timeout=1.5, lease_duration=1.2, quiesce_after=60
)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with three_nodes(tmp_path, CONFIG) as c:
        yield c


class Recorder:
    """The control store's partition objects, as the repair driver writes them."""

    def __init__(self) -> None:
        self.written: list[Partition] = []

    async def change_partitions(
        self,
        table_id: int,
        put: Sequence[Partition],
        remove: Sequence[str],
        stats: Sequence[tuple[str, PartitionStats]] = (),
    ) -> None:
        self.written.extend(put)


def tables(p0: Partition) -> list[TableRecord]:
    return [records.table_record(p0, name="t", table_id=TABLE)]


async def repair_pass(leader: Member, partition: Partition) -> Partition:
    """The partition object as the leader's repair pass rewrites it (before any next
    change it may propose and write)."""
    store = Recorder()
    driver = RepairDriver(leader.host, store)
    await driver.pass_once({GROUP: (TABLE, partition)}, {n: f"zone-{n}" for n in NODES}, frozenset(NODES))
    return store.written[0] if store.written else partition


async def test_a_removal_lost_with_its_leader_never_reaches_the_partition_object_and_nothing_is_erased(
    cluster: Cluster,
) -> None:
    leader = await cluster.leader(seconds=10.0)
    await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k", b"v")]), 10)
    await wait_until(lambda: all(m.engine.get(b"k") == b"v" for m in cluster.members.values()))
    kept, removed = sorted(n for n in NODES if n != leader.node)
    voted = cluster.members[removed].engine.hard_state(GROUP)
    assert voted is not None and voted.vote == leader.node
    partition = Partition("p0", 0, END, NODES, leader.node)

    # Both followers go away: the removal is in the leader's log only, never committed.
    await cluster.stop(kept)
    await cluster.stop(removed)
    leader.host.change_membership(GROUP, {n: Role.FULL for n in NODES if n != removed})
    written = await repair_pass(leader, partition)
    assert not leader.host.membership_settled(GROUP)
    assert removed in written.replicas  # the object still names it: it keeps its replica

    # The leader fails before committing; the new one's log lacks the removal.
    await cluster.stop(leader.node)
    await cluster.start(kept)
    back = await cluster.start(removed)
    successor = await cluster.leader(seconds=10.0)
    assert removed in (successor.host.members(GROUP) or {})
    rewritten = await repair_pass(successor, written)
    assert removed in rewritten.replicas

    # The removed node, reading the object, keeps hosting: its log, term and vote stay.
    state = NodeState(removed, f"zone-{removed}", back.engine)
    state.replicas = back.host
    sync_groups(state, tables(rewritten))
    await erase_removed(state)
    assert back.host.hosts(GROUP) and back.engine.left_replica(GROUP) is None
    after = back.engine.hard_state(GROUP)
    assert after is not None and after.term >= voted.term
    assert after.term > voted.term or after.vote == voted.vote


async def test_a_committed_removal_reaches_the_partition_object(cluster: Cluster) -> None:
    leader = await cluster.leader(seconds=10.0)
    removed = max(n for n in NODES if n != leader.node)
    leader.host.change_membership(GROUP, {n: Role.FULL for n in NODES if n != removed})
    await wait_until(lambda: leader.host.membership_settled(GROUP))
    written = await repair_pass(leader, Partition("p0", 0, END, NODES, leader.node))
    assert removed not in (*written.replicas, *written.joining, *written.log_replicas)


async def test_an_erased_replica_named_a_full_member_again_rejoins_as_a_newcomer_that_abstains(
    cluster: Cluster,
) -> None:
    leader = await cluster.leader(seconds=10.0)
    for i in range(5):
        await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k%d" % i, b"v")]), 10)
    gone = max(n for n in NODES if n != leader.node)
    await wait_until(lambda: cluster.members[gone].engine.get(b"k4") == b"v")
    # Its replica erased (removed, as the node believed), then named a full member
    # again: a leader whose log lacked the removal wrote it back.
    await cluster.stop(gone)
    engine = Engine.open(cluster.root / gone, sync=False)
    held, last = engine.hard_state(GROUP), engine.last_index(GROUP)
    assert held is not None and held.vote is not None and last >= 6
    await engine.erase_group(GROUP)
    assert engine.hard_state(GROUP) is None and engine.applied_index(GROUP) == 0
    assert engine.left_replica(GROUP) == (HardState(held.term, held.vote, 0), last)
    await engine.close()

    back = await cluster.start(gone)  # add_group names it a full member
    replica = back.host.multi.replicas[GROUP]
    assert gone not in (back.host.members(GROUP) or {})  # a newcomer: it cannot campaign
    assert (replica.term, replica.vote) == (held.term, held.vote)  # nor vote twice in a term
    assert replica.abstaining  # nor vote at all with less than it acknowledged
    # A restart once its restored hard state is in the WAL, before it caught up: it
    # still abstains (its hard state is back, not its log).
    await wait_until(lambda: back.engine.hard_state(GROUP) is not None)
    await cluster.stop(gone)
    back = await cluster.start(gone)
    replica = back.host.multi.replicas[GROUP]
    assert (replica.term, replica.vote) == (held.term, held.vote) and replica.abstaining
    # The leader's next append finds its log gone (its rejection): the leader sends the
    # log again and it catches up to where it was, then votes again.
    await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k5", b"v")]), 10)
    await wait_until(lambda: back.engine.applied_index(GROUP) >= last and not replica.abstaining)
    assert back.engine.get(b"k4") == b"v"

    # Its restored term and vote went to the WAL with its first entries: a restart keeps them.
    await cluster.stop(gone)
    reopened = Engine.open(cluster.root / gone, sync=False)
    try:
        state = reopened.hard_state(GROUP)
        assert state is not None and state.term >= held.term
        assert state.term > held.term or state.vote == held.vote
        assert reopened.applied_index(GROUP) >= last
    finally:
        await reopened.close()


async def test_a_node_that_never_held_the_group_has_no_left_replica(tmp_path: Path) -> None:
    engine = Engine.open(tmp_path / "n", sync=False)
    try:
        assert engine.left_replica(GROUP) is None
        await engine.erase_group(GROUP)  # a group it held nothing of: nothing to remember
        assert engine.left_replica(GROUP) is None
    finally:
        await engine.close()


async def test_an_erased_log_member_added_back_catches_up_and_the_group_commits_without_a_dead_member(
    cluster: Cluster,
) -> None:
    # A log member removed (its dead full member came back, or so its leader judged) and
    # added back once a full member is down: it rejoins as a newcomer that abstains, is
    # sent a snapshot (the leader's log no longer reaches its start), and then counts
    # towards the quorum of 3 of 4 that every write now needs.
    leader = await cluster.leader(seconds=10.0)
    full = {n: Role.FULL for n in NODES}

    async def write(key: bytes) -> None:
        await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, key, b"v")]), 10)

    for i in range(5):
        await write(b"k%d" % i)
    spare = await cluster.start("node-d", log_only=True)
    leader.host.change_membership(GROUP, {**full, "node-d": Role.LOG})
    await wait_until(lambda: leader.host.membership_settled(GROUP))
    await write(b"k5")
    # Removed, and its replica erased, as `sync_groups` and `erase_removed` do.
    leader.host.change_membership(GROUP, full)
    await wait_until(lambda: leader.host.membership_settled(GROUP))
    spare.host.remove_group(GROUP)
    await spare.engine.erase_group(GROUP)
    assert spare.engine.left_replica(GROUP) is not None
    # A full member dies; the log member is added back: 3 of 4 is the quorum.
    dead = max(n for n in NODES if n != leader.node)
    await cluster.stop(dead)
    for i in range(6, 11):
        await write(b"k%d" % i)
    core = leader.host.multi.replicas[GROUP]
    core.compact(core.applied)  # what it lacks is no longer in the leader's log: a snapshot
    cluster.key_range = (b"", b"\xff" * 16)
    spare.host.add_group(GROUP, list(NODES), log_members=["node-d"], newcomer=True)
    leader.host.change_membership(GROUP, {**full, "node-d": Role.LOG})
    await wait_until(lambda: leader.host.membership_settled(GROUP), seconds=10.0)
    await write(b"k11")
    rejoined = spare.host.multi.replicas[GROUP]
    await wait_until(lambda: not rejoined.abstaining and rejoined.commit == core.commit)
