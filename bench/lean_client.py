"""A lean DynamoDB client for benchmarks: raw HTTP/1.1 keep-alive on asyncio, SigV4, orjson.

Why not boto3/aiobotocore: botocore spends ~1.5 ms of CPU per call building, signing and
parsing through its model layer, so on a 2-core machine it saturates a core near 600
ops/s and the benchmark would measure the client, not the server. This client does only
what the wire needs: an orjson body, a real SigV4 signature (the same algorithm the
server verifies), a pre-formatted request head, and httptools (a C parser, already a
Partita dependency) for the response. Budget: well under 100 µs of client CPU per call.

Concurrency model: a fixed set of connections. Each connection keeps a FIFO of pending
responses, so it supports HTTP/1.1 pipelining, but the harness by default gives every
worker its own connection (one request in flight per connection, like YCSB's one thread
per connection) because pipelining adds head-of-line blocking to measured latency and
not every server handles it.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import httptools  # type: ignore[import-untyped,unused-ignore]
import orjson

_REPO = Path(__file__).resolve().parent.parent

SignFn = Callable[..., dict[str, str]]

# The signer is the product's own (services/partita/common/sigv4.py), so the benchmark
# signs exactly as the router verifies. The harness runs from a checkout where `partita`
# may not be pip-installed, so fall back to the source root, as pytest's `pythonpath` does.
try:
    from partita.common.sigv4 import sign_request
except ModuleNotFoundError as exc:  # pragma: no cover - depends on how the venv was set up
    if exc.name != "partita":
        raise
    sys.path.insert(0, str(_REPO / "services"))
    from partita.common.sigv4 import sign_request

CONTENT_TYPE = "application/x-amz-json-1.0"
TARGET_PREFIX = "DynamoDB_20120810."


class ClientError(Exception):
    """A transport-level failure (connection lost, timeout, unparsable response)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


@dataclass(slots=True)
class Response:
    """One answer: HTTP status, DynamoDB error type (None on 200) and the parsed body."""

    status: int
    error_type: str | None
    data: dict[str, Any]


def parse_response(status: int, body: bytes) -> Response:
    """Decode a DynamoDB JSON answer; never drop an error on the floor.

    Non-200 answers carry `__type` like "com.amazonaws.dynamodb.v20120810#ThrottlingException";
    keep only the part after '#', which is what SDKs expose as the error code.
    """
    try:
        data = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        data = {}
        if status == 200:
            return Response(status, "InvalidJSONResponse", data)
    if not isinstance(data, dict):
        data = {"value": data}
    if status == 200:
        return Response(status, None, data)
    raw_type = data.get("__type")
    error_type = str(raw_type).rsplit("#", 1)[-1] if raw_type else f"HTTP{status}"
    return Response(status, error_type, data)


class _HttpConnection(asyncio.Protocol):
    """One keep-alive connection; responses are matched to requests in FIFO order."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._body: list[bytes] = []
        # (future, monotonic send time) per request written and not yet answered.
        self._pending: collections.deque[tuple[asyncio.Future[tuple[int, bytes]], float]] = (
            collections.deque()
        )
        self.closed = False

    # asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, so cast rather than check.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ClientError("BadHttpResponse", str(exc)))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ClientError("ConnectionLost", str(exc) if exc else "closed by peer"))

    # httptools callbacks --------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._body = []

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        status = self._parser.get_status_code()
        body = b"".join(self._body)
        self._body = []
        if not self._pending:
            # An answer nobody asked for: the stream is out of sync, so it cannot be trusted.
            self.abort()
            return
        fut, _ = self._pending.popleft()
        if not fut.done():
            fut.set_result((status, body))
        if not self._parser.should_keep_alive():
            self.abort()

    # client side ----------------------------------------------------------------------
    def send(self, data: bytes) -> asyncio.Future[tuple[int, bytes]]:
        fut: asyncio.Future[tuple[int, bytes]] = self._loop.create_future()
        if self.closed or self._transport is None:
            fut.set_exception(ClientError("ConnectionLost", "connection is closed"))
            return fut
        self._pending.append((fut, time.monotonic()))
        self._transport.write(data)
        return fut

    def oldest_pending_since(self) -> float | None:
        return self._pending[0][1] if self._pending else None

    def abort(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.abort()

    def _fail(self, exc: ClientError) -> None:
        while self._pending:
            fut, _ = self._pending.popleft()
            if not fut.done():
                fut.set_exception(exc)


class AmzDateCache:
    """X-Amz-Date changes once a second; formatting it per request would waste CPU."""

    __slots__ = ("_sec", "_value")

    def __init__(self) -> None:
        self._sec = -1
        self._value = ""

    def now(self) -> str:
        sec = int(time.time())
        if sec != self._sec:
            self._sec = sec
            self._value = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(sec))
        return self._value


class LeanClient:
    """DynamoDB JSON over a fixed pool of keep-alive connections.

    `call(op, payload, conn_index)` sends on the given connection (callers pin a worker to
    a connection); a lost or timed-out connection is replaced on the next call to it.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        access_key: str,
        secret_key: str,
        region: str = "us-east-1",
        connections: int = 1,
        request_timeout: float = 10.0,
        signer: SignFn = sign_request,
        ca_bundle: str = "",
    ) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or parts.hostname is None:
            raise ValueError(f"only http and https endpoints are supported, got {endpoint!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        # HTTPS: the router's certificate checked against `ca_bundle` (or the system's).
        self._tls = ssl.create_default_context(cafile=ca_bundle or None) if parts.scheme == "https" else None
        # The Host header must be exactly what we sign; default ports are omitted by SDKs.
        self.host_header = parts.netloc
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.request_timeout = request_timeout
        self._signer = signer
        self._dates = AmzDateCache()
        self._conns: list[_HttpConnection | None] = [None] * connections
        self._connecting: list[asyncio.Future[_HttpConnection] | None] = [None] * connections
        self._watchdog: asyncio.Task[None] | None = None

    @property
    def connections(self) -> int:
        return len(self._conns)

    async def start(self) -> None:
        """Open every connection up front so connection set-up is not in measured latency."""
        await asyncio.gather(*(self._connection(i) for i in range(len(self._conns))))
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch_timeouts())

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        for conn in self._conns:
            if conn is not None:
                conn.abort()
        self._conns = [None] * len(self._conns)

    async def _watch_timeouts(self) -> None:
        # One periodic sweep instead of asyncio.wait_for per request: wait_for creates a
        # task per call, which would cost more CPU than the rest of the client together.
        interval = min(1.0, self.request_timeout / 4)
        while True:
            await asyncio.sleep(interval)
            deadline = time.monotonic() - self.request_timeout
            for conn in self._conns:
                if conn is None:
                    continue
                since = conn.oldest_pending_since()
                if since is not None and since < deadline:
                    conn._fail(ClientError("ClientTimeout", f"no answer in {self.request_timeout}s"))
                    conn.abort()

    async def _connection(self, index: int) -> _HttpConnection:
        conn = self._conns[index]
        if conn is not None and not conn.closed:
            return conn
        pending = self._connecting[index]
        if pending is not None:
            return await pending
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[_HttpConnection] = loop.create_future()
        self._connecting[index] = fut
        try:
            _, proto = await loop.create_connection(
                lambda: _HttpConnection(loop), self.host, self.port, ssl=self._tls
            )
            self._conns[index] = proto
            fut.set_result(proto)
            return proto
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: concurrent waiters re-raise it themselves
            raise
        finally:
            self._connecting[index] = None

    def build_request(self, op: str, body: bytes) -> bytes:
        """The full request bytes for one DynamoDB operation, signed with SigV4."""
        target = TARGET_PREFIX + op
        signed = self._signer(
            method="POST",
            host=self.host_header,
            path="/",
            query="",
            headers={"content-type": CONTENT_TYPE, "x-amz-target": target},
            body=body,
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=self.region,
            amz_date=self._dates.now(),
            service="dynamodb",
        )
        extra = "".join(f"{k}: {v}\r\n" for k, v in signed.items())
        head = (
            f"POST / HTTP/1.1\r\nHost: {self.host_header}\r\n"
            f"Content-Type: {CONTENT_TYPE}\r\nX-Amz-Target: {target}\r\n"
            f"{extra}Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("latin-1") + body

    async def call_raw(self, op: str, body: bytes, conn_index: int = 0) -> Response:
        """Send a pre-serialised body; raises ClientError on transport failures."""
        data = self.build_request(op, body)
        conn = self._conns[conn_index]
        if conn is None or conn.closed:
            try:
                conn = await self._connection(conn_index)
            except OSError as exc:
                raise ClientError("ConnectError", str(exc)) from exc
        status, resp_body = await conn.send(data)
        return parse_response(status, resp_body)

    async def call(self, op: str, payload: Mapping[str, Any], conn_index: int = 0) -> Response:
        return await self.call_raw(op, orjson.dumps(payload), conn_index)
