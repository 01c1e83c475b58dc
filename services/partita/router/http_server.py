"""A small HTTP/1.1 server on asyncio.Protocol and httptools.

The router's only HTTP needs are DynamoDB's: POST with a Content-Length body,
keep-alive, a GET health check. A parser callback object per connection and direct
transport writes keep the per-request cost near the parser's own (~a few µs), where
a general framework adds tens of µs. Requests on one connection are answered in order
(pipelining-safe); connections are independent.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import httptools

log = logging.getLogger(__name__)

# DynamoDB's largest request (BatchWriteItem) is 16 MB; anything larger is refused
# before it is buffered.
MAX_BODY_BYTES = 16 * 1024 * 1024 + 64 * 1024

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


@dataclass(slots=True)
class HttpResponse:
    status: int
    body: bytes
    headers: bytes = b""  # extra header lines, each "Name: value\r\n", rendered once


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


class HttpProtocol(asyncio.Protocol):
    def __init__(self, handler: Handler) -> None:
        self._handler = handler
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

    # --- asyncio.Protocol -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = cast(asyncio.Transport, transport)
        # Kept: asyncio.get_running_loop() makes a getpid() system call every time.
        self._loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        if self._parse_failed:
            return  # the stream cannot be parsed past an error; the answer is queued
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._reply_and_close(400, _MALFORMED)
        except httptools.HttpParserError as exc:
            # httptools wraps an exception raised in a callback (our _TooLarge) in
            # HttpParserCallbackError, keeping the original as the context.
            if isinstance(exc.__context__, _TooLarge):
                self._reply_too_large()
            else:
                self._reply_and_close(400, _MALFORMED)
        except _TooLarge:
            self._reply_too_large()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._worker is not None:
            self._worker.cancel()

    # --- httptools callbacks --------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._body_size = 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = _HEADER_NAMES.get(name) or name.decode("latin-1").lower()
        # The signature covers the bytes sent; surrogateescape keeps non-UTF-8 bytes
        # recoverable so the verifier canonicalises exactly what was signed.
        text = value.decode("utf-8", "surrogateescape")
        previous = self._headers.get(key)
        self._headers[key] = text if previous is None else f"{previous},{text}"
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
        )
        self._queue.append((request, self._parser.should_keep_alive()))
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
            request, keep_alive = self._queue.popleft()
            if isinstance(request, HttpResponse):
                self._write(request, False)
                self._close()
                return
            try:
                response = await self._handler(request)
            except Exception:
                log.exception("handler failed")
                response = HttpResponse(
                    500,
                    b'{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError",'
                    b'"message":"Internal server error"}',
                )
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
            b"HTTP/1.1 %d %s\r\n%sContent-Length: %d\r\n%s\r\n%s"
            % (
                status,
                _REASONS.get(status, b"Unknown"),
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


# Answers given before a request could be parsed are still DynamoDB JSON error bodies,
# so an SDK reports them as errors instead of failing to parse the answer. The service
# framework's own errors spell the text "Message".
_MALFORMED = (
    b'{"__type":"com.amazon.coral.service#SerializationException","Message":"Malformed HTTP request"}'
)
_TOO_LARGE = b'{"__type":"com.amazon.coral.service#SerializationException","Message":"Request size exceeded"}'


class _TooLarge(Exception):
    pass


async def start_http_server(handler: Handler, host: str, port: int) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: HttpProtocol(handler), host, port, reuse_address=True, backlog=1024
    )
