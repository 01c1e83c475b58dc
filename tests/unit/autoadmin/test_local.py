"""The local driver over an in-memory store, with the router's real actions and the
storage node's real hosting reconcile: tables created, updated and deleted through the
DynamoDB front door go through the autoadmin, which acts once and is idle after."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita.autoadmin.local import LocalAutoadmin
from partita.autoadmin.placement import replicated_placement
from partita.autoadmin.reconcile import ChangePartitions, PutState, RemoveTable, Settings
from partita.common.metrics import REGISTRY
from partita.control.model import NodeRecord, PartitionStats
from partita.control.store import MemoryControlStore
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import CredentialStore
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from partita.storage.engine import Engine
from partita.storage.node import NodeState, reconcile_hosting
from tests.unit.router.test_app import ADMIN, signed

NODE = NodeRecord("n1", "a", "127.0.0.1:1", "127.0.0.1:2")


class Cluster:
    """A router front door, one storage node's hosting, and the autoadmin on one store."""

    def __init__(self, tmp_path: Path, store: MemoryControlStore, app: DynamoApp, node: NodeState) -> None:
        self.store, self.app, self.node = store, app, node
        self.autoadmin = LocalAutoadmin(store, Settings(on_demand_partitions=2))

    async def call(self, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.app(signed(operation, body))
        out: dict[str, Any] = orjson.loads(response.body) if response.body else {}  # TagResource: empty
        assert response.status == 200, out
        return out

    async def status(self, name: str) -> str:
        return str((await self.call("DescribeTable", {"TableName": name}))["Table"]["TableStatus"])

    async def node_follows(self) -> None:
        await reconcile_hosting(self.node, self.store, await self.store.list_tables())


@pytest.fixture
async def cluster(tmp_path: Path) -> Any:
    from partita.router.credentials import save

    save(tmp_path / "credentials.json", [ADMIN])
    store = MemoryControlStore()
    await store.register_node(NODE, ttl=10)
    ctx = RouterContext(TableCache(store), store, StorageClient(), RouterSettings())
    app = DynamoApp(ctx, CredentialStore(tmp_path / "credentials.json"))
    engine = Engine.open(tmp_path / "node", sync=False)
    yield Cluster(tmp_path, store, app, NodeState("n1", "a", engine))
    await engine.close()


CREATE = {
    "TableName": "Orders",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
}


async def test_a_table_goes_through_its_whole_life_by_the_autoadmin(cluster: Cluster) -> None:
    await cluster.call("CreateTable", CREATE)
    assert await cluster.status("Orders") == "CREATING"
    # The router placed nothing: the spec is all there is.
    assert await cluster.store.list_partitions((await cluster.store.list_table_specs())[0].table_id) == []

    placed = await cluster.autoadmin.reconcile_once()
    assert [type(a) for a in placed] == [ChangePartitions, PutState]
    assert await cluster.status("Orders") == "CREATING"  # no replica serves yet
    await cluster.node_follows()
    assert [type(a) for a in await cluster.autoadmin.reconcile_once()] == [PutState]
    await cluster.app.ctx.tables.refresh()
    assert await cluster.status("Orders") == "ACTIVE"

    updated = await cluster.call(
        "UpdateTable",
        {
            "TableName": "Orders",
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 1500},
        },
    )
    assert updated["TableDescription"]["TableStatus"] == "UPDATING"
    assert await cluster.status("Orders") == "UPDATING"
    [split] = await cluster.autoadmin.reconcile_once()
    assert isinstance(split, ChangePartitions) and len(split.put) == 2
    await cluster.node_follows()
    await cluster.autoadmin.reconcile_once()
    await cluster.app.ctx.tables.refresh()
    assert await cluster.status("Orders") == "ACTIVE"
    assert len(cluster.app.ctx.tables.require("Orders").record.partitions) == 2

    deleted = await cluster.call("DeleteTable", {"TableName": "Orders"})
    assert deleted["TableDescription"]["TableStatus"] == "DELETING"
    assert await cluster.autoadmin.reconcile_once() == []  # the node still serves it
    await cluster.node_follows()
    assert [type(a) for a in await cluster.autoadmin.reconcile_once()] == [RemoveTable]
    assert await cluster.store.list_tables() == []


async def test_a_settled_cluster_costs_the_store_no_writes(cluster: Cluster) -> None:
    await cluster.call("CreateTable", CREATE)
    await cluster.autoadmin.reconcile_once()
    await cluster.node_follows()
    await cluster.autoadmin.reconcile_once()
    writes = cluster.store.writes
    for _ in range(5):
        assert await cluster.autoadmin.reconcile_once() == []
        await cluster.node_follows()
    assert cluster.store.writes == writes


async def test_tagging_does_not_send_the_table_through_updating(cluster: Cluster) -> None:
    await cluster.call("CreateTable", CREATE)
    await cluster.autoadmin.reconcile_once()
    await cluster.node_follows()
    await cluster.autoadmin.reconcile_once()
    arn = (await cluster.call("DescribeTable", {"TableName": "Orders"}))["Table"]["TableArn"]
    await cluster.call("TagResource", {"ResourceArn": arn, "Tags": [{"Key": "k", "Value": "v"}]})
    assert await cluster.status("Orders") == "ACTIVE"


async def test_update_and_delete_are_refused_while_the_table_is_updating(cluster: Cluster) -> None:
    await cluster.call("CreateTable", CREATE)
    await cluster.autoadmin.reconcile_once()
    await cluster.node_follows()
    await cluster.autoadmin.reconcile_once()
    raise_wcu = {
        "TableName": "Orders",
        "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 9},
    }
    await cluster.call("UpdateTable", raise_wcu)
    for operation, body in (("UpdateTable", raise_wcu), ("DeleteTable", {"TableName": "Orders"})):
        response = await cluster.app(signed(operation, body))
        error = orjson.loads(response.body)
        assert error["__type"].endswith("ResourceInUseException")
        assert (
            error["message"]
            == "Attempt to change a resource which is still in use: Table is being updated: Orders"
        )


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingMaintenance:
    def __init__(self) -> None:
        self.calls: list[int] = []

    async def compact_and_defragment(self, keep_revisions: int) -> None:
        self.calls.append(keep_revisions)


async def test_housekeeping_runs_on_its_schedule_only() -> None:
    clock, maintenance = FakeClock(), RecordingMaintenance()
    autoadmin = LocalAutoadmin(
        MemoryControlStore(), maintenance=maintenance, defrag_interval=60, keep_revisions=50, clock=clock
    )
    assert await autoadmin.housekeeping_if_due() is False
    clock.now = 59.9
    assert await autoadmin.housekeeping_if_due() is False
    clock.now = 60.0
    assert await autoadmin.housekeeping_if_due() is True
    assert await autoadmin.housekeeping_if_due() is False
    clock.now = 121.0
    assert await autoadmin.housekeeping_if_due() is True
    assert maintenance.calls == [50, 50]


async def test_a_settled_table_is_split_for_size_on_the_check_schedule_and_stays_active(
    cluster: Cluster,
) -> None:
    clock = FakeClock()
    autoadmin = LocalAutoadmin(
        cluster.store,
        Settings(on_demand_partitions=2, split_size_bytes=1000),
        clock=clock,
        size_check_interval=10,
    )
    await cluster.call("CreateTable", CREATE)
    await autoadmin.reconcile_once()
    await cluster.node_follows()
    await autoadmin.reconcile_once()  # ACTIVE: settled from here on
    assert await autoadmin.reconcile_once() == []  # a size check ran: nothing counted yet
    table_id = (await cluster.store.list_table_specs())[0].table_id
    [partition] = await cluster.store.list_partitions(table_id)
    middle = partition.start + 12345
    await cluster.store.put_partition_stats(
        table_id, partition.partition_id, PartitionStats(20, 5000, 1.0, middle)
    )
    # The next check is due 10 s after the last.
    assert await autoadmin.reconcile_once() == []
    clock.now = 10.0
    [split] = await autoadmin.reconcile_once()
    assert isinstance(split, ChangePartitions) and split.reason == "size_exceeded"
    after = await cluster.store.list_partitions(table_id)
    assert [(p.start, p.end) for p in after] == [(partition.start, middle), (middle, partition.end)]
    assert await cluster.status("Orders") == "ACTIVE"  # a split for size is invisible to DynamoDB's status
    # The children's estimates are not split again; the node serves the children.
    await cluster.node_follows()
    clock.now = 20.0
    assert await autoadmin.reconcile_once() == []
    assert {(pid, "n1") for pid in (p.partition_id for p in after)} <= await cluster.store.list_ready(
        table_id
    )


async def test_a_partition_that_cannot_be_split_is_reported_once(cluster: Cluster) -> None:
    clock = FakeClock()
    autoadmin = LocalAutoadmin(
        cluster.store,
        Settings(on_demand_partitions=2, split_size_bytes=1000),
        clock=clock,
        size_check_interval=10,
    )
    await cluster.call("CreateTable", CREATE)
    await autoadmin.reconcile_once()
    await cluster.node_follows()
    await autoadmin.reconcile_once()
    table_id = (await cluster.store.list_table_specs())[0].table_id
    [partition] = await cluster.store.list_partitions(table_id)
    one_key = PartitionStats(900, 5000, 1.0, None, single_key=True)
    await cluster.store.put_partition_stats(table_id, partition.partition_id, one_key)
    before = (
        REGISTRY.get_sample_value(
            "partita_autoadmin_actions_total", {"action": "keep_partition_whole", "reason": "single_key"}
        )
        or 0.0
    )
    writes = cluster.store.writes
    for tick in range(1, 4):
        clock.now = 10.0 * tick
        await autoadmin.reconcile_once()
    after = REGISTRY.get_sample_value(
        "partita_autoadmin_actions_total", {"action": "keep_partition_whole", "reason": "single_key"}
    )
    assert after == before + 1
    assert cluster.store.writes == writes  # nothing written for it
    assert [p.partition_id for p in await cluster.store.list_partitions(table_id)] == [partition.partition_id]


async def test_new_tables_go_on_shards_apart_from_the_tables_already_placed(cluster: Cluster) -> None:
    # Three or four nodes per zone (n1 is in zone a) and one-partition tables of three
    # replicas: each table's shard is one node per zone, and three tables fit with no
    # two sharing more than one node.
    # Two are created in one pass (the second sees the first's placement from that
    # pass), the third in a later pass (from the store).
    for zone in "abc":
        for i in range(3):
            await cluster.store.register_node(NodeRecord(f"{zone}{i}", zone, f"127.0.0.1:{i}"), ttl=10)
    autoadmin = LocalAutoadmin(cluster.store, Settings(placement=replicated_placement(3)))
    reads = 0
    list_placements = cluster.store.list_placements

    async def counted() -> dict[int, tuple[frozenset[str], ...]]:
        nonlocal reads
        reads += 1
        return await list_placements()

    cluster.store.list_placements = counted  # type: ignore[method-assign]
    within = REGISTRY.get_sample_value("partita_autoadmin_placements_total", {"shard": "within_bound"}) or 0.0
    await cluster.call("CreateTable", CREATE)
    await cluster.call("CreateTable", {**CREATE, "TableName": "Lines"})
    await autoadmin.reconcile_once()
    assert reads == 1  # once for the pass, not once a table
    await cluster.call("CreateTable", {**CREATE, "TableName": "Items"})
    await autoadmin.reconcile_once()
    footprints = [
        {n for p in await cluster.store.list_partitions(spec.table_id) for n in p.replicas}
        for spec in await cluster.store.list_table_specs()
    ]
    assert len(footprints) == 3 and all(len(f) == 3 for f in footprints)
    for one, other in itertools.combinations(footprints, 2):
        assert len(one & other) <= 1, footprints
    assert set().union(*footprints) <= {f"{z}{i}" for z in "abc" for i in range(3)} | {"n1"}
    after = REGISTRY.get_sample_value("partita_autoadmin_placements_total", {"shard": "within_bound"})
    assert after == within + 3


async def test_a_fleet_no_wider_than_a_table_reads_no_placements(cluster: Cluster) -> None:
    # One node per zone, the local cluster's default: every table is on every node, so
    # the other tables' placements are never read.
    for zone in "bc":
        await cluster.store.register_node(NodeRecord(f"{zone}0", zone, "127.0.0.1:3"), ttl=10)

    async def refused() -> dict[int, tuple[frozenset[str], ...]]:
        raise AssertionError("placements read")

    cluster.store.list_placements = refused  # type: ignore[method-assign]
    autoadmin = LocalAutoadmin(cluster.store, Settings(placement=replicated_placement(3)))
    await cluster.call("CreateTable", CREATE)
    [change, _] = await autoadmin.reconcile_once()
    assert isinstance(change, ChangePartitions)
    assert set(change.put[0].replicas) == {"n1", "b0", "c0"}
