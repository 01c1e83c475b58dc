"""Replicated partitions on Kubernetes, every piece real but the API server: kmock, the
real kopf operator in-process with the gRPC replica director (which gives every member
the others' replication addresses, as it gives pod DNS names in a cluster), three real
storage processes in admin hosting mode running replication groups on fixed replication
ports, a real etcd where they register (with a replication address nothing listens on,
so the groups form only through the operator's addresses), and a router process in
Kubernetes mode.

A Table with replicationFactor 3 becomes ACTIVE with one three-member group per
partition that elects a leader (every member reports the same leader and term); boto3
writes and strong reads go through the router. SIGKILL of the storage process leading
the most partitions: writes succeed again through the router within seconds (the
survivors elect a new leader, reported into Partition status; the router follows it or
the NOT_LEADER hints), and every acknowledged write, before and after the kill, is read
back strongly and, through the same router, eventually. The killed pod, restarted,
rejoins from its own disk and catches up; deleting the Table then drops every replica."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.grpc_director import GrpcReplicaDirector
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.common.keys import key_hash
from partita.control.store import EtcdControlStore
from partita.router.credentials import create_credential, credentials_path
from tests.integration.operated_cluster import delete_table, reports
from tests.integration.test_kubernetes_e2e import client, start_router, until
from tests.unit.autoadmin.kube.emulator import (
    NS,
    TABLES,
    ApiServer,
    create_peering,
    eventually,
    get,
    partitions_of,
    register_resources,
    table_manifest,
)
from tests.unit.autoadmin.kube.storage_nodes import StorageNode, storage_nodes
from tests.unit.autoadmin.kube.test_operator import operator
from tests.unit.control.conftest import Etcd, etcd  # noqa: F401 (the etcd fixture)

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(400)]
# From SIGKILL to a write acknowledged again, at most (an election takes 1-2 s; the
# registration lease that also marks the node dead is 10 s).
FAILOVER_DEADLINE = 20.0
WRITES_AFTER_KILL = 30
UNREACHABLE = "127.0.0.1:9"  # the discard port: nothing listens there


async def one_elected_leader(parts: list[dict[str, Any]], nodes: list[StorageNode]) -> dict[str, str] | None:
    """partition -> leader when every live member of every partition reports the same
    elected leader (a term above 0) and it is the leader in the Partition's status."""
    views = {n.node_id: await reports(n) for n in nodes}
    leaders = {}
    for part in parts:
        name = part["metadata"]["name"]
        members = [m["node"] for m in part["spec"]["members"]]
        said = {(views[m][name].leader, views[m][name].term) for m in members if m in views}
        if len(said) != 1:
            return None
        ((leader, term),) = said
        status = part.get("status") or {}
        if not leader or term == 0 or status.get("leader") != leader or status.get("term") != term:
            return None
        leaders[name] = leader
    return leaders


async def test_a_replicated_table_elects_leaders_and_fails_over_after_sigkill_without_losing_writes(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
) -> None:
    register_resources(kmock)
    fleet = Fleet(release="pt", namespace=NS, image="partita:test", zones=("a", "b", "c"))
    config = OperatorConfig(fleet=fleet, on_demand_partitions=2, resync_seconds=0.5, retry_seconds=0.5)
    router_dir = tmp_path / "router"
    router_dir.mkdir()
    create_credential(credentials_path(router_dir), name="default", description="e2e")
    # The nodes register an address nothing listens on: the groups can form only through
    # the addresses the operator gives with HostReplica (and, after a restart, the ones
    # the node kept with its assignments).
    with storage_nodes(tmp_path / "storage", etcd.port, replication=True, advertise=UNREACHABLE) as nodes:
        for n in nodes:
            await n.wait_serving()
        by_id = {n.node_id: n for n in nodes}
        registry = EtcdControlStore("127.0.0.1", etcd.port)
        try:
            registered = {r.node_id: r.replication_address for r in await registry.list_nodes()}
        finally:
            await registry.close()
        assert registered == {n.node_id: UNREACHABLE for n in nodes}  # --replication-advertise
        director = GrpcReplicaDirector(
            {n.node_id: n.address for n in nodes}.get,
            timeout=2.0,
            replication_address={n.node_id: n.replication_address for n in nodes}.get,
        )
        router, router_port = start_router(router_dir, etcd.port, str(kmock.url), "--replication")
        try:
            async with aiohttp.ClientSession(base_url=str(kmock.url)) as api:
                await create_peering(api)
                async with operator(kmock, director, priority=10, config=config):
                    await api.post(TABLES, json=table_manifest("music", replicationFactor=3))

                    async def active() -> bool:
                        body = await get(api, f"{TABLES}/music")
                        return ((body or {}).get("status") or {}).get("tableStatus") == "ACTIVE"

                    await eventually(active, "the Table to become ACTIVE")

                    async def elected() -> dict[str, str] | None:
                        parts = await partitions_of(api, "music")
                        if len(parts) != 2 or any(len(p["spec"]["members"]) != 3 for p in parts):
                            return None
                        for part in parts:
                            status = part.get("status") or {}
                            if {m["state"] for m in status.get("members", [])} != {"Serving"}:
                                return None
                            if status.get("state") != "Serving":
                                return None
                        return await one_elected_leader(parts, nodes)

                    leaders = await eventually(
                        elected, "every group to elect one leader, every member serving, in status"
                    )

                    dynamo = client(router_dir, router_port)
                    acked: dict[str, str] = {}

                    def put(pk: str, n: str) -> bool:
                        dynamo.put_item(TableName="Music", Item={"pk": {"S": pk}, "n": {"N": n}})
                        acked[pk] = n
                        return True

                    for i in range(20):
                        await until(lambda i=i: put(f"before-{i}", str(i)), "PutItem through the router")
                    for pk, n in acked.items():
                        got = await asyncio.to_thread(
                            dynamo.get_item, TableName="Music", Key={"pk": {"S": pk}}, ConsistentRead=True
                        )
                        assert got["Item"] == {"pk": {"S": pk}, "n": {"N": n}}

                    victim_id, led = Counter(leaders.values()).most_common(1)[0]
                    victim = by_id[victim_id]
                    # The writes after the kill all go to partitions the victim led.
                    ranges = [
                        (int(p["spec"]["hashRange"]["start"], 16), int(p["spec"]["hashRange"]["last"], 16))
                        for p in await partitions_of(api, "music")
                        if leaders[p["metadata"]["name"]] == victim_id
                    ]
                    keys_after = [
                        pk
                        for pk in (f"after-{j}" for j in range(1000))
                        if any(lo <= key_hash("S", pk.encode()) <= hi for lo, hi in ranges)
                    ][:WRITES_AFTER_KILL]
                    assert len(keys_after) == WRITES_AFTER_KILL
                    victim.kill()
                    killed_at = time.monotonic()
                    first_ack: float | None = None
                    for i, pk in enumerate(keys_after):
                        left = FAILOVER_DEADLINE - (time.monotonic() - killed_at)
                        await until(
                            lambda pk=pk, i=i: put(pk, str(1000 + i)),
                            f"PutItem {pk} after the leader's SIGKILL",
                            timeout=max(left, 5.0),
                        )
                        if first_ack is None:
                            first_ack = time.monotonic() - killed_at
                    assert first_ack is not None and first_ack < FAILOVER_DEADLINE
                    print(
                        f"first write to a partition {victim_id} led acknowledged {first_ack:.2f}s "
                        f"after its SIGKILL ({led} of 2 partitions led)"
                    )

                    survivors = [n for n in nodes if n is not victim]

                    async def new_leaders() -> bool:
                        parts = await partitions_of(api, "music")
                        views = {n.node_id: await reports(n) for n in survivors}
                        for part in parts:
                            name = part["metadata"]["name"]
                            leader = (part.get("status") or {}).get("leader")
                            if leader is None or leader == victim_id:
                                return False
                            if any(views[n.node_id][name].leader != leader for n in survivors):
                                return False
                        return True

                    await eventually(new_leaders, "a surviving leader for every partition, in status")
                    # The victim's partitions serve on a majority: Degraded, not Pending.
                    for part in await partitions_of(api, "music"):
                        members = {m["node"]: m["state"] for m in part["status"]["members"]}
                        assert members[victim_id] == "Requested"
                        assert part["status"]["state"] == "Degraded"

                    for pk, n in acked.items():
                        strong = await asyncio.to_thread(
                            dynamo.get_item, TableName="Music", Key={"pk": {"S": pk}}, ConsistentRead=True
                        )
                        assert strong.get("Item") == {"pk": {"S": pk}, "n": {"N": n}}, f"lost {pk}"
                        eventual = await asyncio.to_thread(
                            dynamo.get_item, TableName="Music", Key={"pk": {"S": pk}}
                        )
                        assert eventual.get("Item") == {"pk": {"S": pk}, "n": {"N": n}}, f"stale {pk}"
                    assert len(acked) == 20 + WRITES_AFTER_KILL
                    described = await asyncio.to_thread(dynamo.describe_table, TableName="Music")
                    assert described["Table"]["TableStatus"] == "ACTIVE"

                    # The killed pod comes back (its assignments are on its disk): it
                    # rejoins as a follower and catches up to the leaders' commit.
                    victim.start()
                    await victim.wait_serving()

                    async def caught_up() -> bool:
                        parts = await partitions_of(api, "music")
                        mine = await reports(victim)
                        for part in parts:
                            name = part["metadata"]["name"]
                            status = part.get("status") or {}
                            if {m["state"] for m in status.get("members", [])} != {"Serving"}:
                                return False
                            r = mine[name]
                            if r.leader != status.get("leader") or r.applied_index < r.commit_index:
                                return False
                        return True

                    await eventually(caught_up, "the restarted member to catch up and serve")

                    await delete_table(api, "music", nodes)
        finally:
            router.terminate()
            router.wait(timeout=15)
            await director.close()
