"""The router's self-protection on a real socket, one behaviour per test, with small
limits so each shows in milliseconds: header size and count, header/body/idle
timeouts, requests in flight per connection and per process (503 in DynamoDB's JSON
form, the connection still usable), and write backpressure (a client that never reads
its answers stops being read and answered)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from partita.router.http_server import HttpLimits, HttpRequest, HttpResponse, start_http_server
from tests.unit.router.test_http_server import read_response

REQUEST = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


@dataclass
class Served:
    port: int
    calls: int = 0
    release: asyncio.Event | None = None


async def serve(limits: HttpLimits, body: bytes = b"{}", hold: bool = False) -> tuple[asyncio.Server, Served]:
    served = Served(0, release=asyncio.Event() if hold else None)

    async def handler(request: HttpRequest) -> HttpResponse:
        served.calls += 1
        if served.release is not None:
            await served.release.wait()
        return HttpResponse(200, body)

    server = await start_http_server(handler, "127.0.0.1", 0, limits)
    served.port = server.sockets[0].getsockname()[1]
    return server, served


@pytest.fixture
async def stop() -> AsyncIterator[Callable[[asyncio.Server], None]]:
    servers: list[asyncio.Server] = []
    yield servers.append
    for s in servers:
        s.close()


async def closed(reader: asyncio.StreamReader, within: float) -> bytes:
    """Everything the server sends until it closes the connection (fails if it does not)."""
    return await asyncio.wait_for(reader.read(-1), within)


async def test_headers_over_the_byte_limit_are_refused_while_they_arrive(stop: Callable) -> None:
    server, served = await serve(HttpLimits(max_header_bytes=1024))
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nX-Big: ")
    await writer.drain()
    await asyncio.sleep(0.05)
    for _ in range(2):  # a header that never ends, as a stream of reads (2 KB > 1 KB)
        writer.write(b"a" * 1024)
        await writer.drain()
        await asyncio.sleep(0.02)
    answer = await closed(reader, 5)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"Request headers too large" in answer
    assert served.calls == 0


async def test_too_many_headers_are_refused(stop: Callable) -> None:
    server, served = await serve(HttpLimits(max_headers=10))
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(20))
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\n" + many + b"Content-Length: 0\r\n\r\n")
    answer = await closed(reader, 5)
    assert answer.startswith(b"HTTP/1.1 400 ")


async def test_a_slowloris_is_cut_off_by_the_header_timeout(stop: Callable) -> None:
    server, served = await serve(HttpLimits(header_timeout=0.3, idle_timeout=30))
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\n")
    for _ in range(3):  # a byte now and then, never the end of the headers
        await asyncio.sleep(0.05)
        writer.write(b"X")
    answer = await closed(reader, 5)
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_a_body_that_does_not_arrive_is_cut_off_by_the_body_timeout(stop: Callable) -> None:
    server, served = await serve(HttpLimits(body_timeout=0.3, header_timeout=30, idle_timeout=30))
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    answer = await closed(reader, 5)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert served.calls == 0


async def test_an_idle_connection_is_closed_after_the_idle_timeout(stop: Callable) -> None:
    server, served = await serve(HttpLimits(idle_timeout=0.3))
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(REQUEST)
    assert (await read_response(reader)).status == 200  # a keep-alive answer, then silence
    assert await closed(reader, 5) == b""


async def test_a_connection_in_use_is_not_closed_as_idle(stop: Callable) -> None:
    server, served = await serve(HttpLimits(idle_timeout=0.3))
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    for _ in range(6):  # 0.6 s in all, never 0.3 s without a request
        writer.write(REQUEST)
        assert (await read_response(reader)).status == 200
        await asyncio.sleep(0.1)


async def test_pipelined_requests_beyond_the_connection_limit_get_503(stop: Callable) -> None:
    server, served = await serve(HttpLimits(max_in_flight_per_connection=2), hold=True)
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(REQUEST * 5)
    await asyncio.sleep(0.2)
    assert served.calls == 1  # the first is running; one more waits; three are refused
    assert served.release is not None
    served.release.set()
    statuses = [(await read_response(reader)) for _ in range(5)]
    assert [r.status for r in statuses] == [200, 200, 503, 503, 503]
    refused = json.loads(statuses[2].body)
    assert refused["__type"].endswith("#ServiceUnavailable")
    writer.write(REQUEST)  # the connection is still usable
    assert (await read_response(reader)).status == 200


async def test_requests_beyond_the_process_limit_get_503(stop: Callable) -> None:
    server, served = await serve(HttpLimits(max_in_flight=1), hold=True)
    stop(server)
    first_reader, first = await asyncio.open_connection("127.0.0.1", served.port)
    first.write(REQUEST)
    await asyncio.sleep(0.1)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(REQUEST)
    assert (await read_response(reader)).status == 503
    assert served.release is not None
    served.release.set()
    assert (await read_response(first_reader)).status == 200
    writer.write(REQUEST)
    assert (await read_response(reader)).status == 200  # the slot is free again


async def test_a_client_that_never_reads_stops_being_answered(stop: Callable) -> None:
    """200 pipelined requests for 256 KB answers, none read: the server stops once its
    unsent answers pass the high-water mark (plus the socket buffers), instead of
    running every request and holding 50 MB of answers."""
    limits = HttpLimits(write_high_water=512 * 1024, max_in_flight_per_connection=1000)
    server, served = await serve(limits, body=b"x" * 256 * 1024)
    stop(server)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(REQUEST * 200)
    await asyncio.sleep(1.0)
    stalled = served.calls
    assert stalled < 60  # the mark and the kernel's socket buffers, not 200
    await asyncio.sleep(0.5)
    assert served.calls == stalled  # and it stays there while the client does not read
    answered = 0
    for _ in range(200):  # reading resumes the answers, every one in order
        assert (await read_response(reader)).status == 200
        answered += 1
    assert answered == 200 and served.calls == 200
