"""A cluster run by the Kubernetes operator, every piece real but the API server: kmock,
the real kopf operator in-process with the gRPC replica director reading what the
groups' leaders publish in a real etcd, the given storage processes in admin hosting
mode, and a router process in Kubernetes mode (the repair and split tests); and the
nodes' own reports and a Table's deletion, checked to drop every replica (those and the
replication test)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc

from partita._proto import admin_pb2, admin_pb2_grpc
from partita.autoadmin.kube.grpc_director import GrpcReplicaDirector
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.control.store import EtcdControlStore
from partita.router.credentials import create_credential, credentials_path
from tests.integration.test_kubernetes_e2e import client, start_router, until
from tests.unit.autoadmin.kube.emulator import (
    TABLES,
    create_peering,
    eventually,
    get,
    partitions_of,
    register_resources,
)
from tests.unit.autoadmin.kube.storage_nodes import StorageNode
from tests.unit.autoadmin.kube.test_operator import operator


async def reports(node: StorageNode) -> dict[str, admin_pb2.ReplicaReport]:
    """The node's own view of its replicas (its admin Report RPC), by partition."""
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = admin_pb2_grpc.StorageAdminStub(channel)  # type: ignore[no-untyped-call]
        answer = await stub.Report(admin_pb2.ReportRequest(), timeout=3)
    return {r.partition: r for r in answer.replicas}


class AckedWrites:
    """Items written through the router, each remembered once acknowledged, and read
    back strongly: an acknowledged write is never lost."""

    def __init__(self, dynamo: Any, table: str) -> None:
        self.dynamo = dynamo
        self.table = table
        self.acked: dict[str, str] = {}

    def _put(self, pk: str, n: str) -> bool:
        self.dynamo.put_item(TableName=self.table, Item={"pk": {"S": pk}, "n": {"N": n}})
        self.acked[pk] = n
        return True

    async def put(self, pk: str, n: str, what: str) -> None:
        """Write until acknowledged (retried on errors, bounded in time)."""
        await until(lambda: self._put(pk, n), what)

    async def read_back(self, concurrency: int = 8) -> None:
        """Every acknowledged write, read strongly, a few at a time (thousands of them
        one by one outlasted a test's timeout on a loaded machine)."""
        gate = asyncio.Semaphore(concurrency)

        async def one(pk: str, n: str) -> None:
            async with gate:
                got = await asyncio.to_thread(
                    self.dynamo.get_item, TableName=self.table, Key={"pk": {"S": pk}}, ConsistentRead=True
                )
            assert got.get("Item") == {"pk": {"S": pk}, "n": {"N": n}}, f"lost {pk}"

        await asyncio.gather(*(one(pk, n) for pk, n in list(self.acked.items())))


@dataclass
class OperatedCluster:
    api: aiohttp.ClientSession  # the Kubernetes API (kmock)
    nodes: dict[str, StorageNode]  # by node id
    router_dir: Path
    router_port: int

    def dynamo(self) -> Any:
        """A boto3 client of the router."""
        return client(self.router_dir, self.router_port)


@contextlib.asynccontextmanager
async def operated_cluster(
    kmock: Any, tmp_path: Path, etcd_port: int, nodes: Sequence[StorageNode], config: OperatorConfig
) -> AsyncIterator[OperatedCluster]:
    """Start `nodes`, a router and the operator (which follows the published memberships
    in etcd); stop them all on exit."""
    async with (
        unoperated_cluster(kmock, tmp_path, etcd_port, nodes) as cluster,
        operating(kmock, etcd_port, nodes, config),
    ):
        yield cluster


@contextlib.asynccontextmanager
async def unoperated_cluster(
    kmock: Any, tmp_path: Path, etcd_port: int, nodes: Sequence[StorageNode]
) -> AsyncIterator[OperatedCluster]:
    """`nodes` and a router, no operator: the caller runs one (`operating`), or one
    after another (a restart with a new configuration)."""
    register_resources(kmock)
    router_dir = tmp_path / "router"
    router_dir.mkdir()
    create_credential(credentials_path(router_dir), name="default", description="e2e")
    router = None
    try:
        for n in nodes:
            n.start()
        for n in nodes:
            await n.wait_serving()
        router, router_port = start_router(router_dir, etcd_port, str(kmock.url), "--replication")
        async with aiohttp.ClientSession(base_url=str(kmock.url)) as api:
            await create_peering(api)
            yield OperatedCluster(api, {n.node_id: n for n in nodes}, router_dir, router_port)
    finally:
        if router is not None:
            router.terminate()
            router.wait(timeout=15)
        for n in nodes:
            n.stop()


@contextlib.asynccontextmanager
async def operating(
    kmock: Any, etcd_port: int, nodes: Sequence[StorageNode], config: OperatorConfig
) -> AsyncIterator[None]:
    """The operator, with a replica director of its own (its gRPC channels and store are
    used on the operator's loop, so each operator run gets new ones)."""
    director_store = EtcdControlStore("127.0.0.1", etcd_port)
    director = GrpcReplicaDirector(
        {n.node_id: n.address for n in nodes}.get,
        timeout=2.0,
        replication_address={n.node_id: n.replication_address for n in nodes}.get,
        memberships=director_store,
    )
    try:
        async with operator(kmock, director, priority=10, config=config, etcd_port=etcd_port):
            yield
    finally:
        await director.close()
        with contextlib.suppress(Exception):  # its channel belongs to the operator's loop
            await director_store.close()


async def delete_table(api: aiohttp.ClientSession, table: str, nodes: Sequence[StorageNode]) -> None:
    """Delete the Table resource, wait until the operator releases it, and check that
    none of `nodes` hosts a replica any more."""
    async with api.delete(f"{TABLES}/{table}") as resp:
        assert resp.status < 300

    async def released() -> bool:
        return await get(api, f"{TABLES}/{table}") is None

    await eventually(released, "the Table's finalizer to be released")
    for n in nodes:
        assert await reports(n) == {}, f"{n.node_id} still hosts a replica"


# Seconds a new Table's one partition may take to serve on every member: the members'
# hosting, the group's election, the operator's reports; the nodes start under the load
# of a whole `make test` on two cores.
SERVING_TIMEOUT = 90.0


async def one_serving_partition(
    api: aiohttp.ClientSession, table: str, nodes: Sequence[StorageNode]
) -> dict[str, Any]:
    """The Table's only Partition once it serves with an elected leader; on a timeout, the
    failure shows the Partitions and what every node reports."""
    deadline = time.monotonic() + SERVING_TIMEOUT
    parts: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        parts = await partitions_of(api, table)
        status = (parts[0].get("status") or {}) if len(parts) == 1 else {}
        if status.get("state") == "Serving" and status.get("leader"):
            return parts[0]
        await asyncio.sleep(0.2)
    seen = {}
    for n in nodes:
        try:
            seen[n.node_id] = {name: str(r).replace("\n", " ") for name, r in (await reports(n)).items()}
        except Exception as exc:
            seen[n.node_id] = {"error": repr(exc)}
    raise AssertionError(f"{table}: no partition serving on its members: {parts}; the nodes report {seen}")
