"""The node-pair streams replication runs over: framed envelopes on asyncio TCP, one
connection per node pair.

Every group's messages to a peer travel on the one stream this node shares with it,
whichever side dialed it, and the frames sent to a peer in one event-loop turn leave in
one socket write (the framed-batch transport of the data path, `common.framing`), so
thousands of groups cost one connection and about one write per round. Delivery is best
effort, as the consensus core expects: a frame that cannot be written (peer down,
connection lost) is dropped and the core resends what matters (appends, heartbeats); a
node dials a peer on the next send, at most once per `RECONNECT_SECONDS`, so a dead peer
costs no connect storm.

One stream per pair, agreed by both sides. The dialer's first frame is a hello (its
id, the id it means to reach, its incarnation and a dial number); the acceptor answers
with an ack before anything else. Both sides rank the streams of a pair the same way,
from the hello alone: one the smaller id dialed beats one the larger id dialed, then
the newer incarnation (a restarted process), then the later dial. A node adopts a stream
(makes it the one it writes on) only if it outranks its current stream and its own dial
still in progress, and closes every stream it does not adopt or that it replaces. The
dialer writes envelopes on a stream only after the ack, i.e. after the acceptor adopted
it, so:
- both nodes dialing at once: the lower-ranked stream is closed by both, and the frames
  meant for it wait in the dialer's queue for the kept one instead of being written on
  a stream the other side has refused;
- a restarted (SIGKILLed) peer: its new stream outranks the old, half-open one, which is
  closed; or the old one, ranked higher, refuses the new until its end-of-stream
  arrives, and the new process dials again;
- a stream replaced while frames are in flight on it is closed by the side that replaced
  it, so its other end learns at once (connection lost) and writes on the new one; no
  side keeps writing on a stream the other no longer reads.
A node of the version before hellos (one connection per direction) still replicates
with this one, as in a rolling upgrade: a stream whose first frame is an envelope is
read from and never written on, and a dialed stream left unacked for
`ACK_TIMEOUT_SECONDS` is written on all the same.

Failure detection: when the stream a node writes on to a peer breaks (not closed by this
node), it probes the peer's listener a few times; if every probe is refused (or times
out) the peer is suspected dead (`on_liveness(peer, False)`), and its next frame clears
that. A SIGKILLed node's quiesced groups then fail over in about a lease, not after its
registration's TTL. A wrong suspicion costs an election, never safety (the core still
waits out its promises).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import struct
import time
from collections.abc import Callable
from typing import Any, cast

from partita.common.config import parse_endpoint
from partita.common.framing import FrameDecoder, FrameError, encode_frame
from partita.storage.replication.coalesce import Envelope
from partita.storage.replication.types import NodeId
from partita.storage.replication.wire import VERSION, WireError, decode_envelope, encode_envelope

log = logging.getLogger(__name__)

RECONNECT_SECONDS = 0.2
CONNECT_TIMEOUT_SECONDS = 1.0
# A dialed stream the acceptor has not acked within this is given up and dialed again
# (an acceptor whose loop is stalled accepts in its kernel but answers late).
ACK_TIMEOUT_SECONDS = 5.0
# Frames queued for a peer while its stream is being made; beyond this they are
# dropped (the core resends).
MAX_QUEUED_FRAMES = 1024
# A broken stream: probes of the peer's listener, this far apart, all of which must
# fail before the peer is suspected dead.
SUSPECT_PROBES = 3
SUSPECT_PROBE_SECONDS = 0.15

# Hello (dialer -> acceptor, first frame): tag, incarnation, dial number, then the
# dialer's and the acceptor's ids (u16 length + UTF-8 each). Ack (acceptor -> dialer,
# first frame): tag. Envelopes start with wire.VERSION (1), never with these tags.
_HELLO_TAG = 0xF1
_ACK_TAG = 0xF2
_HELLO = struct.Struct(">BQQ")
_U16 = struct.Struct(">H")
_ACK = bytes([_ACK_TAG])
_ACK_FRAME = encode_frame(_ACK)

# How a stream of a pair ranks against the others, the same on both sides: dialed by
# the smaller id, the dialer's incarnation, its dial number.
Rank = tuple[bool, int, int]


def encode_hello(src: NodeId, dst: NodeId, incarnation: int, dial: int) -> bytes:
    out = bytearray(_HELLO.pack(_HELLO_TAG, incarnation, dial))
    for text in (src, dst):
        raw = text.encode()
        out += _U16.pack(len(raw)) + raw
    return bytes(out)


def decode_hello(frame: bytes) -> tuple[NodeId, NodeId, int, int]:
    """(dialer, acceptor, incarnation, dial number); ValueError if not a hello."""
    if len(frame) < _HELLO.size:
        raise ValueError("truncated hello")
    tag, incarnation, dial = _HELLO.unpack_from(frame)
    if tag != _HELLO_TAG:
        raise ValueError("the first frame of a stream is not a hello")
    offset = _HELLO.size
    ids = []
    for _ in range(2):
        if offset + 2 > len(frame):
            raise ValueError("truncated hello")
        (length,) = _U16.unpack_from(frame, offset)
        offset += 2
        if offset + length > len(frame):
            raise ValueError("truncated hello")
        ids.append(frame[offset : offset + length].decode())
        offset += length
    return ids[0], ids[1], incarnation, dial


def _rank(dialer: NodeId, acceptor: NodeId, incarnation: int, dial: int) -> Rank:
    return (dialer < acceptor, incarnation, dial)


class _Stream(asyncio.Protocol):
    """One TCP connection to a peer, dialed by either side. Decided once: adopted as the
    pair's stream, or closed."""

    def __init__(self, owner: PeerTransport, dialed: bool, peer: NodeId | None, rank: Rank | None) -> None:
        self.owner = owner
        self.dialed = dialed
        self.peer = peer  # an accepted stream: known from its hello
        self.rank = rank
        self.hello: bytes | None = None  # a dialed stream: written once connected
        self.transport: asyncio.Transport | None = None
        self.greeted = False  # its first frame (hello or ack) has arrived
        # A node of the version before hellos: it dials to send only, and its listener
        # neither acks nor writes back.
        self.legacy = False
        self.retired = False  # closed by this node: its loss is no news
        self.lost = False  # the connection is gone, whoever closed it
        self._decoder = FrameDecoder()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.owner._streams.add(self)
        if self.retired:  # outranked while it was connecting
            self.transport.close()
        elif self.hello is not None:
            self.transport.write(encode_frame(self.hello))
            asyncio.get_running_loop().call_later(ACK_TIMEOUT_SECONDS, self._ack_overdue)

    def _ack_overdue(self) -> None:
        """No ack: a peer of the version before hellos (which never acks), or one whose
        loop stalled (it adopts the stream when it reads the hello, or closes it). Either
        way the stream is written on from now on."""
        # Not once lost: refused by the acceptor (closed without an ack), it would become
        # a stream this node writes into for good, with no loss left to notice.
        if not self.greeted and not self.retired and not self.lost:
            log.warning("peer %s has not acked a replication stream: writing on it unacked", self.peer)
            self.greeted = True
            self.owner._adopt(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.owner._streams.discard(self)
        self.owner._stream_closed(self)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except FrameError as exc:
            log.warning("closing a replication stream: %s", exc)
            self.retire()
            return
        owner = self.owner
        for frame in frames:
            if self.greeted:
                # Delivered even if this stream was retired earlier in this chunk: the
                # bytes were read, and the core takes stale or reordered messages.
                if frame != _ACK:  # one that came after its deadline
                    owner._received(frame)
            elif not self.retired:
                self.greeted = True
                owner._greeted(self, frame)

    def open(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()

    def write(self, data: bytes) -> None:
        # uvloop raises on a closed connection where asyncio's loop only logs; what
        # is dropped here was bound for a stream this node closed (the core resends).
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def retire(self) -> None:
        self.retired = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.retired = True
        if self.transport is not None:
            self.transport.abort()


class _Peer:
    """What this node keeps for one peer: the stream it writes on, its own dial in
    progress, and frames waiting for either."""

    def __init__(self, peer: NodeId, address: str) -> None:
        self.peer = peer
        self.address = address  # "" until the directory knows it
        self.current: _Stream | None = None
        self.dialing: _Stream | None = None  # connecting, or connected and awaiting the ack
        self.dial_task: asyncio.Task[None] | None = None
        self.queue: list[bytes] = []  # no stream yet
        self.out: list[bytes] = []  # this loop turn's frames
        self.last_attempt = -RECONNECT_SECONDS
        self.retry: asyncio.TimerHandle | None = None


class PeerTransport:
    """Sends envelopes to peers (by node id) and hands received ones to `deliver`.

    `node_id` is this node's id; without it, it is learnt from the first envelope sent
    (its src) or the first hello received (its dst)."""

    def __init__(
        self,
        resolve: Callable[[NodeId], str | None],
        deliver: Callable[[Envelope], None],
        on_liveness: Callable[[NodeId, bool], None] = lambda node, alive: None,
        node_id: NodeId | None = None,
    ) -> None:
        self._resolve = resolve  # node id -> "host:port" of its replication listener
        self._deliver = deliver
        self._on_liveness = on_liveness
        self.node_id = node_id
        # Wall-clock nanoseconds: a restarted process outranks its predecessor's streams.
        self._incarnation = time.time_ns()
        self._dials = itertools.count(1)
        self.suspected: set[NodeId] = set()
        self._probes: dict[NodeId, asyncio.Task[None]] = {}
        self._closing = False
        self._peers: dict[NodeId, _Peer] = {}
        self._streams: set[_Stream] = set()
        self._dirty: list[_Peer] = []
        self._server: asyncio.Server | None = None
        self.frames_sent = 0
        self.frames_received = 0
        self.bad_frames = 0
        self.writes = 0  # socket writes of envelopes (one per peer per loop turn)

    @property
    def connections(self) -> int:
        """Open TCP connections this node has an end of (adopted or being decided)."""
        return len(self._streams)

    def current_stream(self, peer: NodeId) -> asyncio.Transport | None:
        """The connection this node writes on to `peer` (None if none yet)."""
        state = self._peers.get(peer)
        return state.current.transport if state is not None and state.current is not None else None

    async def listen(self, host: str, port: int) -> int:
        """Start accepting peers' streams; returns the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Stream(self, dialed=False, peer=None, rank=None), host, port, reuse_address=True
        )
        # Typed loosely: uvloop's servers hold a list where asyncio's stubs say tuple,
        # and compiled code checks the declared type.
        server: Any = self._server
        return int(server.sockets[0].getsockname()[1])

    def send(self, envelopes: list[Envelope]) -> None:
        for envelope in envelopes:
            address = self._resolve(envelope.dst)
            if address is None:
                continue  # the peer is not registered (yet): the core will retry
            if self.node_id is None:
                self.node_id = envelope.src
            state = self._peers.get(envelope.dst)
            if state is None:
                state = self._peers[envelope.dst] = _Peer(envelope.dst, address)
            elif state.address != address:
                self._moved(state, address)
            if not state.out:
                if not self._dirty:
                    asyncio.get_running_loop().call_soon(self._flush)
                self._dirty.append(state)
            state.out.append(encode_frame(encode_envelope(envelope)))
            self.frames_sent += 1

    def _flush(self) -> None:
        """Write each peer's frames of this loop turn in one write (or queue them)."""
        dirty, self._dirty = self._dirty, []
        for state in dirty:
            frames, state.out = state.out, []
            if self._closing:
                continue
            if state.current is not None and state.current.open():
                state.current.write(frames[0] if len(frames) == 1 else b"".join(frames))
                self.writes += 1
                continue
            room = MAX_QUEUED_FRAMES - len(state.queue)
            state.queue.extend(frames[:room])
            self._dial(state)

    def _dial(self, state: _Peer) -> None:
        if state.dial_task is not None or state.dialing is not None or self.node_id is None:
            return
        if state.current is not None and state.current.open():
            return
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        wait = state.last_attempt + RECONNECT_SECONDS - now
        if wait > 0:
            if state.retry is None:
                state.retry = loop.call_later(wait, self._retry, state)
            return
        state.last_attempt = now
        task = state.dial_task = loop.create_task(self._connect(state))
        # Not a `finally` in `_connect`: a task cancelled before it starts runs none.
        task.add_done_callback(
            lambda _: setattr(state, "dial_task", None) if state.dial_task is task else None
        )

    def _retry(self, state: _Peer) -> None:
        state.retry = None
        if (
            not self._closing
            and state.current is None
            and state.queue
            and self._peers.get(state.peer) is state
        ):
            self._dial(state)

    async def _connect(self, state: _Peer) -> None:
        peer = state.peer
        assert self.node_id is not None
        dial = next(self._dials)
        stream = _Stream(
            self, dialed=True, peer=peer, rank=_rank(self.node_id, peer, self._incarnation, dial)
        )
        stream.hello = encode_hello(self.node_id, peer, self._incarnation, dial)
        state.dialing = stream
        try:
            host, port = parse_endpoint(state.address)
            loop = asyncio.get_running_loop()
            await asyncio.wait_for(
                loop.create_connection(lambda: stream, host, port), CONNECT_TIMEOUT_SECONDS
            )
        except (OSError, TimeoutError, ValueError) as exc:
            log.debug("peer %s unreachable: %s", state.address, exc)
            _dial_failed(state, stream)

    def _greeted(self, stream: _Stream, frame: bytes) -> None:
        """The first frame of a stream: a hello (accepted) or the ack (dialed)."""
        if stream.dialed:
            if frame != _ACK:
                log.warning("closing a replication stream: its first answer is not an ack")
                stream.retire()
                return
            self._adopt(stream)
            return
        if frame[:1] == bytes([VERSION]):
            # An envelope first: a peer of the version before hellos, one stream per
            # direction. Taken as it was then: read from, never written on.
            stream.legacy = True
            stream.peer = self._received(frame)
            if stream.peer is None:  # not an envelope either
                stream.retire()
            return
        try:
            dialer, acceptor, incarnation, dial = decode_hello(frame)
        except (ValueError, UnicodeDecodeError) as exc:
            log.warning("closing a replication stream: %s", exc)
            stream.retire()
            return
        if self.node_id is None:
            self.node_id = acceptor
        if acceptor != self.node_id or dialer == self.node_id:
            log.warning("closing a replication stream from %s meant for %s", dialer, acceptor)
            stream.retire()
            return
        stream.peer = dialer
        stream.rank = _rank(dialer, acceptor, incarnation, dial)
        if self._adopt(stream):
            # First on the stream, before any envelope this node writes on it.
            stream.write(_ACK_FRAME)
            self._write_queue(stream)

    def _adopt(self, stream: _Stream) -> bool:
        """Make `stream` the one this node writes on to its peer if it outranks the
        current one and this node's own dial in progress; close whichever loses."""
        if stream.lost:
            return False
        peer = cast(NodeId, stream.peer)
        rank = cast(Rank, stream.rank)
        state = self._peers.get(peer)
        if state is None:
            state = self._peers[peer] = _Peer(peer, self._resolve(peer) or "")
        # A stream this node closed (or lost) is no rival, even before its loss is seen.
        rivals = [
            s
            for s in (state.current, state.dialing)
            if s is not None and s is not stream and not s.retired and not s.lost
        ]
        if any(cast(Rank, s.rank) > rank for s in rivals):
            stream.retire()
            if state.dialing is stream:
                state.dialing = None
            return False
        for rival in rivals:
            rival.retire()
        state.dialing = None  # this stream, a rival just closed, or one closed before
        state.current = stream
        if stream.dialed:
            self._write_queue(stream)
        return True

    def _write_queue(self, stream: _Stream) -> None:
        state = self._peers[cast(NodeId, stream.peer)]
        if state.queue:
            queued, state.queue = state.queue, []
            stream.write(b"".join(queued))
            self.writes += 1

    def _stream_closed(self, stream: _Stream) -> None:
        if stream.peer is None:
            return
        if stream.legacy:
            if not stream.retired and not self._closing:
                self._stream_lost(stream.peer)
            return
        state = self._peers.get(stream.peer)
        if state is None:
            return
        if state.dialing is stream:
            # Refused by the acceptor (it holds a higher-ranked stream): keep the queue
            # and dial again, unless a stream was adopted meanwhile.
            state.dialing = None
            if state.queue and not self._closing:
                self._dial(state)
            return
        if state.current is not stream:
            return
        state.current = None
        if not stream.retired and not self._closing:
            self._stream_lost(stream.peer)

    def _moved(self, state: _Peer, address: str) -> None:
        """The directory has a new address for the peer (a restarted local node listens
        on a new port): what this node dialed went to the old process, while a stream
        the peer dialed proved its id and incarnation by its hello and stays (a newer
        process of that id outranks it anyway)."""
        old, state.address = state.address, address
        if not old:  # merely learnt
            return
        _stop_dialing(state)
        if state.current is not None and state.current.dialed:
            state.current.retire()
            state.current = None
        state.queue.clear()

    def _forget(self, state: _Peer) -> None:
        _stop_dialing(state)
        if state.current is not None:
            state.current.retire()
            state.current = None
        state.queue.clear()

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
        # This turn's frames first (a leader's last words, e.g. a handoff), then the
        # streams, which flush what they hold before closing.
        self._flush()
        self._closing = True
        for probe in list(self._probes.values()):
            probe.cancel()
        for state in self._peers.values():
            self._forget(state)
        self._peers.clear()
        for stream in list(self._streams):
            stream.retire()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()


async def _dial(address: str, timeout: float) -> asyncio.StreamWriter:
    """A TCP connection to a peer's replication listener (host:port) within `timeout`."""
    host, port = parse_endpoint(address)
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    return writer


def _dial_failed(state: _Peer, stream: _Stream) -> None:
    """Forget a dial that could not connect, unless another stream took its place while
    it was connecting. Not inline in `_connect`: there mypy narrows `state.dialing` to
    the stream it set before the await, and the compiled read of it, None by then (the
    peer's own stream adopted), raised a TypeError."""
    if state.dialing is stream:
        state.dialing = None
        state.queue.clear()  # the core resends what still matters


def _stop_dialing(state: _Peer) -> None:
    """Cancel a pending redial and a dial in progress, retiring its stream."""
    if state.retry is not None:
        state.retry.cancel()
        state.retry = None
    if state.dial_task is not None:
        state.dial_task.cancel()
        state.dial_task = None
    if state.dialing is not None:
        state.dialing.retire()
        state.dialing = None
