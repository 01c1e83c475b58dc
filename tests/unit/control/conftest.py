"""Shared by the control-store tests: a real etcd on free loopback ports, and records."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aetcd
import aiohttp
import pytest

from partita.cli.supervisor import etcd_binary
from partita.common.partition_map import Partition
from partita.control.kubernetes import KubernetesTableCatalog
from partita.control.model import KeyElement, TableSpec
from partita.control.store import PREFIX
from tests.ports import free_port
from tests.unit.autoadmin.kube.emulator import NS, register_resources


@dataclass
class Etcd:
    port: int


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Etcd]:
    data = tmp_path_factory.mktemp("etcd")
    client, peer = free_port(), free_port()
    with open(data / "etcd.log", "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                etcd_binary(),
                "--name=test",
                f"--data-dir={data / 'data'}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                "--log-level=error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (data / "etcd.log").read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", client), timeout=0.5):
                break
            assert time.monotonic() < deadline, "etcd did not start listening"
            time.sleep(0.05)
        yield Etcd(client)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
async def raw(etcd: Etcd) -> AsyncIterator[aetcd.Client]:
    client = aetcd.Client(host="127.0.0.1", port=etcd.port, timeout=5)
    await client.delete_prefix(PREFIX)  # each test starts from an empty store
    yield client
    await client.close()


def table(name: str = "Orders", table_id: int = 11) -> TableSpec:
    return TableSpec(
        name=name,
        table_id=table_id,
        partition_key=KeyElement("pk", "S"),
        sort_key=KeyElement("sk", "N"),
        attribute_definitions=(("pk", "S"), ("sk", "N")),
        billing_mode="PROVISIONED",
        read_capacity=5,
        write_capacity=5,
        created_at=1.5,
    )


TWO_PARTITIONS = (
    Partition("p0", 0, 2**63, ("n1",), "n1"),
    Partition("p1", 2**63, 2**64, ("n2",), "n2"),
)


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.1)


# A Kubernetes-backed table catalog on the kmock API server, and a raw client of that
# server (the Kubernetes catalog's tests and its indexes' tests).
@pytest.fixture
async def catalog(kmock: Any) -> AsyncIterator[KubernetesTableCatalog]:
    register_resources(kmock)
    kube = KubernetesTableCatalog(str(kmock.url), NS)
    yield kube
    await kube.close()


@pytest.fixture
async def api(kmock: Any) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=str(kmock.url)) as session:
        yield session
