"""The node-pair streams replication runs over: framed envelopes on asyncio TCP.

Each node dials every peer it has something for once and keeps that connection; every
group's messages to that peer travel on it, one frame per envelope (the framed-batch
transport of the data path, `common.framing`), so thousands of groups cost one stream
and one frame per round. Delivery is best effort, as the consensus core expects: a frame
that cannot be written now (peer down, connection lost) is dropped and the core resends
what matters (appends, heartbeats); the link reconnects on the next send, at most once
per `RECONNECT_SECONDS`, so a dead peer costs no connect storm.

Failure detection: when a peer's stream to this node breaks, the node probes the peer's
listener a few times; if every probe is refused (or times out) the peer is suspected
dead (`on_liveness(peer, False)`), and its next frame clears that. A SIGKILLed node's
quiesced groups then fail over in about a lease, not after its registration's TTL. A
wrong suspicion costs an election, never safety (the core still waits out its promises).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, cast

from partita.common.config import parse_endpoint
from partita.common.framing import FrameDecoder, FrameError, encode_frame
from partita.storage.replication.coalesce import Envelope
from partita.storage.replication.types import NodeId
from partita.storage.replication.wire import WireError, decode_envelope, encode_envelope

log = logging.getLogger(__name__)

RECONNECT_SECONDS = 0.2
CONNECT_TIMEOUT_SECONDS = 1.0
# Frames queued for a peer while its connection is being made; beyond this they are
# dropped (the core resends).
MAX_QUEUED_FRAMES = 1024
# A broken incoming stream: probes of the peer's listener, this far apart, all of which
# must fail before the peer is suspected dead.
SUSPECT_PROBES = 3
SUSPECT_PROBE_SECONDS = 0.15


class _Link:
    """The outgoing stream to one peer."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.writer: asyncio.StreamWriter | None = None
        self.queue: list[bytes] = []
        self.connecting: asyncio.Task[None] | None = None
        self.last_attempt = -RECONNECT_SECONDS

    def send(self, frame: bytes) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(frame)
            return
        self.writer = None
        if len(self.queue) < MAX_QUEUED_FRAMES:
            self.queue.append(frame)
        now = time.monotonic()
        if self.connecting is None and now - self.last_attempt >= RECONNECT_SECONDS:
            self.last_attempt = now
            self.connecting = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        try:
            writer = await _dial(self.address, CONNECT_TIMEOUT_SECONDS)
        except (OSError, TimeoutError) as exc:
            log.debug("peer %s unreachable: %s", self.address, exc)
            self.queue.clear()
            return
        finally:
            self.connecting = None
        self.writer = writer
        queued, self.queue = self.queue, []
        for frame in queued:
            writer.write(frame)

    def close(self) -> None:
        if self.connecting is not None:
            self.connecting.cancel()
        if self.writer is not None:
            self.writer.close()


class PeerTransport:
    """Sends envelopes to peers (by node id) and hands received ones to `deliver`."""

    def __init__(
        self,
        resolve: Callable[[NodeId], str | None],
        deliver: Callable[[Envelope], None],
        on_liveness: Callable[[NodeId, bool], None] = lambda node, alive: None,
    ) -> None:
        self._resolve = resolve  # node id -> "host:port" of its replication listener
        self._deliver = deliver
        self._on_liveness = on_liveness
        self.suspected: set[NodeId] = set()
        self._probes: dict[NodeId, asyncio.Task[None]] = {}
        self._closing = False
        self._links: dict[NodeId, _Link] = {}
        self._server: asyncio.Server | None = None
        self._incoming: set[asyncio.Transport] = set()
        self.frames_sent = 0
        self.frames_received = 0
        self.bad_frames = 0

    async def listen(self, host: str, port: int) -> int:
        """Start accepting peers' streams; returns the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Incoming(self), host, port, reuse_address=True)
        # Typed loosely: uvloop's servers hold a list where asyncio's stubs say tuple,
        # and compiled code checks the declared type.
        server: Any = self._server
        return int(server.sockets[0].getsockname()[1])

    def send(self, envelopes: list[Envelope]) -> None:
        for envelope in envelopes:
            address = self._resolve(envelope.dst)
            if address is None:
                continue  # the peer is not registered (yet): the core will retry
            link = self._links.get(envelope.dst)
            if link is None or link.address != address:
                if link is not None:
                    link.close()
                link = self._links[envelope.dst] = _Link(address)
            link.send(encode_frame(encode_envelope(envelope)))
            self.frames_sent += 1

    def _received(self, frame: bytes) -> NodeId | None:
        """Deliver one frame; returns the peer that sent it (None if damaged)."""
        try:
            envelope = decode_envelope(frame)
        except WireError as exc:
            self.bad_frames += 1
            log.warning("dropping a damaged replication frame: %s", exc)
            return None
        self.frames_received += 1
        if envelope.src in self.suspected:
            self.suspected.discard(envelope.src)
            log.info("peer %s is back", envelope.src)
            self._on_liveness(envelope.src, True)
        self._deliver(envelope)
        return envelope.src

    def _stream_lost(self, peer: NodeId) -> None:
        if self._closing or peer in self._probes or peer in self.suspected:
            return
        task = asyncio.get_running_loop().create_task(self._probe(peer), name=f"probe {peer}")
        self._probes[peer] = task
        task.add_done_callback(lambda _: self._probes.pop(peer, None))

    async def _probe(self, peer: NodeId) -> None:
        """Suspect `peer` dead if its listener refuses every probe (a process that died
        has no listener; one that is only slow or restarting its stream still accepts)."""
        for _ in range(SUSPECT_PROBES):
            await asyncio.sleep(SUSPECT_PROBE_SECONDS)
            address = self._resolve(peer)
            if address is None:
                return
            try:
                writer = await _dial(address, SUSPECT_PROBE_SECONDS)
            except (OSError, TimeoutError):
                continue
            writer.close()
            return
        if not self._closing:
            self.suspected.add(peer)
            log.warning("peer %s suspected dead: its stream broke and its listener refuses", peer)
            self._on_liveness(peer, False)

    async def close(self) -> None:
        self._closing = True
        for probe in list(self._probes.values()):
            probe.cancel()
        for link in self._links.values():
            link.close()
        self._links.clear()
        for transport in list(self._incoming):
            transport.abort()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()


class _Incoming(asyncio.Protocol):
    def __init__(self, owner: PeerTransport) -> None:
        self._owner = owner
        self._decoder = FrameDecoder()
        self._transport: asyncio.Transport | None = None
        self._peer: NodeId | None = None  # known from the first frame

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._owner._incoming.add(self._transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._owner._incoming.discard(self._transport)
        if self._peer is not None:
            self._owner._stream_lost(self._peer)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except FrameError as exc:
            log.warning("closing a replication stream: %s", exc)
            if self._transport is not None:
                self._transport.close()
            return
        for frame in frames:
            src = self._owner._received(frame)
            if src is not None:
                self._peer = src


async def _dial(address: str, timeout: float) -> asyncio.StreamWriter:
    """A TCP connection to a peer's replication listener (host:port) within `timeout`."""
    host, port = parse_endpoint(address)
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    return writer
