"""Load-based migration in the operator, against kmock's Kubernetes API and an in-memory
control store: the storage pods' load reports make a hot pod's replica move to a pod of
its zone with room, the partition's members read from its Partition resource (named as
the pods and routers name it), and the move is forgotten once the membership the
group's leader published has been adopted into the spec."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import kopf
import pytest

from partita.autoadmin.kube import naming, resources
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.migration_loop import KubeMigration, partition_members
from partita.autoadmin.migration import MigrationPolicy
from partita.control.model import NodeLoad, NodeRecord, ReplicaLoad, ReplicaMove
from partita.control.store import MemoryControlStore
from tests.unit.autoadmin.kube.emulator import NS, ApiServer, register_resources, table_manifest

pytestmark = [pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(60)]

TABLES = f"/apis/{naming.API_VERSION}/namespaces/{NS}/tables"
PARTITIONS = f"/apis/{naming.API_VERSION}/namespaces/{NS}/partitions"
PODS = {"pt-storage-a-0": "a", "pt-storage-a-1": "a", "pt-storage-b-0": "b", "pt-storage-c-0": "c"}


def partition(name: str, table: str, *members: str) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Partition",
        "metadata": {"name": name, "namespace": NS, "labels": naming.partition_labels(table)},
        "spec": {
            "table": table,
            "hashRange": {"start": "0000000000000000", "last": "ffffffffffffffff"},
            "members": [{"node": m, "zone": PODS[m], "role": "full"} for m in members],
        },
    }


def table_id(name: str) -> int:
    manifest = table_manifest(name)
    return resources.table_spec(NS, name, manifest["spec"], manifest["metadata"]).table_id


def test_members_come_from_partition_resources_of_the_wanted_tables_or_of_all() -> None:
    tables = [table_manifest("music"), table_manifest("books")]
    parts = [
        partition("music-0", "music", "pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"),
        partition("books-0", "books", "pt-storage-a-1", "pt-storage-b-0", "pt-storage-c-0"),
        partition("orphan-0", "gone", "pt-storage-a-1"),
    ]
    members = partition_members(tables, parts, NS, frozenset({table_id("music")}))
    assert members == {
        (table_id("music"), "music-0"): frozenset({"pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"})
    }
    # Every table's (the shard bound's placements), the orphan still left out.
    assert set(partition_members(tables, parts, NS, None)) == {
        (table_id("music"), "music-0"),
        (table_id("books"), "books-0"),
    }


async def test_a_hot_pods_replica_is_asked_to_move_and_forgotten_once_adopted(kmock: Any) -> None:
    register_resources(kmock)
    store = MemoryControlStore()
    for pod, zone in PODS.items():
        await store.register_node(NodeRecord(pod, zone, f"{pod}:7100"), ttl=30)
    api = KubeApi(kopf.ConnectionInfo(server=str(kmock.url)))
    loop = KubeMigration(store, api, NS, MigrationPolicy())
    music, books = table_id("music"), table_id("books")
    try:
        async with aiohttp.ClientSession(base_url=str(kmock.url)) as session:
            for name in ("music", "books"):
                await session.post(TABLES, json=table_manifest(name))
            await session.post(
                PARTITIONS,
                json=partition("music-0", "music", "pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"),
            )
            await session.post(
                PARTITIONS,
                json=partition("books-0", "books", "pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"),
            )
            now = loop.driver.wall_clock()
            hot = NodeLoad(
                "pt-storage-a-0",
                now,
                10.0,
                1000.0,
                1000.0,
                (ReplicaLoad(music, "music-0", 500.0, 0.0), ReplicaLoad(books, "books-0", 350.0, 0.0)),
            )
            await store.put_node_load(hot, 30)
            await store.put_node_load(NodeLoad("pt-storage-a-1", now, 10.0, 1000.0, 1000.0), 30)
            await loop.driver.migrate_once()
            [move] = await store.list_moves()
            assert (move.table_id, move.partition_id, move.source, move.target) == (
                music,
                "music-0",
                "pt-storage-a-0",
                "pt-storage-a-1",
            )
            # The leader built the new member and removed the old; the membership watch
            # adopted it into the spec.
            moved = partition("music-0", "music", "pt-storage-a-1", "pt-storage-b-0", "pt-storage-c-0")
            async with session.patch(
                f"{PARTITIONS}/music-0",
                json={"spec": moved["spec"]},
                headers={"Content-Type": "application/merge-patch+json"},
            ) as resp:
                assert resp.status == 200
            await loop.driver.migrate_once()
            assert await store.list_moves() == []
    finally:
        await api.close()


async def test_the_loop_checks_once_started_and_stops_when_closed(kmock: Any) -> None:
    register_resources(kmock)
    store = MemoryControlStore()
    api = KubeApi(kopf.ConnectionInfo(server=str(kmock.url)))
    loop = KubeMigration(store, api, NS, MigrationPolicy(), interval=0.01)
    checks = 0
    real = loop.driver.migrate_once

    async def counted() -> Any:
        nonlocal checks
        checks += 1
        return await real()

    loop.driver.migrate_once = counted  # type: ignore[method-assign]
    try:
        # A move whose partition has no resource: forgotten by the first check.
        await store.put_move(ReplicaMove(1, "gone-0", "pt-storage-a-0", "pt-storage-a-1", 0.0))
        loop.started()
        loop.started()  # idempotent: one task
        for _ in range(200):  # bounded: 2 s
            if checks >= 2 and await store.list_moves() == []:
                break
            await asyncio.sleep(0.01)
        assert await store.list_moves() == []
        await loop.close()
        after = checks
        await asyncio.sleep(0.05)
        assert checks == after
    finally:
        await api.close()
