"""Splits of replicated partitions on Kubernetes, every piece real but the API server:
kmock, the real kopf operator in-process with the gRPC replica director reading what the
groups' leaders publish in a real etcd, three real storage processes in admin hosting
mode running replication groups, and a router process in Kubernetes mode.

A provisioned Table on one three-member partition is raised through the router's
UpdateTable to more write throughput than one partition carries. The operator marks the
Partition (`spec.splitAt`); the group's leader seals the group, commits a SPLIT entry and
publishes its index in etcd; the operator creates the two children (named after the
parent, with its members and that index), every member starts their groups from its
own copy of the parent's data at that index, and once the children are hosted the
parent is dropped without erasing what they hold. Writes go on through the split (the
router retries while the group is sealed); every write acknowledged before, during and
after reads back strongly through the router, the Table is ACTIVE again with two
partitions, each with an elected leader, and deleting it drops every replica."""

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
    delete_table,
    one_serving_partition,
    operated_cluster,
    reports,
)
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

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(300)]
# Seconds from UpdateTable until the children replace the parent, at most: the marking,
# a repair pass on the leader (the SPLIT entry), the operator's passes, the children's
# groups electing; generous for a shared two-core machine.
SPLIT_TIMEOUT = 90.0
FLEET = Fleet(release="pt", namespace=NS, image="partita:test", zones=("a", "b", "c"))


def _three_nodes(tmp_path: Path, etcd_port: int) -> list[StorageNode]:
    """One replicating storage process per zone."""
    root = tmp_path / "storage"
    return [
        StorageNode(f"pt-storage-{zone}-0", zone, root / f"node-{zone}", etcd_port, replication=True)
        for zone in ("a", "b", "c")
    ]


async def _one_partition_table(api: Any, wcu: int, nodes: list[StorageNode]) -> dict[str, Any]:
    """The Table `music` (DynamoDB's `Music`), provisioned 1 RCU and `wcu` WCU: one
    three-member partition, once it serves."""
    throughput = {"readCapacityUnits": 1, "writeCapacityUnits": wcu}
    manifest = table_manifest(
        "music", billingMode="PROVISIONED", provisionedThroughput=throughput, replicationFactor=3
    )
    await api.post(TABLES, json=manifest)
    parent: dict[str, Any] = await one_serving_partition(api, "music", nodes)
    return parent


def _event_reasons(kmock: Any) -> set[tuple[str, str]]:
    return {
        (o.raw.get("reason"), o.raw.get("message"))
        for key, o in kmock.objects.items()
        if key[0].plural == "events" and not o.deleted
    }


async def test_a_replicated_partition_splits_at_a_log_index_under_writes_and_loses_nothing(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
) -> None:
    # The chart's resync period: the steps that wait for the pods (the published split
    # index, the children hosted) are followed by the progress timers, not by resyncs.
    config = OperatorConfig(fleet=FLEET, resync_seconds=30.0, retry_seconds=0.5, progress_seconds=1.0)
    nodes = _three_nodes(tmp_path, etcd.port)
    async with operated_cluster(kmock, tmp_path, etcd.port, nodes, config) as cluster:
        api = cluster.api
        # 999 WCU: one partition (DynamoDB's 3,000 RCU / 1,000 WCU each).
        parent = await _one_partition_table(api, 999, nodes)
        name = parent["metadata"]["name"]
        members = sorted(m["node"] for m in parent["spec"]["members"])
        assert members == sorted(cluster.nodes)

        dynamo = cluster.dynamo()
        writes = AckedWrites(dynamo, "Music")

        for i in range(40):
            await writes.put(f"before-{i}", str(i), "PutItem through the router")

        raised = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1500}  # two partitions
        await asyncio.to_thread(dynamo.update_table, TableName="Music", ProvisionedThroughput=raised)
        started = time.monotonic()
        during = 0
        marked = False

        async def split() -> list[dict[str, Any]] | None:
            nonlocal during, marked
            await writes.put(f"during-{during}", str(during), "PutItem during the split")
            during += 1
            parts = await partitions_of(api, "music")
            marked = marked or any(p["spec"].get("splitAt") for p in parts)
            if len(parts) != 2 or any(p["spec"].get("parent") != name for p in parts):
                return None
            for part in parts:
                status = part.get("status") or {}
                if status.get("state") != "Serving" or not status.get("leader"):
                    return None
            table = await get(api, f"{TABLES}/music")
            return parts if (table or {}).get("status", {}).get("tableStatus") == "ACTIVE" else None

        children: list[dict[str, Any]] | None = None
        while children is None:
            assert time.monotonic() - started < SPLIT_TIMEOUT, await partitions_of(api, "music")
            children = await split()
            await asyncio.sleep(0.2)
        took = time.monotonic() - started
        print(f"{name} split in {took:.1f}s after UpdateTable; {during} writes during the split")
        assert marked

        by_start = sorted(children, key=lambda p: p["spec"]["hashRange"]["start"])
        assert [p["metadata"]["name"] for p in by_start] == [f"{name}-0", f"{name}-1"]
        assert by_start[0]["spec"]["hashRange"]["start"] == parent["spec"]["hashRange"]["start"]
        assert by_start[1]["spec"]["hashRange"]["last"] == parent["spec"]["hashRange"]["last"]
        assert int(by_start[0]["spec"]["hashRange"]["last"], 16) + 1 == int(
            by_start[1]["spec"]["hashRange"]["start"], 16
        )
        index = by_start[0]["spec"]["parentIndex"]
        assert index > 0 and by_start[1]["spec"]["parentIndex"] == index
        for child in by_start:
            assert sorted(m["node"] for m in child["spec"]["members"]) == members

        for i in range(20):
            await writes.put(f"after-{i}", str(i), "PutItem after the split")
        await writes.read_back()
        described = await asyncio.to_thread(dynamo.describe_table, TableName="Music")
        assert described["Table"]["ProvisionedThroughput"]["WriteCapacityUnits"] == 1500

        async def parent_dropped() -> bool:
            for n in nodes:
                held = await reports(n)
                if name in held or set(held) != {f"{name}-0", f"{name}-1"}:
                    return False
            return True

        await eventually(parent_dropped, "every node to hold the children and not the parent")

        await delete_table(api, "music", nodes)
        # Nothing a group's leader published outlives its Partition: a Table made again
        # under the same name has Partitions of the same names.
        store = EtcdControlStore("127.0.0.1", etcd.port)
        try:
            assert await store.list_memberships() == {}
        finally:
            await store.close()


async def test_a_partition_written_past_its_allocation_is_split_for_consumption(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
) -> None:
    """Split for consumption on Kubernetes: the group's leader measures the partition's
    heat on the data path and reports it in its HostReplica answers; once it has run hot
    for `split_hot_seconds` the operator marks it for a split at its load's median, and
    the split runs at a log index as above. Nothing acknowledged is lost."""
    # A heat window is 10 s: the first hot one ends 10 s after the load starts.
    config = OperatorConfig(
        fleet=FLEET, resync_seconds=1.0, retry_seconds=0.5, progress_seconds=1.0, split_hot_seconds=5.0
    )
    nodes = _three_nodes(tmp_path, etcd.port)
    async with operated_cluster(kmock, tmp_path, etcd.port, nodes, config) as cluster:
        api = cluster.api
        # 5 WCU: a write or two every second is the partition's whole allocation.
        parent = await _one_partition_table(api, 5, nodes)
        name = parent["metadata"]["name"]
        writes = AckedWrites(cluster.dynamo(), "Music")

        started = time.monotonic()
        written = 0
        children: list[dict[str, Any]] = []
        while len(children) != 2:
            assert time.monotonic() - started < SPLIT_TIMEOUT, await partitions_of(api, "music")
            for _ in range(10):
                await writes.put(f"hot-{written}", str(written), "PutItem far past the allocation")
                written += 1
            # At most about 20 writes a second, four times the allocation: unpaced, a
            # slow split left thousands of writes to read back.
            await asyncio.sleep(0.5)
            parts = await partitions_of(api, "music")
            children = [p for p in parts if p["spec"].get("parent") == name]
        print(
            f"{name} split for consumption {time.monotonic() - started:.1f}s into the load; {written} writes"
        )

        splitting = ("PartitionsSplitting", f"splitting {name} at a log index (consumption hot)")
        assert splitting in _event_reasons(kmock)
        # The cut is the load's median, not the middle of the range: keys are random
        # hashes, so it lies near the middle but (almost surely) not on it.
        cut = int(
            sorted(children, key=lambda p: p["spec"]["hashRange"]["start"])[1]["spec"]["hashRange"]["start"],
            16,
        )
        assert 0 < cut < 2**64 and cut != 2**63
        await writes.read_back()
        await delete_table(api, "music", nodes)
