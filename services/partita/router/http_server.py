"""A small HTTP/1.1 server on asyncio.Protocol and httptools.

The router's only HTTP needs are DynamoDB's: POST with a Content-Length body,
keep-alive, a GET health check. A parser callback object per connection and direct
transport writes keep the per-request cost near the parser's own (~a few µs), where
a general framework adds tens of µs. Requests on one connection are answered in order
(pipelining-safe); connections are independent.

Self-protection (`HttpLimits`): whatever a client does, a connection costs bounded
memory and time. Header bytes and count are capped while they arrive; a request must
finish its headers and its body within their timeouts, and a connection with nothing
to do is closed after the idle timeout (a slowloris client is cut off). Requests in
flight are bounded per connection and per process; beyond, the answer is 503 in
DynamoDB's JSON form, which every AWS SDK retries. Write backpressure: while a
connection's unsent answers are above the high-water mark, the router stops reading
it and stops answering it, so a client that pipelines and never reads holds at most
the mark plus its requests in flight.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any, cast

import httptools

log = logging.getLogger(__name__)

# DynamoDB's largest request (BatchWriteItem) is 16 MB; anything larger is refused
# before it is buffered.
MAX_BODY_BYTES = 16 * 1024 * 1024 + 64 * 1024
# Where the first of several Accept-Encoding headers is kept (their joined value stays
# under "accept-encoding", which the signature covers): DynamoDB chooses an answer's
# coding from the first alone. No header can have this name (it holds a colon).
FIRST_ACCEPT_ENCODING = ":first accept-encoding"

# The header names DynamoDB clients send, as they send them, to their lower-case text.
_HEADER_NAMES = {
    raw: raw.decode("latin-1").lower()
    for text in (
        "Host", "Content-Type", "X-Amz-Target", "X-Amz-Date", "Authorization", "Content-Length",
        "User-Agent", "Accept-Encoding", "Connection", "X-Amz-Security-Token", "amz-sdk-invocation-id",
        "amz-sdk-request", "X-Amz-Content-SHA256", "Accept",
    )
    for raw in (text.encode(), text.lower().encode())
}  # fmt: skip

_REASONS = {
    200: b"OK",
    400: b"Bad Request",
    404: b"Not Found",
    408: b"Request Timeout",
    413: b"Payload Too Large",
    500: b"Internal Server Error",
    503: b"Service Unavailable",
}


@dataclass(slots=True)
class HttpRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    # The client's address and whether it came over TLS: the context resource policies'
    # conditions read (aws:SourceIp, aws:SecureTransport).
    peer: str = ""
    secure: bool = False


@dataclass(slots=True)
class HttpResponse:
    status: int
    body: bytes
    headers: bytes = b""  # extra header lines, each "Name: value\r\n", rendered once


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What one client may cost the router. Defaults are far above what an AWS SDK
    needs (its headers are about 1-2 KB in a dozen fields; it sends one request per
    connection at a time) and far below what would hurt the process."""

    # Request line + header names and values: DynamoDB's 16 KB, refused with a 400
    # (Alternator's DynamoDB-verified test_too_large_request_headers / _line).
    max_header_bytes: int = 16 * 1024
    max_headers: int = 100
    header_timeout: float = 20.0  # first byte of a request to the end of its headers
    body_timeout: float = 60.0  # end of the headers to the end of the body (16 MB)
    idle_timeout: float = 120.0  # a connection with no request under way
    max_in_flight_per_connection: int = 16  # parsed and not yet answered (pipelining)
    max_in_flight: int = 2048  # the whole process
    write_high_water: int = 1024 * 1024  # unsent answer bytes before reading pauses


class InFlight:
    """Requests in flight in the process, shared by every connection."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Connections:
    """The connections a server has open, so that a stopping router lets each one finish
    what it was asked before it closes (`finish`)."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: set[HttpProtocol] = set()

    async def finish(self, timeout: float) -> None:
        """Close idle connections now and the others once their requests are answered
        (the last answer says `Connection: close`, so the client opens its next
        connection elsewhere instead of finding this one reset); wait at most `timeout`."""
        for connection in list(self.open):
            connection.finish()
        deadline = time.monotonic() + timeout
        while self.open and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


# Connection phases, for the timeouts.
_IDLE, _HEADERS, _BODY, _BUSY = 0, 1, 2, 3


class HttpProtocol(asyncio.Protocol):
    def __init__(
        self,
        handler: Handler,
        limits: HttpLimits | None = None,
        in_flight: InFlight | None = None,
        connections: Connections | None = None,
    ) -> None:
        self._handler = handler
        self._connections = connections
        self._last = False  # finish(): close once what was asked is answered
        self._limits = limits or HttpLimits()
        self._in_flight = in_flight or InFlight()
        self._pending = 0  # this connection's requests parsed and not yet answered
        self._header_bytes = 0
        self._header_count = 0
        self._phase = _IDLE
        self._message_phase = _IDLE  # how far the request being parsed has come
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0  # when the timer fires (time.monotonic)
        self._header_raw = 0  # bytes received while the current request's headers last
        self._can_write: asyncio.Future[None] | None = None  # set while writing is paused
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._body_size = 0
        # Requests to answer in order; an HttpResponse is a parse error's answer, sent
        # after the answers to the requests before it, and then the connection closes.
        self._queue: deque[tuple[HttpRequest | HttpResponse, bool]] = deque()
        # One task per connection answers its requests in turn and then waits on
        # `_wakeup` for the next: cheaper than a task per request on keep-alive
        # connections, where every DynamoDB client sends many.
        self._worker: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None
        self._closing = False
        self._parse_failed = False
        self._peer = ""
        self._secure = False

    # --- asyncio.Protocol -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = cast(asyncio.Transport, transport)
        # Kept: asyncio.get_running_loop() makes a getpid() system call every time.
        self._loop = asyncio.get_running_loop()
        self._transport.set_write_buffer_limits(high=self._limits.write_high_water)
        address = transport.get_extra_info("peername")
        self._peer = str(address[0]) if isinstance(address, tuple) and address else ""
        self._secure = transport.get_extra_info("sslcontext") is not None
        self._enter(_IDLE)
        if self._connections is not None:
            self._connections.open.add(self)

    def finish(self) -> None:
        """Answer the requests already received, then close: at once if there are none."""
        self._last = True
        if self._nothing_asked():
            self._close()

    def _nothing_asked(self) -> bool:
        """No request waits for its answer, and none is partly received."""
        return self._pending == 0 and not self._queue and self._message_phase == _IDLE

    # --- timeouts -------------------------------------------------------------------

    def _enter(self, phase: int) -> None:
        """Moves the connection's deadline; the timer only checks it when it fires, so
        a phase change costs a clock read, not a timer."""
        self._phase = phase
        limits = self._limits
        if phase == _BUSY:
            return  # the handler's own time: no client timeout applies
        timeout = (
            limits.idle_timeout
            if phase == _IDLE
            else limits.header_timeout
            if phase == _HEADERS
            else limits.body_timeout
        )
        self._deadline = deadline = time.monotonic() + timeout
        if self._timer is None or deadline < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._schedule(timeout)

    def _schedule(self, delay: float) -> None:
        self._timer_at = time.monotonic() + delay
        self._timer = self._loop.call_later(delay, self._check_deadline)

    def _check_deadline(self) -> None:
        self._timer = None
        if self._closing or self._transport is None:
            return
        if self._phase == _BUSY:
            self._schedule(self._limits.idle_timeout)
            return
        left = self._deadline - time.monotonic()
        if left > 0:
            self._schedule(left)
            return
        if self._phase == _IDLE:
            self._close()
        else:  # a request that did not arrive in time
            self._reply_and_close(408, _TIMEOUT)

    # --- write backpressure ---------------------------------------------------------

    def pause_writing(self) -> None:
        # The client is not reading its answers: stop reading its requests too.
        if self._can_write is None:
            self._can_write = self._loop.create_future()
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        waiter, self._can_write = self._can_write, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._transport is not None and not self._closing:
            self._transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self._parse_failed:
            return  # the stream cannot be parsed past an error; the answer is queued
        in_headers = self._message_phase == _HEADERS
        try:
            self._parser.feed_data(data)
            # httptools buffers a header until its line ends, so its size is also
            # counted here, on the bytes that arrived while the headers were under way.
            if in_headers and self._message_phase == _HEADERS:
                self._header_raw += len(data)
                if self._header_raw > self._limits.max_header_bytes:
                    raise _HeadersTooLarge
        except httptools.HttpParserUpgrade:
            self._reply_and_close(400, _MALFORMED)
        except httptools.HttpParserError as exc:
            # httptools wraps an exception raised in a callback (our _TooLarge) in
            # HttpParserCallbackError, keeping the original as the context.
            if isinstance(exc.__context__, _TooLarge):
                self._reply_too_large()
            elif isinstance(exc.__context__, _HeadersTooLarge):
                self._reply_and_close(400, _HEADERS_TOO_LARGE)
            else:
                self._reply_and_close(400, _MALFORMED)
        except _TooLarge:
            self._reply_too_large()
        except _HeadersTooLarge:
            self._reply_and_close(400, _HEADERS_TOO_LARGE)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._connections is not None:
            self._connections.open.discard(self)
        if self._worker is not None:
            self._worker.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._in_flight.count -= self._pending
        self._pending = 0
        waiter, self._can_write = self._can_write, None
        if waiter is not None and not waiter.done():
            waiter.cancel()

    # --- httptools callbacks --------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._body_size = 0
        self._header_bytes = 0
        self._header_count = 0
        self._header_raw = 0
        self._message_phase = _HEADERS
        if self._phase != _BUSY:
            self._enter(_HEADERS)

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._header_bytes += len(url)
        if self._header_bytes > self._limits.max_header_bytes:
            raise _HeadersTooLarge

    def on_headers_complete(self) -> None:
        self._message_phase = _BODY
        if self._phase != _BUSY:
            self._enter(_BODY)

    def on_header(self, name: bytes, value: bytes) -> None:
        # httptools may deliver one header in pieces: each piece counts its bytes, and
        # the count is of pieces too (never fewer than the headers).
        self._header_bytes += len(name) + len(value)
        self._header_count += 1
        if (
            self._header_bytes > self._limits.max_header_bytes
            or self._header_count > self._limits.max_headers
        ):
            raise _HeadersTooLarge
        key = _HEADER_NAMES.get(name) or name.decode("latin-1").lower()
        # The signature covers the bytes sent; surrogateescape keeps non-UTF-8 bytes
        # recoverable so the verifier canonicalises exactly what was signed.
        text = value.decode("utf-8", "surrogateescape")
        previous = self._headers.get(key)
        if previous is None:
            self._headers[key] = text
        else:
            self._headers[key] = f"{previous},{text}"
            if key == "accept-encoding":
                self._headers.setdefault(FIRST_ACCEPT_ENCODING, previous)
        if key == "content-length" and text.isdigit() and int(text) > MAX_BODY_BYTES:
            raise _TooLarge

    def on_body(self, body: bytes) -> None:
        self._body_size += len(body)
        if self._body_size > MAX_BODY_BYTES:
            raise _TooLarge
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._url == b"/":  # every DynamoDB request
            path, query = "/", ""
        else:
            # Any: httptools' stubs type path and query as bytes, but either may be None,
            # and compiled code (native-modules.txt) checks the declared type.
            url: Any = httptools.parse_url(self._url)
            path = url.path.decode("latin-1") if url.path else "/"
            query = url.query.decode("latin-1") if url.query else ""
        body = self._body
        request = HttpRequest(
            method=self._parser.get_method().decode(),
            path=path,
            query=query,
            headers=self._headers,
            body=body[0] if len(body) == 1 else b"".join(body),
            peer=self._peer,
            secure=self._secure,
        )
        keep_alive = self._parser.should_keep_alive()
        self._message_phase = _IDLE
        limits = self._limits
        if (
            self._pending >= limits.max_in_flight_per_connection
            or self._in_flight.count >= limits.max_in_flight
        ):
            # Answered in order like any request, without running it.
            self._queue.append((HttpResponse(503, _UNAVAILABLE, _JSON), keep_alive))
        else:
            self._pending += 1
            self._in_flight.count += 1
            self._queue.append((request, keep_alive))
        if self._phase != _BUSY:
            self._enter(_IDLE)
        self._start_worker()

    def _start_worker(self) -> None:
        if self._worker is None or self._worker.done():
            self._worker = self._loop.create_task(self._drain())
        elif self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    # --- answering ------------------------------------------------------------------

    async def _drain(self) -> None:
        while not self._closing:
            if not self._queue:
                self._wakeup = self._loop.create_future()
                await self._wakeup
                self._wakeup = None
                continue
            if self._can_write is not None:
                await self._can_write  # the client is behind on reading: answer later
                continue
            request, keep_alive = self._queue.popleft()
            if isinstance(request, HttpResponse):
                if request.status == 503:  # refused for load: the connection stays usable
                    self._write(request, keep_alive)
                    if keep_alive:
                        continue
                else:
                    self._write(request, False)
                self._close()
                return
            self._phase = _BUSY
            try:
                response = await self._handler(request)
            except Exception:
                log.exception("handler failed")
                response = HttpResponse(
                    500,
                    b'{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError",'
                    b'"message":"Internal server error"}',
                )
            finally:
                self._pending -= 1
                self._in_flight.count -= 1
            self._enter(self._message_phase)  # the next request may be partly there
            if self._last and self._nothing_asked():
                keep_alive = False  # finishing: this was the last request asked
            self._write(response, keep_alive, send_body=request.method != "HEAD")
            if not keep_alive:
                self._close()
                return

    def _write(self, response: HttpResponse, keep_alive: bool, send_body: bool = True) -> None:
        """`send_body` False answers a HEAD: the same headers (Content-Length included),
        no body, so the next answer on the connection starts where the client expects."""
        if self._transport is None or self._transport.is_closing():
            return
        status = response.status
        self._transport.write(
            b"HTTP/1.1 %d %s\r\n%s%sContent-Length: %d\r\n%s\r\n%s"
            % (
                status,
                _REASONS.get(status, b"Unknown"),
                _SERVER_AND_DATE.current(),
                response.headers,
                len(response.body),
                b"" if keep_alive else b"Connection: close\r\n",
                response.body if send_body else b"",
            )
        )

    def _reply_and_close(self, status: int, body: bytes) -> None:
        self._parse_failed = True
        self._queue.append(
            (HttpResponse(status, body, b"Content-Type: application/x-amz-json-1.0\r\n"), False)
        )
        self._start_worker()

    def _reply_too_large(self) -> None:
        self._reply_and_close(413, _TOO_LARGE)

    def _close(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.close()


class ServerAndDate:
    """The `Server` and `Date` lines every DynamoDB answer carries (its Server says
    "Server"), rendered once a second rather than once an answer."""

    __slots__ = ("_lines", "_second")

    def __init__(self) -> None:
        self._second = -1
        self._lines = b""

    def current(self) -> bytes:
        second = int(time.time())
        if second != self._second:
            self._second = second
            self._lines = b"Server: Server\r\nDate: %s\r\n" % formatdate(second, usegmt=True).encode()
        return self._lines


_SERVER_AND_DATE = ServerAndDate()

# Answers given before a request could be parsed are still DynamoDB JSON error bodies,
# so an SDK reports them as errors instead of failing to parse the answer. The service
# framework's own errors spell the text "Message".
_MALFORMED = (
    b'{"__type":"com.amazon.coral.service#SerializationException","Message":"Malformed HTTP request"}'
)
_TOO_LARGE = b'{"__type":"com.amazon.coral.service#SerializationException","Message":"Request size exceeded"}'


_HEADERS_TOO_LARGE = (
    b'{"__type":"com.amazon.coral.service#SerializationException","Message":"Request headers too large"}'
)
_TIMEOUT = b'{"__type":"com.amazon.coral.service#SerializationException","Message":"Request timed out"}'
# What DynamoDB answers when it sheds load; SDKs retry a 503 with backoff.
_UNAVAILABLE = (
    b'{"__type":"com.amazonaws.dynamodb.v20120810#ServiceUnavailable",'
    b'"message":"The service is currently unavailable or busy."}'
)
_JSON = b"Content-Type: application/x-amz-json-1.0\r\n"


class _TooLarge(Exception):
    pass


class _HeadersTooLarge(Exception):
    pass


async def start_http_server(
    handler: Handler,
    host: str,
    port: int,
    limits: HttpLimits | None = None,
    reuse_port: bool = False,
    connections: Connections | None = None,
    tls: ssl.SSLContext | None = None,
) -> asyncio.Server:
    """`reuse_port`: several processes listen on the port (SO_REUSEPORT), and the kernel
    spreads new connections over them. `connections`: kept up to date with the open
    connections (for `Connections.finish`). `tls`: serve HTTPS with this context."""
    loop = asyncio.get_running_loop()
    chosen = limits or HttpLimits()
    in_flight = InFlight()
    return await loop.create_server(
        lambda: HttpProtocol(handler, chosen, in_flight, connections),
        host,
        port,
        reuse_address=True,
        reuse_port=reuse_port or None,
        backlog=1024,
        ssl=tls,
    )
