"""A Table's replicationFactor changed on Kubernetes, every piece real but the API
server: kmock, the real kopf operator in-process (gRPC replica director, published
memberships followed in a real etcd), three real storage processes in admin hosting
mode (one per zone), and a router process in Kubernetes mode.

Raised from 1 to 3: the single replica, which ran outside consensus, starts a group
from the data it holds, and its leader adds a full member at a time (each built from a
snapshot, so the items written before the group existed are on it), publishing each
change, which the operator adopts into the Partition. The original replica is then
SIGKILLed for good: the two it was replicated to elect a leader and every write
acknowledged before, during and after the change reads back strongly through the router.
Lowered to 2: the group's leader removes the dead member (never a live one while the
dead one would be left in a two-member group whose quorum needs it), and the two left
serve with nothing lost. Lowered to 1: one member is left, still a group (the Partition
stays marked `replicationGroup`), taking writes alone. The original node restarted (its
replica erased, since it was removed while down) and the factor raised to 3 again: two
members are built anew from the lone member's snapshot and log; that member then
SIGKILLed, the two hold every write, those made while it was alone among them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.control.store import EtcdControlStore
from tests.integration.operated_cluster import (
    AckedWrites,
    one_serving_partition,
    operated_cluster,
    reports,
)
from tests.integration.test_kubernetes_repair import members_of, published
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
# Seconds a change of the replication factor may take: two members added one at a time
# (each a snapshot and log catch-up) or removed, and the operator's adoption; generous
# for a shared two-core machine.
CHANGE_TIMEOUT = 120.0


async def _patch_table(api: Any, name: str, spec: dict[str, Any]) -> None:
    headers = {"Content-Type": "application/merge-patch+json"}
    async with api.patch(f"{TABLES}/{name}", json={"spec": spec}, headers=headers) as resp:
        assert resp.status == 200, await resp.text()


async def test_raising_and_lowering_a_tables_replication_factor_moves_members_and_loses_nothing(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
) -> None:
    fleet = Fleet(release="pt", namespace=NS, image="partita:test", zones=("a", "b", "c"))
    config = OperatorConfig(fleet=fleet, on_demand_partitions=1, resync_seconds=0.5, retry_seconds=0.5)
    root = tmp_path / "storage"
    nodes = [
        StorageNode(f"pt-storage-{zone}-0", zone, root / f"node-{zone}", etcd.port, replication=True)
        for zone in ("a", "b", "c")
    ]
    store = EtcdControlStore("127.0.0.1", etcd.port)
    try:
        async with operated_cluster(kmock, tmp_path, etcd.port, nodes, config) as cluster:
            api, by_id = cluster.api, cluster.nodes
            await api.post(TABLES, json=table_manifest("music", replicationFactor=1))
            part = await one_serving_partition(api, "music", nodes)
            name = part["metadata"]["name"]
            (original,) = members_of(part)
            writes = AckedWrites(cluster.dynamo(), "Music")
            for i in range(20):
                await writes.put(f"before-{i}", str(i), "PutItem at replicationFactor 1")

            await _patch_table(api, "music", {"replicationFactor": 3})
            changed_at = time.monotonic()
            during = 0

            async def settled_at(count: int) -> dict[str, str]:
                nonlocal during
                while True:
                    await writes.put(f"during-{during}", str(during), "PutItem while members change")
                    during += 1
                    spec = members_of((await partitions_of(api, "music"))[0])
                    roles = await published(store, name)
                    if len(spec) == count and set(spec.values()) == {"full"} and roles == spec:
                        return spec
                    assert time.monotonic() < changed_at + CHANGE_TIMEOUT, (spec, roles)
                    await asyncio.sleep(0.3)

            grown = await settled_at(3)
            print(f"1 -> 3 replicas in {time.monotonic() - changed_at:.1f}s, {during} writes meanwhile")
            assert set(grown) == set(by_id)

            async def caught_up() -> bool:
                figures = [(await reports(by_id[n])).get(name) for n in grown]
                commit = max((r.commit_index for r in figures if r is not None), default=0)
                return commit > 0 and all(r is not None and r.applied_index >= commit for r in figures)

            await eventually(caught_up, "every member to apply everything committed")

            # The original replica gone for good: the members it was replicated to hold it all.
            by_id[original].kill()
            for i in range(10):
                await writes.put(f"after-kill-{i}", str(i), "PutItem after the original replica died")
            await writes.read_back()

            await _patch_table(api, "music", {"replicationFactor": 2})
            changed_at = time.monotonic()
            kept = await settled_at(2)
            assert original not in kept
            for i in range(10):
                await writes.put(f"two-{i}", str(i), "PutItem at replicationFactor 2")
            await writes.read_back()

            await _patch_table(api, "music", {"replicationFactor": 1})
            changed_at = time.monotonic()
            (alone,) = await settled_at(1)
            assert (await partitions_of(api, "music"))[0]["spec"].get("replicationGroup") is True
            for i in range(10):
                await writes.put(f"one-{i}", str(i), "PutItem at replicationFactor 1 after 2")
            await writes.read_back()

            # The original node back (its replica, removed while it was down, is erased),
            # and the factor raised to 3: two members built anew from the group of one.
            by_id[original].start()
            await by_id[original].wait_serving()
            await _patch_table(api, "music", {"replicationFactor": 3})
            changed_at = time.monotonic()
            grown = await settled_at(3)
            assert set(grown) == set(by_id)
            await eventually(caught_up, "every member to apply everything committed")
            # The one member that held the group alone gone: the two built from it hold
            # every write, those made while it was alone among them.
            by_id[alone].kill()
            for i in range(5):
                await writes.put(f"regrown-{i}", str(i), "PutItem after the lone member died")
            await writes.read_back()
    finally:
        await store.close()
