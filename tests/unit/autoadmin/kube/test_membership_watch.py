"""The operator's watch of published memberships, against kmock's Kubernetes API and an
in-memory control store: a record a group's leader published is written into its
Partition's spec at once (no resync needed), only when it differs, not for a
Partition that does not exist, and a record seen once is not adopted again."""

from __future__ import annotations

from typing import Any

import aiohttp
import kopf
import pytest

from partita._proto import admin_pb2 as pb
from partita.autoadmin.kube import naming
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.membership_watch import MembershipWatch
from partita.control.store import MemoryControlStore
from tests.unit.autoadmin.kube.emulator import NS, ApiServer, get, register_resources

pytestmark = [pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(60)]

PARTITIONS = f"/apis/{naming.API_VERSION}/namespaces/{NS}/partitions"


def partition(name: str) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Partition",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "table": "music",
            "hashRange": {"start": "0000000000000000", "last": "ffffffffffffffff"},
            "members": [
                {"node": "pt-storage-a-0", "zone": "a", "role": "full"},
                {"node": "pt-storage-b-0", "zone": "b", "role": "full"},
                {"node": "pt-storage-c-0", "zone": "c", "role": "full"},
            ],
        },
    }


def record(name: str, *members: tuple[str, str, str]) -> bytes:
    request = pb.HostReplicaRequest(
        partition=name, members=[pb.Member(node=n, zone=z, role=r) for n, z, r in members]
    )
    return pb.PublishedMembership(term=2, leader="pt-storage-a-0", assignment=request).SerializeToString()


async def test_a_published_membership_is_written_into_the_partition_spec_once(kmock: Any) -> None:
    register_resources(kmock)
    store = MemoryControlStore()
    api = KubeApi(kopf.ConnectionInfo(server=str(kmock.url)))
    watch = MembershipWatch(store, api, NS)
    try:
        async with aiohttp.ClientSession(base_url=str(kmock.url)) as session:
            await session.post(PARTITIONS, json=partition("music-0"))
            await watch.pass_once()
            assert watch.adopted == 0  # nothing published

            repaired = (
                ("pt-storage-a-0", "a", "full"),
                ("pt-storage-b-0", "b", "full"),
                ("pt-storage-c-0", "c", "full"),
                ("pt-storage-a-1", "a", "log"),
            )
            await store.put_membership("music-0", record("music-0", *repaired))
            await store.put_membership("gone-0", record("gone-0", *repaired))  # no such Partition
            await watch.pass_once()
            body = await get(session, f"{PARTITIONS}/music-0")
            assert [(m["node"], m["zone"], m["role"]) for m in body["spec"]["members"]] == list(repaired)
            assert body["spec"]["table"] == "music"  # the rest of the spec kept
            assert watch.adopted == 1

            await watch.pass_once()  # seen: not adopted again
            assert watch.adopted == 1
            # The same members published again (a new record, same spec): nothing written.
            await store.put_membership("music-0", record("music-0", *reversed(repaired)))
            await watch.pass_once()
            assert watch.adopted == 1
    finally:
        await watch.close()
        await api.close()
