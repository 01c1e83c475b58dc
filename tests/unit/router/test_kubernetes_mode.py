"""Kubernetes mode of the table API: the router's front door over the Table and
Partition resources (kmock as the API server). CreateTable creates the Table resource,
DescribeTable reads its status, UpdateTable patches it, DeleteTable deletes it; the
routes come from Partition resources, nodes from the members' registrations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from partita.control import kubernetes
from partita.control.kubernetes import KubernetesRouteSource, KubernetesTableCatalog
from partita.control.model import NodeRecord
from partita.control.store import MemoryControlStore
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import CredentialStore, save
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from tests.unit.autoadmin.kube.emulator import NS, TABLES, register_resources
from tests.unit.control.kube_api import VersionedApiServer
from tests.unit.router.test_app import ADMIN, signed

pytestmark = [pytest.mark.kmock(cls=VersionedApiServer)]
PARTITIONS = TABLES.removesuffix("/tables") + "/partitions"
MERGE = {"Content-Type": "application/merge-patch+json"}
CREATE = {
    "TableName": "Orders",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
}


class Front:
    def __init__(self, app: DynamoApp, api: aiohttp.ClientSession) -> None:
        self.app, self.api = app, api

    async def call(self, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.app(signed(operation, body))
        out: dict[str, Any] = orjson.loads(response.body)
        assert response.status == 200, out
        return out

    async def resource(self) -> dict[str, Any]:
        async with self.api.get(f"{TABLES}/{kubernetes.resource_name('Orders')}") as resp:
            assert resp.status == 200
            body: dict[str, Any] = await resp.json()
            return body


@pytest.fixture
async def front(kmock: Any, tmp_path: Path) -> AsyncIterator[Front]:
    register_resources(kmock)
    save(tmp_path / "credentials.json", [ADMIN])
    members = MemoryControlStore()  # where storage nodes register (etcd in a cluster)
    await members.register_node(NodeRecord("pt-storage-a-0", "a", "10.0.0.1:7100", "10.0.0.1:7200"), ttl=10)
    catalog = KubernetesTableCatalog(str(kmock.url), NS)
    routes = KubernetesRouteSource(catalog, members)
    ctx = RouterContext(TableCache(routes), catalog, StorageClient(), RouterSettings())
    async with aiohttp.ClientSession(base_url=str(kmock.url)) as api:
        yield Front(DynamoApp(ctx, CredentialStore(tmp_path / "credentials.json")), api)
    await routes.close()


async def test_create_describe_update_and_delete_act_on_the_table_resource(front: Front) -> None:
    created = await front.call("CreateTable", CREATE)
    assert created["TableDescription"]["TableStatus"] == "CREATING"
    obj = await front.resource()
    assert obj["spec"]["tableName"] == "Orders"
    assert obj["spec"]["provisionedThroughput"] == {"readCapacityUnits": 5, "writeCapacityUnits": 5}
    described = await front.call("DescribeTable", {"TableName": "Orders"})
    assert described["Table"]["TableStatus"] == "CREATING"

    # The operator places a partition and reports the table ACTIVE: the router routes by it.
    name = obj["metadata"]["name"]
    partition = {
        "apiVersion": kubernetes.API_VERSION,
        "kind": "Partition",
        "metadata": {
            "name": f"{name}-0000000000000000",
            "namespace": NS,
            "labels": {kubernetes.TABLE_LABEL: name},
        },
        "spec": {
            "table": name,
            "hashRange": {"start": "0000000000000000", "last": "ffffffffffffffff"},
            "members": [{"node": "pt-storage-a-0", "zone": "a", "role": "full"}],
        },
    }
    async with front.api.post(PARTITIONS, json=partition) as resp:
        assert resp.status < 300, await resp.text()
    status = {"status": {"tableStatus": "ACTIVE", "observedGeneration": 1}}
    async with front.api.patch(f"{TABLES}/{name}/status", json=status, headers=MERGE) as resp:
        assert resp.status == 200
    await front.app.ctx.tables.refresh()
    described = await front.call("DescribeTable", {"TableName": "Orders"})
    assert described["Table"]["TableStatus"] == "ACTIVE"
    record = front.app.ctx.tables.require("Orders").record
    assert [(p.start, p.end, p.replicas) for p in record.partitions] == [(0, 2**64, ("pt-storage-a-0",))]

    updated = await front.call(
        "UpdateTable",
        {
            "TableName": "Orders",
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 2500},
        },
    )
    assert updated["TableDescription"]["TableStatus"] == "UPDATING"  # spec generation 2, observed 1
    assert (await front.resource())["spec"]["provisionedThroughput"]["writeCapacityUnits"] == 2500

    # The operator's finalizer holds a deleted Table until its partitions are dropped.
    async with front.api.patch(
        f"{TABLES}/{name}", json={"metadata": {"finalizers": ["partita.io/finalizer"]}}, headers=MERGE
    ) as resp:
        assert resp.status == 200
    async with front.api.patch(
        f"{TABLES}/{name}/status", json={"status": {"observedGeneration": 2}}, headers=MERGE
    ) as resp:
        assert resp.status == 200
    deleted = await front.call("DeleteTable", {"TableName": "Orders"})
    assert deleted["TableDescription"]["TableStatus"] == "DELETING"
    assert (await front.resource())["metadata"].get("deletionTimestamp")
