"""Real storage node processes in admin hosting mode on 127.0.0.1, for the director
and end-to-end tests: each registers with a real etcd (as in Kubernetes, where routers
find data addresses there) and hosts only what the admin RPC assigns."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.ports import free_port

# Generous: three Python processes start at once on a shared two-core machine.
START_TIMEOUT = 90.0


@dataclass
class StorageNode:
    node_id: str
    zone: str
    data_dir: Path
    etcd_port: int
    port: int = field(default_factory=free_port)
    data_port: int = field(default_factory=free_port)
    # Run replication groups on a fixed replication port (as the chart's pods do).
    replication: bool = False
    replication_port: int = field(default_factory=free_port)
    # What the node registers in etcd as its replication address (default: its own).
    advertise: str | None = None
    # More `partita storage` flags (its capacity, its load reports).
    extra_args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    served: bool = False  # it has served once: its ports are known to others
    log_offset: int = 0  # where this start's output begins in the log

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def replication_address(self) -> str:
        return f"127.0.0.1:{self.replication_port}"

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "partita.cli.main", "storage",
            f"--node-id={self.node_id}", f"--zone={self.zone}", "--host=127.0.0.1",
            f"--port={self.port}", f"--data-port={self.data_port}", f"--data-dir={self.data_dir}",
            f"--etcd=127.0.0.1:{self.etcd_port}", "--hosting=admin", "--unsafe-no-fsync",
            "--stats-interval=0.2",
            *([
                "--replication", f"--replication-listen=127.0.0.1:{self.replication_port}",
                f"--replication-advertise={self.advertise or self.replication_address}",
            ] if self.replication else []),
            *self.extra_args,
        ]  # fmt: skip

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir.parent / f"{self.node_id}.log"
        self.log_offset = path.stat().st_size if path.exists() else 0
        log = open(path, "ab")  # noqa: SIM115 (the child keeps it)
        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=log)
        log.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        path = self.data_dir.parent / f"{self.node_id}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    async def wait_serving(self) -> None:
        """Until the node's health service says SERVING (the readiness probe's check).
        A first start whose ports another process took between `free_port` and the
        node's bind (other suites run on the same machine) starts again on new ports,
        at most twice; a restart keeps its ports (its peers know them)."""
        for _ in range(2):
            if self.served or not await self._port_clash():
                break
            self.port, self.data_port, self.replication_port = free_port(), free_port(), free_port()
            self.start()
        await self._wait_serving()
        self.served = True

    async def _port_clash(self) -> bool:
        """Whether the process exited at start because a port was taken."""
        deadline = time.monotonic() + START_TIMEOUT
        while self.proc is not None and self.proc.poll() is None:
            if await self._serving() or time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.1)
        path = self.data_dir.parent / f"{self.node_id}.log"
        with open(path, "rb") as log:
            log.seek(self.log_offset)
            # The kernel's wording (grpc) or uvloop's ("address already in use").
            return b"address already in use" in log.read().lower()

    async def _serving(self) -> bool:
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)  # type: ignore[no-untyped-call]
            with contextlib.suppress(grpc.aio.AioRpcError):
                answer = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)
        return False

    async def _wait_serving(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)  # type: ignore[no-untyped-call]
            while True:
                assert self.proc is not None and self.proc.poll() is None, self.log()
                with contextlib.suppress(grpc.aio.AioRpcError):
                    answer = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if answer.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                assert time.monotonic() < deadline, f"{self.node_id} did not become ready:\n{self.log()}"
                await asyncio.sleep(0.1)


@contextlib.contextmanager
def storage_nodes(
    root: Path,
    etcd_port: int,
    zones: tuple[str, ...] = ("a", "b", "c"),
    replication: bool = False,
    advertise: str | None = None,
) -> Iterator[list[StorageNode]]:
    nodes = [
        StorageNode(
            f"pt-storage-{z}-0",
            z,
            root / f"node-{z}",
            etcd_port,
            replication=replication,
            advertise=advertise,
        )
        for z in zones
    ]
    try:
        for n in nodes:
            n.start()
        yield nodes
    finally:
        for n in nodes:
            n.stop()
