"""A member the repair driver must add outside its table's shuffle shard goes on the
node that takes the fewest other tables' partitions past the shard bound, and that is
worked out only then; the storage node counts it from every table it last read.

Three in-process nodes: real engines, the real node-pair transport on 127.0.0.1, the
real consensus core and repair driver; the control store records what is written."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from partita.common.partition_map import HASH_SPACE, Partition
from partita.storage.node import NodeState, shard_exposure
from partita.storage.repair import RepairConfig
from partita.storage.repair_driver import RepairDriver
from partita.storage.replication.types import NodeId, Role
from tests.unit import records
from tests.unit.storage.polling import wait_until
from tests.unit.storage.test_removal_safety import TABLE, Recorder
from tests.unit.storage.test_repair_driver_quiet import CONFIG, END, SPARE, ZONES
from tests.unit.storage.test_replica_host import GROUP, NODES, Cluster, three_nodes


async def test_a_log_member_outside_the_shard_goes_where_it_exposes_no_other_partition(
    tmp_path: Path,
) -> None:
    async with three_nodes(tmp_path, CONFIG) as cluster:
        await _log_member_within_the_bound(cluster)


async def _log_member_within_the_bound(cluster: Cluster) -> None:
    leader = await cluster.leader(seconds=10.0)
    replica = leader.host.multi.replicas[GROUP]
    await wait_until(lambda: replica.quiesced)
    first_by_id = "node-0"  # first by id and in a zone of its own, like the spare
    zones = {**ZONES, first_by_id: "zone-0"}
    asked: list[tuple[int, frozenset[NodeId], tuple[NodeId, ...]]] = []

    def exposure(table_id: int, shard: frozenset[NodeId], candidates: Sequence[NodeId]) -> dict[NodeId, int]:
        asked.append((table_id, shard, tuple(candidates)))
        return {first_by_id: 1, SPARE: 0}

    store = Recorder()
    driver = RepairDriver(
        leader.host,
        store,
        RepairConfig(registration_grace=0.0),
        table_nodes=lambda table_id: frozenset(NODES),
        exposure=exposure,
    )
    partition = Partition("p0", 0, END, NODES, leader.node)
    everyone = frozenset((*NODES, SPARE, first_by_id))
    await driver.pass_once({GROUP: (TABLE, partition)}, zones, everyone)
    assert asked == [] and store.written == []  # healthy: nobody's placement is looked at
    gone = max(n for n in NODES if n != leader.node)
    await driver.pass_once({GROUP: (TABLE, partition)}, zones, everyone - {gone})
    assert asked == [(TABLE, frozenset(NODES), (first_by_id, SPARE))]
    assert store.written and store.written[-1].log_replicas == (SPARE,)
    assert leader.host.members(GROUP) == {**{n: Role.FULL for n in NODES}, SPARE: Role.LOG}


def test_a_nodes_exposure_counts_every_other_table_it_last_read() -> None:
    # Table 8's partition has a replica on b1, in table 7's shard: a node holding
    # another of them (x) would take it past the bound; y holds only table 9's, whose
    # replicas the shard does not reach; table 7's own partitions never count.
    state = NodeState("a1", "zone-a", engine=None)  # type: ignore[arg-type]
    whole = (0, HASH_SPACE)
    state.tables = [
        records.table_record(Partition("p0", *whole, ("a1", "b1", "c1"), "a1"), name="t7", table_id=7),
        records.table_record(Partition("p0", *whole, ("x", "b1", "c9"), "x"), name="t8", table_id=8),
        records.table_record(Partition("p0", *whole, ("y", "b9", "c9"), "y"), name="t9", table_id=9),
    ]
    shard = frozenset({"a1", "b1", "c1"})
    assert shard_exposure(state, 7, shard, ["x", "y"], 1) == {"x": 1, "y": 0}
    assert shard_exposure(state, 7, shard, ["x", "y"], 2) == {"x": 0, "y": 0}
    assert shard_exposure(state, 8, frozenset({"x"}), ["a1"], 0) == {"a1": 1}


def test_hosting_by_assignment_counts_the_placements_the_operator_published() -> None:
    # On Kubernetes a pod lists no tables; the same counts come from the published
    # placements (the same three tables as above).
    state = NodeState("a1", "zone-a", engine=None)  # type: ignore[arg-type]
    state.published_placements = {
        7: (frozenset({"a1", "b1", "c1"}),),
        8: (frozenset({"x", "b1", "c9"}),),
        9: (frozenset({"y", "b9", "c9"}),),
    }
    shard = frozenset({"a1", "b1", "c1"})
    assert shard_exposure(state, 7, shard, ["x", "y"], 1) == {"x": 1, "y": 0}
    assert shard_exposure(state, 8, frozenset({"x"}), ["a1"], 0) == {"a1": 1}
