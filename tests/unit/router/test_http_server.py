"""The router's HTTP/1.1 server on a real socket: keep-alive, pipelining, bad input."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from partita.control.store import MemoryControlStore
from partita.router import http_server
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import CredentialStore
from partita.router.http_server import HttpRequest, HttpResponse, start_http_server
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    port: int
    seen: list[HttpRequest] = field(default_factory=list)

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)


async def read_response(reader: asyncio.StreamReader) -> Response:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    assert lines[0].startswith("HTTP/1.1 ")
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 10)
    return Response(status, headers, body)


async def read_to_eof(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), 10)


def post(body: bytes, path: str = "/", extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server(0)

    async def handler(request: HttpRequest) -> HttpResponse:
        state.seen.append(request)
        if request.body == b"boom":
            raise RuntimeError("handler bug")
        if request.body.startswith(b"slow"):
            await asyncio.sleep(0.05)
        return HttpResponse(200, b"echo:" + request.body, b"X-Path: " + request.path.encode() + b"\r\n")

    srv = await start_http_server(handler, "127.0.0.1", 0)
    state.port = srv.sockets[0].getsockname()[1]
    yield state
    srv.close()
    await srv.wait_closed()


async def test_keep_alive_serves_several_requests_on_one_connection(server: Server) -> None:
    reader, writer = await server.connect()
    for i in range(4):
        writer.write(post(b"req-%d" % i))
        response = await read_response(reader)
        assert response.status == 200
        assert response.body == b"echo:req-%d" % i
        assert "connection" not in response.headers
    writer.close()
    assert len(server.seen) == 4


async def test_pipelined_requests_are_answered_in_order(server: Server) -> None:
    reader, writer = await server.connect()
    # The first is the slowest to handle; its answer must still come first.
    writer.write(post(b"slow-1") + post(b"fast-2") + post(b"fast-3", path="/third"))
    bodies = [(await read_response(reader)).body for _ in range(3)]
    assert bodies == [b"echo:slow-1", b"echo:fast-2", b"echo:fast-3"]
    writer.close()


async def test_a_request_split_across_many_writes_is_reassembled(server: Server) -> None:
    reader, writer = await server.connect()
    raw = post(
        b'{"TableName":"Orders"}',
        path="/a%20b?x=1&y=2",
        extra="X-Amz-Target: A\r\nX-Multi: 1\r\nX-Multi: 2\r\n",
    )
    for i in range(0, len(raw), 7):
        writer.write(raw[i : i + 7])
        await writer.drain()
    response = await read_response(reader)
    assert response.body == b'echo:{"TableName":"Orders"}'
    request = server.seen[-1]
    assert request.method == "POST"
    assert request.path == "/a%20b"
    assert request.query == "x=1&y=2"
    assert request.headers["x-amz-target"] == "A"
    assert request.headers["x-multi"] == "1,2"
    writer.close()


async def test_malformed_http_gets_400_and_the_connection_is_closed(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(b"THIS IS NOT HTTP\r\n\r\n")
    response = await read_response(reader)
    assert response.status == 400
    assert response.headers.get("connection") == "close"
    assert await read_to_eof(reader) == b""
    writer.close()
    assert server.seen == []


async def test_a_head_answer_has_headers_only_and_the_connection_stays_in_step(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + post(b"next"))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"Content-Length: 5\r\n" in head  # what a GET would carry, but no body follows
    response = await read_response(reader)
    assert response.body == b"echo:next"
    writer.close()


async def test_a_nul_byte_in_a_header_gets_a_dynamodb_json_error_body(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: A\x00B\r\nContent-Length: 2\r\n\r\n{}")
    response = await read_response(reader)
    assert response.status == 400
    body = json.loads(response.body)
    assert body["__type"] == "com.amazon.coral.service#SerializationException"
    assert isinstance(body["Message"], str)
    assert response.headers.get("content-type") == "application/x-amz-json-1.0"
    writer.close()
    assert server.seen == []


async def test_an_oversize_content_length_gets_413_before_any_body_is_read(server: Server) -> None:
    reader, writer = await server.connect()
    too_big = http_server.MAX_BODY_BYTES + 1
    writer.write(f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {too_big}\r\n\r\n".encode())
    response = await read_response(reader)
    assert response.status == 413
    assert b"SerializationException" in response.body
    assert response.headers.get("connection") == "close"
    assert await read_to_eof(reader) == b""
    writer.close()
    assert server.seen == []


async def test_an_oversize_chunked_body_gets_413(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_server, "MAX_BODY_BYTES", 1000)
    reader, writer = await server.connect()
    chunk = b"x" * 600
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2)
    response = await read_response(reader)
    assert response.status == 413
    assert await read_to_eof(reader) == b""
    writer.close()
    assert server.seen == []


async def test_a_body_of_exactly_the_limit_is_accepted(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_server, "MAX_BODY_BYTES", 1000)
    reader, writer = await server.connect()
    writer.write(post(b"y" * 1000))
    response = await read_response(reader)
    assert response.status == 200
    assert len(response.body) == len(b"echo:") + 1000
    writer.close()


async def test_connection_close_is_honoured_after_the_answer(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(post(b"last", extra="Connection: close\r\n"))
    response = await read_response(reader)
    assert response.body == b"echo:last"
    assert response.headers.get("connection") == "close"
    assert await read_to_eof(reader) == b""
    writer.close()


async def test_http_1_0_without_keep_alive_is_closed_after_the_answer(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi")
    head = await asyncio.wait_for(reader.read(), 10)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert head.endswith(b"echo:hi")


async def test_a_failing_handler_answers_500_and_keeps_the_connection(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(post(b"boom") + post(b"after"))
    first = await read_response(reader)
    assert first.status == 500
    assert b"InternalServerError" in first.body
    second = await read_response(reader)
    assert second.status == 200 and second.body == b"echo:after"
    writer.close()


async def test_get_health_check_answers_200(tmp_path: Path) -> None:
    (tmp_path / "credentials.json").write_text('{"version": 1, "credentials": []}')
    store = MemoryControlStore()
    ctx = RouterContext(TableCache(store), store, StorageClient(), RouterSettings())
    app = DynamoApp(ctx, CredentialStore(tmp_path / "credentials.json"))
    srv = await start_http_server(app, "127.0.0.1", 0)
    try:
        port = srv.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: router.local\r\n\r\n")
        response = await read_response(reader)
        assert response.status == 200
        assert response.body.startswith(b"healthy")
        writer.close()
    finally:
        srv.close()
        await srv.wait_closed()


async def test_answers_to_requests_before_a_malformed_one_are_sent_first(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(post(b"slow-1") + post(b"fast-2") + b"NOT HTTP AT ALL\r\n\r\n")
    first = await read_response(reader)
    second = await read_response(reader)
    third = await read_response(reader)
    assert (first.status, first.body) == (200, b"echo:slow-1")
    assert (second.status, second.body) == (200, b"echo:fast-2")
    assert third.status == 400
    assert third.headers.get("connection") == "close"
    assert await read_to_eof(reader) == b""
    writer.close()


async def test_a_malformed_request_arriving_while_one_is_handled_waits_for_its_answer(server: Server) -> None:
    reader, writer = await server.connect()
    writer.write(post(b"slow-1"))
    await writer.drain()
    for _ in range(100):  # until the handler has the request
        if server.seen:
            break
        await asyncio.sleep(0.005)
    writer.write(b"\x00\x01garbage\r\n\r\n")
    first = await read_response(reader)
    assert (first.status, first.body) == (200, b"echo:slow-1")
    assert (await read_response(reader)).status == 400
    assert await read_to_eof(reader) == b""
    writer.close()


async def _counted_server(
    handler: http_server.Handler,
) -> tuple[asyncio.Server, http_server.Connections, int]:
    """A server on a free port that keeps its open connections (for finish())."""
    connections = http_server.Connections()
    srv = await start_http_server(handler, "127.0.0.1", 0, connections=connections)
    return srv, connections, srv.sockets[0].getsockname()[1]


async def test_finishing_closes_idle_connections_at_once_and_busy_ones_after_their_answer() -> None:
    """A stopping router (SIGTERM, a rolling restart): a client on an idle keep-alive
    connection sees it closed, not reset mid-request later; a request under way is
    answered, marked `Connection: close`, and only then is its connection closed."""
    release = asyncio.Event()

    async def handler(request: HttpRequest) -> HttpResponse:
        if request.body == b"wait":
            await release.wait()
        return HttpResponse(200, b"done:" + request.body)

    srv, connections, port = await _counted_server(handler)
    try:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
        idle_writer.write(post(b"first"))
        assert (await read_response(idle_reader)).headers.get("connection") is None  # kept alive
        busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", port)
        busy_writer.write(post(b"wait"))
        while len(connections.open) < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the busy request reaches the handler
        srv.close()
        finishing = asyncio.create_task(connections.finish(timeout=10))
        assert await read_to_eof(idle_reader) == b""  # closed with nothing sent
        assert not finishing.done()  # the busy connection is still being answered
        release.set()
        answer = await read_response(busy_reader)
        assert (answer.status, answer.body, answer.headers["connection"]) == (200, b"done:wait", "close")
        assert await read_to_eof(busy_reader) == b""
        await asyncio.wait_for(finishing, 5)
        assert connections.open == set()
        idle_writer.close()
        busy_writer.close()
    finally:
        srv.close()
        await srv.wait_closed()


async def test_finishing_waits_no_longer_than_its_timeout_for_an_unanswered_request() -> None:
    async def never(request: HttpRequest) -> HttpResponse:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    srv, connections, port = await _counted_server(never)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post(b"stuck"))
        while not connections.open:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        await asyncio.wait_for(connections.finish(timeout=0.2), 5)
        assert len(connections.open) == 1  # left to the process's exit
        writer.close()
        for _ in range(500):  # the client's close ends it
            if not connections.open:
                break
            await asyncio.sleep(0.01)
        assert connections.open == set()
    finally:
        srv.close()
