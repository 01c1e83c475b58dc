"""The gRPC server shell and the client library over real gRPC on 127.0.0.1, with
the in-memory election (the etcd one has its own tests)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from partita._proto import doorman_pb2 as pb
from partita._proto import doorman_pb2_grpc
from partita.common.metrics import serve_metrics
from partita.doorman.client import BlockingClient, Client, Mode
from partita.doorman.connection import Backoff, Connection, Unavailable
from partita.doorman.core import ServerCore
from partita.doorman.election import InMemoryElection, InMemoryLock
from partita.doorman.repository import ResourceRepository, template
from partita.doorman.server import DoormanServer


def repository(capacity: float = 100, **kw: int) -> ResourceRepository:
    kw.setdefault("learning_mode_duration", 0)
    kw.setdefault("lease_length", 20)
    kw.setdefault("refresh_interval", 1)
    return ResourceRepository(pb.ResourceRepository(resources=[template("*", capacity, **kw)]))


@dataclass
class Pair:
    lock: InMemoryLock
    first: DoormanServer
    second: DoormanServer

    @property
    def addresses(self) -> list[str]:
        return [f"127.0.0.1:{self.first.port}", f"127.0.0.1:{self.second.port}"]


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    lock = InMemoryLock()
    first = DoormanServer(ServerCore("first", repository()), InMemoryElection(lock, ""))
    second = DoormanServer(ServerCore("second", repository()), InMemoryElection(lock, ""))
    await first.start("127.0.0.1", 0)
    await eventually(lambda: first.core.is_master)
    await second.start("127.0.0.1", 0)
    await eventually(lambda: second.core.master == f"127.0.0.1:{first.port}")
    yield Pair(lock, first, second)
    for server in (first, second):
        await server.stop(grace=0)


async def eventually(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.02)


async def test_the_first_candidate_leads_and_the_other_redirects_to_it(pair: Pair) -> None:
    assert pair.first.core.is_master and not pair.second.core.is_master
    channel = grpc.aio.insecure_channel(pair.addresses[1])
    stub = doorman_pb2_grpc.CapacityStub(channel)  # type: ignore[no-untyped-call]
    out = await stub.GetCapacity(
        pb.GetCapacityRequest(client_id="c", resource=[pb.ResourceRequest(resource_id="r", wants=5)])
    )
    assert out.mastership.master_address == pair.addresses[0] and not out.response
    discovery = await stub.Discovery(pb.DiscoveryRequest())
    assert not discovery.is_master and discovery.mastership.master_address == pair.addresses[0]
    await channel.close()


async def test_invalid_requests_get_invalid_argument(pair: Pair) -> None:
    channel = grpc.aio.insecure_channel(pair.addresses[0])
    stub = doorman_pb2_grpc.CapacityStub(channel)  # type: ignore[no-untyped-call]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.GetCapacity(
            pb.GetCapacityRequest(client_id="", resource=[pb.ResourceRequest(resource_id="r")])
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await channel.close()
    assert pair.first.metrics.rpcs.labels("GetCapacity", "invalid")._value.get() == 1


async def test_a_connection_follows_a_redirect_without_sleeping(pair: Pair) -> None:
    connection = Connection([pair.addresses[1]])
    started = time.monotonic()
    out = await connection.call(
        "GetCapacity",
        pb.GetCapacityRequest(client_id="c", resource=[pb.ResourceRequest(resource_id="r", wants=5)]),
    )
    assert out.response[0].gets.capacity == 5
    assert connection.redirects == 1 and connection.current == pair.addresses[0]
    assert time.monotonic() - started < 1.0
    await connection.close()


async def test_an_unreachable_server_is_unavailable_and_the_next_address_is_tried(pair: Pair) -> None:
    connection = Connection(["127.0.0.1:1", pair.addresses[0]], timeout=0.5)
    request = pb.GetCapacityRequest(client_id="c", resource=[pb.ResourceRequest(resource_id="r", wants=5)])
    with pytest.raises(Unavailable):
        await connection.call("GetCapacity", request)
    assert (await connection.call("GetCapacity", request)).response[0].gets.capacity == 5
    await connection.close()


def test_backoff_doubles_up_to_its_maximum_and_resets() -> None:
    backoff = Backoff(minimum=1, maximum=8)
    assert [backoff.failed() for _ in range(5)] == [1, 2, 4, 8, 8]
    backoff.succeeded()
    assert backoff.failed() == 1


async def test_clients_share_capacity_fairly_and_release_it_on_close(pair: Pair) -> None:
    a = Client(pair.addresses, "a")
    b = Client(pair.addresses, "b")
    ra = a.rate("r", wants=80)
    rb = b.rate("r", wants=80)
    a.start()
    b.start()
    await eventually(lambda: ra.capacity == 50 and rb.capacity == 50)
    await a.close()
    resource = pair.first.core.resources["r"]
    assert not resource.store.has_client("a")  # released, not left to expire
    await eventually(lambda: rb.capacity == 80)
    await b.close()


async def test_rate_resource_paces_calls_at_the_leased_rate(pair: Pair) -> None:
    async with Client(pair.addresses, "a") as client:
        rate = client.rate("r", wants=20)
        await eventually(lambda: rate.capacity == 20)
        started = time.monotonic()
        for _ in range(21):
            await rate.wait()
        elapsed = time.monotonic() - started
        assert elapsed >= 20 / 20 - 0.01  # 21 calls span at least 20 intervals


async def test_gauge_resource_bounds_concurrent_holders(pair: Pair) -> None:
    async with Client(pair.addresses, "a") as client:
        gauge = client.gauge("g", wants=3)
        await eventually(lambda: gauge.capacity == 3)
        peak = 0

        async def hold() -> None:
            nonlocal peak
            async with gauge:
                peak = max(peak, gauge.in_use)
                await asyncio.sleep(0.02)

        await asyncio.gather(*(hold() for _ in range(10)))
        assert peak == 3 and gauge.in_use == 0
        with pytest.raises(RuntimeError):
            gauge.release()


async def test_wants_are_estimated_from_use_and_grow_when_held_back(pair: Pair) -> None:
    async with Client(pair.addresses, "a") as client:
        rate = client.rate("r")  # no explicit wants
        state = client.resources["r"]
        await eventually(lambda: state.expiry > 0)

        async def busy() -> None:
            while True:
                await rate.wait()

        task = asyncio.create_task(busy())
        await eventually(lambda: rate.capacity >= 20, timeout=15)
        task.cancel()
        assert state.last_wants > 0


@pytest.mark.parametrize(
    "mode,expected", [(Mode.PESSIMISTIC, 0.0), (Mode.OPTIMISTIC, 30.0), (Mode.SAFE, 100.0)]
)
async def test_when_the_lease_lapses_unreachable_the_mode_decides(
    pair: Pair, mode: Mode, expected: float
) -> None:
    now = [time.time()]
    client = Client(pair.addresses, "a", mode=mode, clock=lambda: now[0])
    rate = client.rate("r", wants=30)
    await client.refresh()
    assert rate.capacity == 30
    now[0] += 3600  # the lease (20 s) is long gone and nobody answered since
    assert rate.capacity == expected  # safe: the dynamic safe capacity, 100 / 1 client
    await client.close()


async def test_blocking_client_waits_and_marks(pair: Pair) -> None:
    def use() -> tuple[float, int]:
        with BlockingClient(pair.addresses, "threaded") as client:
            rate = client.rate("r", wants=50)
            gauge = client.gauge("g", wants=2)
            deadline = time.monotonic() + 10
            while rate.capacity != 50 and time.monotonic() < deadline:
                time.sleep(0.02)
            started = time.monotonic()
            for _ in range(11):
                rate.wait()
            with gauge:
                held = gauge.resource.in_use
            return time.monotonic() - started, held

    elapsed, held = await asyncio.to_thread(use)
    assert elapsed >= 10 / 50 - 0.01 and held == 1
    assert not pair.first.core.resources["r"].store.has_client("threaded")  # closed: released


async def test_metrics_endpoint_serves_per_resource_figures(pair: Pair) -> None:
    async with Client(pair.addresses, "a") as client:
        rate = client.rate("table/t/wcu", wants=7)
        await eventually(lambda: rate.capacity == 7)
        server = await serve_metrics("127.0.0.1", 0, pair.first.metrics.registry)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        body = (await reader.read()).decode()
        writer.close()
        server.close()
        assert 'partita_doorman_has{resource="table/t/wcu"} 7.0' in body
        assert 'partita_doorman_wants{resource="table/t/wcu"} 7.0' in body
        assert 'partita_doorman_clients{resource="table/t/wcu"} 1.0' in body
        assert 'partita_doorman_requests_total{method="GetCapacity",result="ok"}' in body
        assert "partita_doorman_is_master 1.0" in body


async def test_the_standby_takes_over_when_the_master_resigns(pair: Pair) -> None:
    async with Client(pair.addresses, "a") as client:
        rate = client.rate("r", wants=10)
        await eventually(lambda: rate.capacity == 10)
        await pair.first.stop(grace=0)
        await eventually(lambda: pair.second.core.is_master)
        await eventually(lambda: client.connection.current == pair.addresses[1] and client.reachable)
        assert rate.capacity == 10


async def test_a_leaf_server_obtains_capacity_from_its_parent_for_its_clients(pair: Pair) -> None:
    leaf = DoormanServer(ServerCore("leaf"), InMemoryElection(InMemoryLock(), ""), parent=[pair.addresses[1]])
    await leaf.start("127.0.0.1", 0)
    try:
        async with Client(f"127.0.0.1:{leaf.port}", "a") as client:
            rate = client.rate("r", wants=30)
            # The leaf learns for 20 s after its election (nothing to learn here), then
            # asks the root, through the standby's redirect, on its clients' behalf.
            await eventually(lambda: "r" in leaf.core.resources)
            leaf.core.resources["r"].learning_mode_end = 0.0
            await eventually(lambda: rate.capacity == 30, timeout=15)
        root_lease = pair.first.core.resources["r"].store.get("leaf")
        assert root_lease.has == 30 and root_lease.subclients == 1
        assert leaf.core.resources["r"].template.algorithm.refresh_interval == 1  # max(1, 1 * 0.5)
    finally:
        await leaf.stop(grace=0)
