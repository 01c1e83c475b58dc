"""Scaling the storage fleet down on Kubernetes, every piece real but the API server:
kmock, the real kopf operator in-process, six real storage processes (two pods per zone),
a real etcd, and a router.

A Table is placed over all six pods. The operator is then restarted with one pod per
zone, as a `helm upgrade` lowering `storage.replicasPerZone` does: it keeps the
StatefulSets at two pods, marks the -1 pods draining, the groups' leaders move their
members to the -0 pods (a leader there handing over first), and only once no Partition
names a -1 pod does it scale each StatefulSet to one. Writes go on throughout; the -1
pods are then stopped (as the StatefulSet controller does) and every acknowledged write
reads back strongly; their drain marks are cleared once they are gone."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.control.store import EtcdControlStore
from tests.integration.operated_cluster import AckedWrites, operating, unoperated_cluster
from tests.unit.autoadmin.kube.emulator import (
    NS,
    TABLES,
    ApiServer,
    eventually,
    get,
    partitions_of,
    table_manifest,
)
from tests.unit.autoadmin.kube.storage_nodes import StorageNode
from tests.unit.control.conftest import Etcd, etcd  # noqa: F401 (the etcd fixture)

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(420)]
ZONES = ("a", "b", "c")
# Seconds the drain may take: a snapshot and a removal per member on a -1 pod; generous
# for six storage processes on a shared two-core machine.
DRAIN_TIMEOUT = 120.0


def _named(parts: list[dict[str, Any]]) -> set[str]:
    return {m["node"] for p in parts for m in p["spec"]["members"]}


async def test_a_fleet_scaled_down_drains_the_leaving_pods_before_the_statefulsets_shrink(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
) -> None:
    def config(per_zone: int) -> OperatorConfig:
        fleet = Fleet(
            release="pt", namespace=NS, image="partita:test", zones=ZONES, replicas_per_zone=per_zone
        )
        return OperatorConfig(fleet=fleet, on_demand_partitions=4, resync_seconds=0.5, retry_seconds=0.5)

    root = tmp_path / "storage"
    nodes = [
        StorageNode(f"pt-storage-{z}-{o}", z, root / f"node-{z}-{o}", etcd.port, replication=True)
        for z in ZONES
        for o in (0, 1)
    ]
    leaving = {n.node_id for n in nodes if n.node_id.endswith("-1")}
    store = EtcdControlStore("127.0.0.1", etcd.port)
    try:
        async with unoperated_cluster(kmock, tmp_path, etcd.port, nodes) as cluster:
            api = cluster.api
            writes = AckedWrites(cluster.dynamo(), "Music")
            async with operating(kmock, etcd.port, nodes, config(2)):
                await api.post(TABLES, json=table_manifest("music", replicationFactor=3))

                async def serving() -> Any:
                    parts = await partitions_of(api, "music")
                    ok = len(parts) == 4 and all(
                        (p.get("status") or {}).get("state") == "Serving" for p in parts
                    )
                    return parts if ok else None

                placed = await eventually(serving, "four partitions serving")
                assert _named(placed) & leaving, "no replica placed on a -1 pod: nothing to drain"
                for i in range(20):
                    await writes.put(f"before-{i}", str(i), "PutItem on the six-pod fleet")

            async with operating(kmock, etcd.port, nodes, config(1)):
                started = time.monotonic()
                during = 0
                while True:
                    await writes.put(f"during-{during}", str(during), "PutItem while the fleet drains")
                    during += 1
                    sizes = [
                        (await get(api, f"/apis/apps/v1/namespaces/{NS}/statefulsets/pt-storage-{z}"))[
                            "spec"
                        ]["replicas"]
                        for z in ZONES
                    ]
                    parts = await partitions_of(api, "music")
                    if 1 in sizes:
                        # A StatefulSet shrinks only once nothing is left on the leaving pods.
                        assert not _named(parts) & leaving, (sizes, parts)
                    if sizes == [1, 1, 1]:
                        break
                    assert time.monotonic() < started + DRAIN_TIMEOUT, (sizes, _named(parts))
                    await asyncio.sleep(0.3)
                print(
                    f"drained and scaled down in {time.monotonic() - started:.1f}s, {during} writes meanwhile"
                )

                for n in nodes:
                    if n.node_id in leaving:
                        n.stop()  # what the StatefulSet controller does next
                for i in range(10):
                    await writes.put(f"after-{i}", str(i), "PutItem on the three-pod fleet")
                await writes.read_back()

                async def unmarked() -> bool:
                    return not await store.list_draining()

                await eventually(unmarked, "the drain marks cleared once the pods are gone")
    finally:
        await store.close()
