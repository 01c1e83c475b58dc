"""Doorman master failover with real processes and a real etcd: SIGKILL the master;
the standby wins the election, runs learning mode (echoing the leases clients hold),
clients follow it, and no client uses more than its last lease during the switch."""

from __future__ import annotations

import asyncio
import signal
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from partita._proto import doorman_pb2 as pb
from partita._proto import doorman_pb2_grpc
from partita.doorman.client import Client, RateResource
from tests.integration.doorman_process import DoormanProcess
from tests.unit.control.conftest import Etcd, etcd

__all__ = ["etcd"]

pytestmark = pytest.mark.integration

CONFIG = """
resources:
  - identifier_glob: "*"
    capacity: 100
    algorithm: {kind: FAIR_SHARE, lease_length: 8, refresh_interval: 1}
"""
WANTS = {"a": 50.0, "b": 30.0, "c": 40.0}
FAIR = {"a": 35.0, "b": 30.0, "c": 35.0}  # 100 shared max-min fairly


class Server(DoormanProcess):
    def __init__(self, name: str, tmp: Path, etcd_port: int, election: str) -> None:
        super().__init__(
            name,
            tmp,
            [
                "--config", str(tmp / "doorman.yaml"),
                "--etcd", f"127.0.0.1:{etcd_port}",
                "--election-name", election,
            ],
        )  # fmt: skip

    async def is_master(self) -> bool:
        # A server just started may take a connection before its gRPC service answers
        # (UNAVAILABLE): ask again, for a bounded time.
        deadline = time.monotonic() + 10
        while True:
            async with grpc.aio.insecure_channel(self.address) as channel:
                stub = doorman_pb2_grpc.CapacityStub(channel)  # type: ignore[no-untyped-call]
                try:
                    out = await stub.Discovery(pb.DiscoveryRequest(), timeout=2)
                    return bool(out.is_master)
                except grpc.aio.AioRpcError as exc:
                    self.assert_running()
                    if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                        raise
            await asyncio.sleep(0.2)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return str(r.read().decode())


@pytest.fixture
def servers(etcd: Etcd, tmp_path: Path) -> Iterator[Callable[[str], Server]]:
    (tmp_path / "doorman.yaml").write_text(CONFIG)
    election = f"failover-{uuid.uuid4().hex[:8]}"
    started: list[Server] = []

    def start(name: str) -> Server:
        server = Server(name, tmp_path, etcd.port, election)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


async def eventually(check: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.05)


async def test_sigkill_of_the_master_the_standby_takes_over_without_overgranting(
    servers: Callable[[str], Server],
) -> None:
    master = servers("first")
    deadline = time.monotonic() + 20
    while not await master.is_master():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    standby = servers("second")
    assert not await standby.is_master()

    # Clients know the standby first: every one of them starts by following a redirect.
    clients = {name: Client([standby.address, master.address], name) for name in WANTS}
    rates: dict[str, RateResource] = {name: c.rate("r", wants=WANTS[name]) for name, c in clients.items()}
    ops: dict[str, list[float]] = {name: [] for name in WANTS}
    samples: list[tuple[float, dict[str, float]]] = []

    async def use(name: str) -> None:
        while True:
            await rates[name].wait()
            ops[name].append(time.monotonic())

    async def sample() -> None:
        while True:
            samples.append((time.monotonic(), {n: r.capacity for n, r in rates.items()}))
            await asyncio.sleep(0.05)

    for c in clients.values():
        c.start()
    tasks = [asyncio.create_task(use(n)) for n in WANTS] + [asyncio.create_task(sample())]
    try:
        await eventually(lambda: all(rates[n].capacity == pytest.approx(FAIR[n]) for n in WANTS))
        assert all(
            c.connection.current == master.address and c.connection.redirects >= 1 for c in clients.values()
        )
        before = {n: r.capacity for n, r in rates.items()}

        master.process.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        master.process.wait(10)
        deadline = time.monotonic() + 20
        while not await standby.is_master():
            assert time.monotonic() < deadline, standby.log.read_text()
            await asyncio.sleep(0.05)
        took_over = time.monotonic()
        await eventually(
            lambda: all(c.connection.current == standby.address and c.reachable for c in clients.values())
        )
        # Each client has refreshed with the new master: it is learning, and echoes.
        await asyncio.sleep(1.5)
        assert 'partita_doorman_learning_mode{resource="r"} 1.0' in standby.metrics()
        switch_end = time.monotonic()
        assert switch_end - killed_at < 8  # within the leases: nobody ran dry

        for t, caps in samples:
            assert sum(caps.values()) <= 100 + 1e-6
            if killed_at <= t <= switch_end:
                for n in WANTS:
                    assert caps[n] == pytest.approx(before[n]), (n, t - killed_at)
        for n in WANTS:
            during = [t for t in ops[n] if killed_at <= t <= switch_end]
            assert len(during) >= 1
            assert len(during) <= before[n] * (switch_end - killed_at) + 1, n

        # Learning mode lasts a lease length (8 s); then the new master's algorithm
        # shares fairly again.
        await eventually(
            lambda: 'partita_doorman_learning_mode{resource="r"} 0.0' in standby.metrics(), timeout=15
        )
        assert time.monotonic() - took_over >= 6
        await eventually(lambda: all(rates[n].capacity == pytest.approx(FAIR[n]) for n in WANTS))
        assert sum(r.capacity for r in rates.values()) <= 100 + 1e-6
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in clients.values():
            await c.close()
