"""A group's leader keeps as many full members as its partition's replication factor
says (a Table's `replicationFactor` on Kubernetes, which an operator can lower or raise):
lowered, its repair removes followers one committed change at a time and writes each
removal into the partition object; the leader stays.

Three in-process nodes: real engines, the real node-pair transport on 127.0.0.1, the
real consensus core and repair driver; the control store records what is written."""

from __future__ import annotations

import asyncio

from partita.common.partition_map import Partition
from partita.storage.effects import Effect, Kind
from partita.storage.repair import RepairConfig
from partita.storage.repair_driver import RepairDriver
from partita.storage.replication.types import Role
from tests.unit.storage.test_removal_safety import TABLE, Recorder
from tests.unit.storage.test_repair_driver_quiet import END, SPARE, ZONES, cluster  # noqa: F401 (its fixture)
from tests.unit.storage.test_replica_host import GROUP, NODES, Cluster


async def test_lowering_the_replication_factor_removes_followers_until_the_leader_is_alone(
    cluster: Cluster,  # noqa: F811
) -> None:
    leader = await cluster.leader(seconds=10.0)
    store = Recorder()
    # A member is judged down after 0.5 s of silence, so a removal waits 0.75 s awake.
    driver = RepairDriver(leader.host, store, RepairConfig(down_after=0.5, registration_grace=0.0))
    everyone = frozenset((*NODES, SPARE))
    partition = Partition("p0", 0, END, NODES, leader.node, replication_factor=2)

    async def repair_until(members: int, p: Partition) -> None:
        for _ in range(400):  # bounded (10 s): the group awake 0.75 s, then a committed change
            await driver.pass_once({GROUP: (TABLE, p)}, ZONES, everyone)
            if len(leader.host.members(GROUP)) == members and leader.host.membership_settled(GROUP):
                await driver.pass_once({GROUP: (TABLE, p)}, ZONES, everyone)  # records it
                return
            await asyncio.sleep(0.025)
        raise AssertionError(f"members {leader.host.members(GROUP)}, want {members}")

    await repair_until(2, partition)
    kept = leader.host.members(GROUP)
    assert leader.node in kept and SPARE not in kept  # nothing was added meanwhile
    assert store.written[-1].replicas == tuple(n for n in NODES if n in kept)

    # The two left still commit: a write is acknowledged.
    await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k", b"v")]), 10)

    await repair_until(1, Partition("p0", 0, END, tuple(kept), leader.node, replication_factor=1))
    assert leader.host.members(GROUP) == {leader.node: Role.FULL}
    assert store.written[-1].replicas == (leader.node,)
    await asyncio.wait_for(leader.host.propose(GROUP, [Effect(Kind.PUT, b"k", b"w")]), 10)

    # Kept at 1: with a spare node registered, later passes add nobody.
    for _ in range(5):
        await driver.pass_once(
            {GROUP: (TABLE, Partition("p0", 0, END, (leader.node,), leader.node, replication_factor=1))},
            ZONES,
            everyone,
        )
    assert leader.host.members(GROUP) == {leader.node: Role.FULL}


async def test_a_partition_without_a_replication_factor_keeps_the_nodes_default(
    cluster: Cluster,  # noqa: F811
) -> None:
    leader = await cluster.leader(seconds=10.0)
    store = Recorder()
    driver = RepairDriver(leader.host, store, RepairConfig(registration_grace=0.0))
    partition = Partition("p0", 0, END, NODES, leader.node)  # replication_factor 0
    for _ in range(5):
        await driver.pass_once({GROUP: (TABLE, partition)}, ZONES, frozenset((*NODES, SPARE)))
        await asyncio.sleep(0.025)
    assert leader.host.members(GROUP) == {n: Role.FULL for n in NODES}
