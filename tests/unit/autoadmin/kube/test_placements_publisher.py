"""The operator publishes every table's placement for the storage pods, against kmock's
Kubernetes API and an in-memory control store: what the Partitions hold, written once,
again only when a member changed."""

from __future__ import annotations

from typing import Any

import aiohttp
import kopf
import pytest

from partita.autoadmin.kube import naming
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.migration_loop import fleet_placements
from partita.autoadmin.kube.placements_publisher import PlacementsPublisher
from partita.control.store import MemoryControlStore
from tests.unit.autoadmin.kube.emulator import NS, ApiServer, register_resources, table_manifest
from tests.unit.autoadmin.kube.test_migration_loop import partition, table_id

pytestmark = [pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(60)]

BASE = f"/apis/{naming.API_VERSION}/namespaces/{NS}"


async def test_the_tables_placements_are_published_once_and_again_when_they_change(kmock: Any) -> None:
    register_resources(kmock)
    store = MemoryControlStore()
    api = KubeApi(kopf.ConnectionInfo(server=str(kmock.url)))
    publisher = PlacementsPublisher(store, lambda: fleet_placements(api, NS))
    try:
        async with aiohttp.ClientSession(base_url=str(kmock.url)) as session:
            await session.post(f"{BASE}/tables", json=table_manifest("music"))
            first = ("pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0")
            await session.post(f"{BASE}/partitions", json=partition("music-0", "music", *first))
            assert await publisher.pass_once() is True
            assert await store.get_placements() == {table_id("music"): (frozenset(first),)}
            assert await publisher.pass_once() is False  # unchanged: not written again
            moved = ("pt-storage-a-1", "pt-storage-b-0", "pt-storage-c-0")
            await session.patch(
                f"{BASE}/partitions/music-0",
                json={"spec": {"members": partition("music-0", "music", *moved)["spec"]["members"]}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert await publisher.pass_once() is True
            assert await store.get_placements() == {table_id("music"): (frozenset(moved),)}
            assert publisher.published == 2
    finally:
        await publisher.close()
        await api.close()
