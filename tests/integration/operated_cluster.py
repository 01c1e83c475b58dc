"""A cluster run by the Kubernetes operator, every piece real but the API server: kmock,
the real kopf operator in-process with the gRPC replica director reading what the
groups' leaders publish in a real etcd, the given storage processes in admin hosting
mode, and a router process in Kubernetes mode. Shared by the repair and split tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from partita.autoadmin.kube.grpc_director import GrpcReplicaDirector
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.control.store import EtcdControlStore
from partita.router.credentials import create_credential, credentials_path
from tests.integration.test_kubernetes_e2e import client, start_router
from tests.unit.autoadmin.kube.emulator import create_peering, register_resources
from tests.unit.autoadmin.kube.storage_nodes import StorageNode
from tests.unit.autoadmin.kube.test_operator import operator


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
    register_resources(kmock)
    router_dir = tmp_path / "router"
    router_dir.mkdir()
    create_credential(credentials_path(router_dir), name="default", description="e2e")
    # The director's store is used on the operator's loop (its thread).
    director_store = EtcdControlStore("127.0.0.1", etcd_port)
    director = GrpcReplicaDirector(
        {n.node_id: n.address for n in nodes}.get,
        timeout=2.0,
        replication_address={n.node_id: n.replication_address for n in nodes}.get,
        memberships=director_store,
    )
    router = None
    try:
        for n in nodes:
            n.start()
        for n in nodes:
            await n.wait_serving()
        router, router_port = start_router(router_dir, etcd_port, str(kmock.url), "--replication")
        async with aiohttp.ClientSession(base_url=str(kmock.url)) as api:
            await create_peering(api)
            async with operator(kmock, director, priority=10, config=config, etcd_port=etcd_port):
                yield OperatedCluster(api, {n.node_id: n for n in nodes}, router_dir, router_port)
    finally:
        if router is not None:
            router.terminate()
            router.wait(timeout=15)
        await director.close()
        with contextlib.suppress(Exception):  # its channel belongs to the operator's loop
            await director_store.close()
        for n in nodes:
            n.stop()
