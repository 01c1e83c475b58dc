"""Shared by the control-store tests: a real etcd on free loopback ports, and records."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
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


# Attempts at starting etcd: a port checked free can still be taken before etcd binds it
# (by another worker's cluster, whose ports are picked the same way), and then etcd exits.
_ETCD_STARTS = 3


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Etcd]:
    data = tmp_path_factory.mktemp("etcd")
    for attempt in range(_ETCD_STARTS):
        client, proc = _start_etcd(data / f"data-{attempt}", data / f"etcd-{attempt}.log")
        if proc is not None:
            break
    else:
        raise AssertionError(f"etcd did not start in {_ETCD_STARTS} attempts: see {data}")
    try:
        yield Etcd(client)
    finally:
        proc.kill()
        proc.wait()


def _start_etcd(data: Path, log_path: Path) -> tuple[int, subprocess.Popen[bytes] | None]:
    """etcd on fresh ports, once it listens; None if one of its ports was taken first."""
    client, peer = free_port(), free_port()
    with open(log_path, "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                etcd_binary(),
                "--name=test",
                f"--data-dir={data}",
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
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            text = log_path.read_text()
            assert "address already in use" in text, text
            return client, None
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", client), timeout=0.5):
            # What answered may be the process that took the port: etcd, refused it, exits.
            time.sleep(0.2)
            if proc.poll() is None:
                return client, proc
            continue
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError("etcd did not start listening")
        time.sleep(0.05)


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
