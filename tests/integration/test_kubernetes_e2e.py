"""Kubernetes end to end, every piece real but the API server: kmock's in-memory API
server, the real kopf operator in-process with the gRPC replica director, three real
storage node processes in admin hosting mode (node names resolved to their 127.0.0.1
ports), a real etcd where they register, and a router process in Kubernetes mode
pointed at kmock. A Table resource becomes Partitions, replicas hosted, an ACTIVE
Table; boto3 writes and reads through the router; deleting the Table drops the replicas
and their data before its finalizer is released."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import boto3
import pytest
from botocore.config import Config

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.grpc_director import GrpcReplicaDirector
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.control.kubernetes import KUBE_API_ENV, default_table_id
from partita.router.credentials import create_credential, credentials_path, load
from partita.storage.engine import Engine
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
from tests.unit.autoadmin.kube.storage_nodes import free_port, storage_nodes
from tests.unit.autoadmin.kube.test_operator import operator
from tests.unit.control.conftest import Etcd, etcd  # noqa: F401 (the etcd fixture)

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(400)]
ROUTER_TIMEOUT = 60.0


def start_router(
    data_dir: Path, etcd_port: int, api_url: str, *extra: str
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, KUBE_API_ENV: api_url}
    log = open(data_dir / "router.log", "ab")  # noqa: SIM115 (the child keeps it)
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "partita.cli.main", "router", "--host=127.0.0.1", f"--port={port}",
            f"--etcd=127.0.0.1:{etcd_port}", f"--data-dir={data_dir}", "--control-store=kubernetes",
            f"--namespace={NS}", *extra,
        ],
        env=env, stdout=log, stderr=log,
    )  # fmt: skip
    log.close()
    return proc, port


def client(data_dir: Path, port: int) -> Any:
    cred = load(credentials_path(data_dir))[0]
    return boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id=cred.access_key_id,
        aws_secret_access_key=cred.secret_access_key,
        config=Config(retries={"total_max_attempts": 1}, read_timeout=10, connect_timeout=2),
    )


async def until(check: Any, what: str, timeout: float = ROUTER_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = await asyncio.to_thread(check)
            if result:
                return result
        except Exception as exc:  # the router starting, or routes not yet refreshed
            last = exc
        await asyncio.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}; last error: {last!r}")


async def test_a_table_resource_becomes_active_serves_boto3_and_its_deletion_drops_the_data(
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
    with storage_nodes(tmp_path / "storage", etcd.port) as nodes:
        for n in nodes:
            await n.wait_serving()
        addresses = {n.node_id: n.address for n in nodes}
        assert set(addresses) == {node.node_id for node in fleet.nodes()}
        director = GrpcReplicaDirector(addresses.get, timeout=3.0)
        router, router_port = start_router(router_dir, etcd.port, str(kmock.url))
        try:
            async with aiohttp.ClientSession(base_url=str(kmock.url)) as api:
                await create_peering(api)
                async with operator(kmock, director, priority=10, config=config):
                    await api.post(TABLES, json=table_manifest("music", replicationFactor=3))

                    async def active() -> Any:
                        body = await get(api, f"{TABLES}/music")
                        return (
                            body
                            if ((body or {}).get("status") or {}).get("tableStatus") == "ACTIVE"
                            else None
                        )

                    await eventually(active, "the Table to become ACTIVE")
                    parts = await partitions_of(api, "music")
                    assert len(parts) == 2
                    for part in parts:
                        status = part["status"]
                        assert status["state"] == "Serving"
                        assert {m["state"] for m in status["members"]} == {"Serving"}
                        assert status["leader"] == part["spec"]["members"][0]["node"]

                    dynamo = client(router_dir, router_port)
                    items = {f"song-{i}": str(i) for i in range(20)}

                    def put_all() -> bool:
                        for pk, n in items.items():
                            dynamo.put_item(TableName="Music", Item={"pk": {"S": pk}, "n": {"N": n}})
                        return True

                    await until(put_all, "PutItem through the router")
                    for pk, n in items.items():
                        got = await asyncio.to_thread(
                            dynamo.get_item, TableName="Music", Key={"pk": {"S": pk}}, ConsistentRead=True
                        )
                        assert got["Item"] == {"pk": {"S": pk}, "n": {"N": n}}
                    described = await asyncio.to_thread(dynamo.describe_table, TableName="Music")
                    assert described["Table"]["TableStatus"] == "ACTIVE"

                    # Point-in-time recovery rides the Table's annotation; a restore is a
                    # Table of its own, copied by the router and undone from the history.
                    await asyncio.to_thread(
                        dynamo.update_continuous_backups,
                        TableName="Music",
                        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
                    )
                    await asyncio.sleep(1.0)  # the routers' refresh: writes carry the history now
                    moment = time.time()
                    await asyncio.sleep(1.0)
                    for pk in list(items)[:5]:
                        await asyncio.to_thread(dynamo.delete_item, TableName="Music", Key={"pk": {"S": pk}})
                    await asyncio.to_thread(
                        dynamo.restore_table_to_point_in_time,
                        SourceTableName="Music",
                        TargetTableName="MusicThen",
                        RestoreDateTime=moment,
                    )

                    def restored() -> dict[str, str] | None:
                        table = dynamo.describe_table(TableName="MusicThen")["Table"]
                        if table["TableStatus"] != "ACTIVE":
                            return None
                        found = dynamo.scan(TableName="MusicThen", ConsistentRead=True)["Items"]
                        return {i["pk"]["S"]: i["n"]["N"] for i in found}

                    assert await until(restored, "the point-in-time restore") == items

                    async with api.delete(f"{TABLES}/music") as resp:
                        assert resp.status < 300

                    async def released() -> bool:
                        return await get(api, f"{TABLES}/music") is None

                    await eventually(released, "the Table's finalizer to be released")
                    assert await partitions_of(api, "music") == []
        finally:
            router.terminate()
            router.wait(timeout=15)
            await director.close()
        for n in nodes:
            n.stop()
        table_id = default_table_id(NS, "music")
        for n in nodes:
            engine = Engine.open(n.data_dir, sync=False)
            try:
                assert table_id not in engine.table_ids(), f"{n.node_id} still holds the table's data"
            finally:
                await engine.close()
