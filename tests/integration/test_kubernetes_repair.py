"""Repair on Kubernetes, every piece real but the API server: kmock, the real kopf
operator in-process with the gRPC replica director reading published memberships from a
real etcd, five real storage processes in admin hosting mode (the three the Table is
placed on, one per zone, and two spares that only register), and a router process in
Kubernetes mode.

A member of a three-member group (a follower, or the leader) is SIGKILLed and stays
down. The group's leader (after a leader's death, the survivor elected) adds a
log-only member on a spare within seconds, then a full member on the other spare, built
from the leader (snapshot and log catch-up), and once that one serves removes the dead
member and the log member: it publishes each step in etcd, the spares host and drop
their replicas from those records, and the operator adopts the members into the
Partition's spec (which the router routes by) and drops the log member's replica.
Every write acknowledged before, during and after the repair reads back strongly
through the router, and the rebuilt member has applied everything committed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from partita._proto import admin_pb2
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
    partitions_of,
    table_manifest,
)
from tests.unit.autoadmin.kube.storage_nodes import StorageNode
from tests.unit.control.conftest import Etcd, etcd  # noqa: F401 (the etcd fixture)

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(420)]
# Seconds the whole repair may take once a member is down: noticing it (3 s without
# hearing it), a log member, a full member built and caught up, two removals, and the
# operator's adoption; generous for a shared two-core machine.
REPAIR_TIMEOUT = 120.0


def members_of(part: dict[str, Any]) -> dict[str, str]:
    return {m["node"]: m["role"] for m in part["spec"]["members"]}


async def published(store: EtcdControlStore, partition: str) -> dict[str, str]:
    record = await store.get_membership(partition)
    if record is None:
        return {}
    return {m.node: m.role for m in admin_pb2.PublishedMembership.FromString(record).assignment.members}


async def _placements_hold(store: EtcdControlStore, members: frozenset[str]) -> bool:
    return members in [m for sets in (await store.get_placements()).values() for m in sets]


@pytest.mark.parametrize("victim_role", ["follower", "leader"])
async def test_a_member_down_for_long_is_replaced_through_a_log_member_and_a_rebuilt_full_member(
    kmock: Any,
    tmp_path: Path,
    etcd: Etcd,  # noqa: F811
    victim_role: str,
) -> None:
    # The operator places on one pod per zone (the -0 pods); the -1 pods are spares.
    fleet = Fleet(release="pt", namespace=NS, image="partita:test", zones=("a", "b", "c"))
    # The operator follows the published memberships in etcd and adopts them at its
    # reconciles too.
    config = OperatorConfig(fleet=fleet, on_demand_partitions=1, resync_seconds=0.5, retry_seconds=0.5)
    root = tmp_path / "storage"
    nodes = [
        StorageNode(
            f"pt-storage-{zone}-{ordinal}", zone, root / f"node-{zone}-{ordinal}", etcd.port, replication=True
        )
        for zone, ordinal in (("a", 0), ("b", 0), ("c", 0), ("a", 1), ("b", 1))
    ]
    store = EtcdControlStore("127.0.0.1", etcd.port)  # the test's own reads of etcd
    try:
        async with operated_cluster(kmock, tmp_path, etcd.port, nodes, config) as cluster:
            api, by_id = cluster.api, cluster.nodes
            await api.post(TABLES, json=table_manifest("music", replicationFactor=3))

            part = await one_serving_partition(api, "music", nodes)
            name = part["metadata"]["name"]
            placed = members_of(part)
            assert set(placed) == {"pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"}
            # The operator publishes every table's placement for the pods' shard bound.
            await eventually(lambda: _placements_hold(store, frozenset(placed)), "the placements published")
            leader = part["status"]["leader"]
            # A follower, or the leader itself: then a survivor is elected, judges the
            # old leader down and repairs.
            victim = by_id[leader] if victim_role == "leader" else by_id[min(set(placed) - {leader})]
            spares = {"pt-storage-a-1", "pt-storage-b-1"}

            dynamo = cluster.dynamo()
            writes = AckedWrites(dynamo, "Music")

            for i in range(20):
                await writes.put(f"before-{i}", str(i), "PutItem through the router")

            victim.kill()
            killed_at = time.monotonic()
            seen_log_member: set[str] = set()
            seen_joining: set[str] = set()
            during = 0

            async def repaired() -> bool:
                nonlocal during
                # Writes go on through the repair (the group keeps a majority).
                await writes.put(f"during-{during}", str(during), "PutItem during the repair")
                during += 1
                roles = await published(store, name)
                seen_log_member.update(n for n, r in roles.items() if r == "log")
                seen_joining.update(n for n, r in roles.items() if r == "joining")
                parts = await partitions_of(api, "music")
                spec = members_of(parts[0])
                seen_log_member.update(n for n, r in spec.items() if r == "log")
                return (
                    victim.node_id not in spec
                    and len(spec) == 3
                    and set(spec.values()) == {"full"}
                    and roles == spec
                )

            deadline = killed_at + REPAIR_TIMEOUT
            while not await repaired():
                assert time.monotonic() < deadline, (
                    await published(store, name),
                    members_of((await partitions_of(api, "music"))[0]),
                )
                await asyncio.sleep(0.3)
            took = time.monotonic() - killed_at
            final = members_of((await partitions_of(api, "music"))[0])
            rebuilt = (set(final) & spares).pop()
            # A log member kept the quorum first, on the other spare; it is gone now.
            assert seen_log_member and seen_log_member <= spares - {rebuilt}, seen_log_member
            print(
                f"{victim.node_id} replaced by {rebuilt} (log member {sorted(seen_log_member)}) "
                f"{took:.1f}s after its SIGKILL; {during} writes during the repair"
            )

            for i in range(20):
                await writes.put(f"after-{i}", str(i), "PutItem after the repair")
            await writes.read_back()

            async def surviving_leader() -> str | None:
                status = (await partitions_of(api, "music"))[0].get("status") or {}
                found = status.get("leader")
                return found if found and found != victim.node_id else None

            leader = await eventually(surviving_leader, "a surviving leader in status")

            async def rebuilt_caught_up() -> bool:
                mine = (await reports(by_id[rebuilt])).get(name)
                lead = (await reports(by_id[leader])).get(name)
                return (
                    mine is not None
                    and lead is not None
                    and mine.state == "Hosted"
                    and mine.applied_index >= lead.commit_index > 0
                )

            await eventually(rebuilt_caught_up, "the rebuilt member to apply everything committed")

            async def log_member_dropped() -> bool:
                for n in seen_log_member:
                    if name in await reports(by_id[n]):
                        return False
                return True

            await eventually(log_member_dropped, "the log member to drop its replica")

            await delete_table(api, "music", [n for n in nodes if n is not victim])
            assert await store.get_membership(name) is None
    finally:
        await store.close()
