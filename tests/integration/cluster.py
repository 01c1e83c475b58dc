"""A real local cluster for tests: `partita up` as a subprocess on free loopback ports."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
from botocore.config import Config

from partita.control.store import EtcdControlStore
from tests.integration.raw_http import RawHttp
from tests.ports import port_is_free

T = TypeVar("T")

START_TIMEOUT = 180.0  # a shared 2-core machine starts ten processes slowly
STOP_TIMEOUT = 30.0
# Layouts tried before giving up: a range free when chosen can be taken before `partita
# up` binds it (a cluster of the other test worker choosing an overlapping range at the
# same moment made a whole worker's suite error once).
LAYOUT_ATTEMPTS = 5


class PortTaken(RuntimeError):
    """`partita up` did not start because one of its ports was taken: found free when the
    layout was chosen, then taken by another process (another cluster of the same run, say)
    before `partita up` checked it, or before one of its processes bound it."""


def free_port_layout() -> dict[str, int]:
    """Ports for router, etcd (client+peer) and 3 storage nodes (admin + data at +100,
    metrics at +200)."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        # Below Linux's ephemeral range (32768-60999): a port free now but inside it can
        # be taken a moment later by any outgoing connection or by a listener on port 0
        # (each storage node's replication listener), and `partita up` then fails.
        base = rng.randrange(20000, 32768 - 400, 10)
        ports = {"router": base, "etcd": base + 2, "storage": base + 5, "doorman": base + 8}
        wanted = [
            base,
            base + 2,
            base + 3,
            *[base + 5 + i for i in range(3)],
            *[base + 105 + i for i in range(3)],
            *[base + 205 + i for i in range(3)],  # storage nodes' /metrics
            base + 5 + 299,  # the autoadmin's /metrics
            *[base + 8 + i for i in (0, 1, 100, 101)],  # Doorman gRPC and metrics
        ]
        if all(port_is_free(p) for p in wanted):
            return ports
    raise RuntimeError("no free port range found")


@dataclass
class Cluster(RawHttp):
    data_dir: Path
    ports: dict[str, int]
    process: subprocess.Popen[bytes] | None = None
    extra_args: tuple[str, ...] = ()  # more `partita up` flags

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['router']}"

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "partita.cli.main", "up",
            "--data-dir", str(self.data_dir),
            "--port", str(self.ports["router"]),
            "--etcd-port", str(self.ports["etcd"]),
            "--storage-base-port", str(self.ports["storage"]),
            "--doorman-base-port", str(self.ports["doorman"]),
            *self.extra_args,
        ]  # fmt: skip

    def _port_clash(self, up_log: str) -> bool:
        """Whether `partita up` (its own check) or one of its processes (binding) found a
        port of the layout taken."""
        if "is already in use" in up_log:
            return True
        logs = self.data_dir / "logs"
        # gRPC says "Address already in use", uvloop's servers (/metrics) "address already in use".
        return logs.is_dir() and any(
            "address already in use" in path.read_text(errors="replace").lower()
            for path in logs.glob("*.log")
        )

    def start(self, timeout: float = START_TIMEOUT) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offset = len(self.read_log())
        log = open(self.data_dir / "up.log", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log_text = self.read_log()
                failure = PortTaken if self._port_clash(log_text[offset:]) else RuntimeError
                raise failure(f"partita up exited: {log_text}")
            if "Partita is running" in self.read_log()[offset:]:
                return
            time.sleep(0.1)
        raise RuntimeError(f"partita up did not start: {self.read_log()}")

    def read_log(self) -> str:
        path = self.data_dir / "up.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, sig: int = signal.SIGINT) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        code = self.process.wait(STOP_TIMEOUT)
        self.process = None
        return code

    def credentials(self) -> dict[str, Any]:
        data = json.loads((self.data_dir / "credentials.json").read_text())
        cred: dict[str, Any] = data["credentials"][0]
        return cred

    def client(self, service: str = "dynamodb", **overrides: Any) -> Any:
        """A boto3 client of `service` ("dynamodb" or "dynamodbstreams": one endpoint)."""
        cred = self.credentials()
        kwargs: dict[str, Any] = {
            "endpoint_url": self.endpoint,
            "region_name": "us-east-1",
            "aws_access_key_id": cred["access_key_id"],
            "aws_secret_access_key": cred["secret_access_key"],
            "config": Config(retries={"max_attempts": 2, "mode": "standard"}, read_timeout=30),
        }
        kwargs.update(overrides)
        return boto3.client(service, **kwargs)

    def cluster_file(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.data_dir / "cluster.json").read_text())
        return data

    def pid_of(self, name: str) -> int:
        for proc in self.cluster_file()["processes"]:
            if proc["name"] == name:
                return int(proc["pid"])
        raise KeyError(name)

    def wait_restarted(self, name: str, old_pid: int, timeout: float = 30.0) -> int:
        """Wait until the supervisor restarted `name` and its ports answer again."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = next(p for p in self.cluster_file()["processes"] if p["name"] == name)
            if proc["pid"] != old_pid and all(not port_is_free(p) for p in proc["ports"].values()):
                return int(proc["pid"])
            time.sleep(0.1)
        raise TimeoutError(f"{name} was not restarted: {self.read_log()}")

    def signed_headers(
        self,
        operation: str,
        body: bytes,
        *,
        secret: str | None = None,
        amz_date: str | None = None,
        content_type: str = "application/x-amz-json-1.0",
    ) -> dict[str, str]:
        """Headers of a SigV4-signed DynamoDB request, as a client would send them."""
        from partita.common.sigv4 import sign_request

        cred = self.credentials()
        host = f"127.0.0.1:{self.ports['router']}"
        headers = {
            "Content-Type": content_type,
            "X-Amz-Target": f"DynamoDB_20120810.{operation}",
            "Host": host,
        }
        headers.update(
            sign_request(
                method="POST",
                host=host,
                path="/",
                query="",
                headers=headers,
                body=body,
                access_key=cred["access_key_id"],
                secret_key=secret or cred["secret_access_key"],
                region="us-east-1",
                amz_date=amz_date or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
            )
        )
        return headers


@contextmanager
def running(data_dir: Path, *extra_args: str) -> Iterator[Cluster]:
    """A cluster started on free ports, stopped on the way out unless a test already did."""
    c = start_on_free_ports(data_dir, extra_args)
    try:
        yield c
    finally:
        if c.process is not None:
            c.stop()


def _clear_but_the_log(data_dir: Path) -> None:
    """Remove what a failed start left in `data_dir` (etcd's data, the nodes' stores, the
    processes' logs), keeping `partita up`'s own log, which says why it failed."""
    for path in data_dir.iterdir():
        if path.name == "up.log":
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def start_on_free_ports(data_dir: Path, extra_args: tuple[str, ...] = ()) -> Cluster:
    """A started cluster, on another layout each time a port of the last was taken."""
    for _ in range(LAYOUT_ATTEMPTS - 1):
        c = Cluster(data_dir, free_port_layout(), extra_args=extra_args)
        try:
            c.start()
            return c
        except PortTaken:
            _clear_but_the_log(data_dir)  # nothing was served: the next layout starts anew
            continue
    c = Cluster(data_dir, free_port_layout(), extra_args=extra_args)
    c.start()
    return c


def create_pk_table(client: Any, name: str, timeout: float = 10.0, **extra: Any) -> None:
    """An ACTIVE table keyed by the string "pk" alone; on demand unless `extra` gives
    ProvisionedThroughput."""
    if "ProvisionedThroughput" not in extra:
        extra.setdefault("BillingMode", "PAY_PER_REQUEST")
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        **extra,
    )
    wait_active(client, name, timeout=timeout)


def shard_records(streams: Any, arn: str, shard_id: str) -> list[dict[str, Any]]:
    """Every record of a stream's shard, from its oldest, read until a page comes back
    empty or the shard is closed and read to its end (boto3 `dynamodbstreams` client)."""
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    records: list[dict[str, Any]] = []
    for _ in range(1000):
        page = streams.get_records(ShardIterator=iterator)
        records.extend(page["Records"])
        if not page["Records"] or "NextShardIterator" not in page:
            return records
        iterator = page["NextShardIterator"]
    raise AssertionError(f"shard {shard_id} still had records after 1000 pages")


def wait_active(client: Any, name: str, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        table: dict[str, Any] = client.describe_table(TableName=name)["Table"]
        if table["TableStatus"] == "ACTIVE":
            return table
        time.sleep(0.05)
    raise TimeoutError(f"table {name} not ACTIVE")


def with_store(cluster: Cluster, call: Callable[[EtcdControlStore], Awaitable[T]]) -> T:
    """One call on the cluster's control store (its etcd), from a synchronous test."""

    async def run() -> T:
        store = EtcdControlStore("127.0.0.1", cluster.ports["etcd"])
        try:
            return await call(store)
        finally:
            await store.close()

    return asyncio.run(run())


def create_small_table(client: Any, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """A hash-key table (`pk`, S) whose provisioned throughput makes it one partition,
    once ACTIVE."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )
    return wait_active(client, name, timeout=timeout)


def wait_gone(client: Any, name: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.describe_table(TableName=name)
        except client.exceptions.ResourceNotFoundException:
            return
        time.sleep(0.05)
    raise TimeoutError(f"table {name} still exists")


def clip_burst_savings(
    client: Any,
    name: str,
    key: Callable[[int], dict[str, Any]],
    rcu: int,
    wcu: int,
    touches: int = 40,
    clipped: Callable[[], bool] | None = None,
) -> None:
    """Empties most of a provisioned table's burst savings, which start full (300 s x its
    rate, so a new table admits a short load at once, as DynamoDB does): a test of
    throttling lowers the write rate to 1 WCU, which clips the router's and every
    partition's savings to 300 s of it, writes `touches` small items (`key(i)` gives
    their keys) so every partition's node applies the lower rate, then restores the
    rates. Savings left: at most 300 WCU per bucket. `clipped`, when given, says whether
    every partition's node has applied the lower rate: the touches go on (30 s at most)
    until it does, since a loaded node can learn the new rate after the first touches."""
    client.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": rcu, "WriteCapacityUnits": 1}
    )
    wait_active(client, name, timeout=30)
    time.sleep(1.0)  # every storage node sees the new rate
    for i in range(touches):
        client.put_item(TableName=name, Item=key(i))
    deadline = time.monotonic() + 30.0
    i = touches
    while clipped is not None and not clipped():
        assert time.monotonic() < deadline, "the storage nodes never applied the lower rate"
        client.put_item(TableName=name, Item=key(i % touches))
        i += 1
        time.sleep(0.2)
    client.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": rcu, "WriteCapacityUnits": wcu}
    )
    wait_active(client, name, timeout=30)


def kill_router(cluster: Cluster, timeout: float = 30.0) -> None:
    """SIGKILL the router process; return once `partita up` restarted it and it answers
    (the port may look taken by the old router's closing connections for a moment)."""
    old = cluster.pid_of("router")
    os.kill(old, signal.SIGKILL)
    cluster.wait_restarted("router", old)
    deadline = time.monotonic() + timeout
    while True:
        try:
            cluster.health()
            return
        except OSError:
            assert time.monotonic() < deadline, "the restarted router does not answer"
            time.sleep(0.1)
