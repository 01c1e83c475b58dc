"""Load-based migration on Kubernetes, every piece real but the API server: kmock, the
real kopf operator in-process (its migration loop reading the pods' load reports from a
real etcd), four real storage processes in admin hosting mode (one pod per zone the
Tables are placed on, and pt-storage-a-1, a second pod of zone a that only registers),
and a router process in Kubernetes mode.

Two one-partition Tables are placed on the three -0 pods. Each pod's capacity is set low
(`--node-read-units 100`), and reads of both Tables at a steady pace make every -0 pod
report itself above the migration share. Only zone a has room (pt-storage-a-1, empty):
the operator writes a move there, the group's leader builds the new member on a-1 and
removes a-0's, publishes the membership, the operator adopts it into the Partition's
spec (which the router routes by) and forgets the move. Only one replica moves: with one
left, a-0 is no longer hot. No read fails meanwhile and the moved Table's item is
intact, read strongly."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.autoadmin.migration import MigrationPolicy
from partita.control.store import EtcdControlStore
from tests.integration.operated_cluster import one_serving_partition, operated_cluster
from tests.integration.test_kubernetes_e2e import until
from tests.integration.test_migration import ITEM_BYTES, PacedReader
from tests.unit.autoadmin.kube.emulator import (
    NS,
    TABLES,
    ApiServer,
    eventually,
    partitions_of,
    table_manifest,
)
from tests.unit.autoadmin.kube.storage_nodes import StorageNode
from tests.unit.control.conftest import Etcd, etcd  # noqa: F401 (the etcd fixture)

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(420)]
# Seconds the move may take once the reads start: two load reports, the operator's check
# (every 10 s), a snapshot, a removal and the adoption; generous for a shared 2-core machine.
MIGRATION_TIMEOUT = 120.0
PLACED = {"pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"}
MOVED = {"pt-storage-a-1", "pt-storage-b-0", "pt-storage-c-0"}
BIG = {"pk": {"S": "big"}, "v": {"S": "x" * ITEM_BYTES}}


async def members(api: Any, table: str) -> set[str]:
    [part] = await partitions_of(api, table)
    return {m["node"] for m in part["spec"]["members"]}


async def test_a_replica_moves_off_a_hot_pod_to_the_other_pod_of_its_zone(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
) -> None:
    fleet = Fleet(release="pt", namespace=NS, image="partita:test", zones=("a", "b", "c"))
    config = OperatorConfig(
        fleet=fleet,
        on_demand_partitions=1,
        resync_seconds=0.5,
        retry_seconds=0.5,
        migration=MigrationPolicy(above=0.75, room_below=0.7),
    )
    capacity = ("--node-read-units=100", "--load-report-interval=1")
    root = tmp_path / "storage"
    nodes = [
        StorageNode(
            f"pt-storage-{zone}-{ordinal}",
            zone,
            root / f"node-{zone}-{ordinal}",
            etcd.port,
            replication=True,
            extra_args=capacity,
        )
        for zone, ordinal in (("a", 0), ("b", 0), ("c", 0), ("a", 1))
    ]
    store = EtcdControlStore("127.0.0.1", etcd.port)  # the test's own reads of etcd
    try:
        async with operated_cluster(kmock, tmp_path, etcd.port, nodes, config) as cluster:
            api = cluster.api
            dynamo = cluster.dynamo()
            names = ["jazz", "blues"]
            for name in names:
                await api.post(TABLES, json=table_manifest(name, replicationFactor=3))
            for name in names:
                part = await one_serving_partition(api, name, nodes)
                assert {m["node"] for m in part["spec"]["members"]} == PLACED
                # Retried until the router has the Table's routes.
                await until(
                    partial(dynamo.put_item, TableName=name.title(), Item=BIG), "the big item written"
                )

            with PacedReader(dynamo, [n.title() for n in names]) as reader:
                started = time.monotonic()
                while True:
                    now = {name: await members(api, name) for name in names}
                    if MOVED in now.values():
                        break
                    assert time.monotonic() < started + MIGRATION_TIMEOUT, now
                    await asyncio.sleep(0.5)
                print(
                    f"a replica moved to pt-storage-a-1 {time.monotonic() - started:.1f}s after the reads began"
                )

                async def forgotten() -> bool:
                    return await store.list_moves() == []

                await eventually(forgotten, "the move forgotten once adopted")
                # Reads go on a while: a-0, one replica left, is no longer hot.
                await asyncio.sleep(5)
            assert reader.failures == [], reader.failures[:5]
            assert reader.reads > 100
            after = {name: await members(api, name) for name in names}
            assert sorted(after.values(), key=sorted) == sorted([MOVED, PLACED], key=sorted), after
            assert await store.list_moves() == []
            for name in names:
                got = await asyncio.to_thread(
                    dynamo.get_item, TableName=name.title(), Key={"pk": {"S": "big"}}, ConsistentRead=True
                )
                assert got["Item"]["v"]["S"] == "x" * ITEM_BYTES
    finally:
        await store.close()
