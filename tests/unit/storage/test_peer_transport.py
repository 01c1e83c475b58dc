"""The node-pair transport on real sockets (127.0.0.1): one connection per node pair
whoever dials, both sides agreeing on it through dials at once, restarts (a SIGKILLed
side's streams broken without a goodbye) and a newer process outranking a live older
one; a loop turn's frames to a peer in one write."""

from __future__ import annotations

import asyncio
import gc
import inspect
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvloop

from partita.common.framing import FrameDecoder, encode_frame
from partita.storage.peer_transport import PeerTransport, encode_hello
from partita.storage.replication.coalesce import Beat, Envelope
from partita.storage.replication.wire import decode_envelope, encode_envelope
from tests.ports import free_port


def on_both_loops(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """The test on asyncio's loop and on uvloop's: the nodes run on uvloop, whose
    transports raise where asyncio's only log (a write on a closed connection)."""

    def run(loop: str, *args: Any, **kwargs: Any) -> None:
        (uvloop.run if loop == "uvloop" else asyncio.run)(test(*args, **kwargs))

    signature = inspect.signature(test)
    loop = inspect.Parameter("loop", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str)
    run.__signature__ = signature.replace(parameters=[loop, *signature.parameters.values()])  # type: ignore[attr-defined]
    run.__name__, run.__doc__ = test.__name__, test.__doc__
    run.pytestmark = list(getattr(test, "pytestmark", []))  # type: ignore[attr-defined]
    return pytest.mark.parametrize("loop", ["asyncio", "uvloop"])(run)


def _marked(src: str, dst: str, mark: int) -> Envelope:
    """An envelope whose one heartbeat's round says which send it was."""
    return Envelope(src, dst, (Beat("g", 1, 0, mark, 0, False),), (), ())


@dataclass
class Cluster:
    """Transports on 127.0.0.1 by node id; `received[dst]` lists (src, mark) in order."""

    addresses: dict[str, str] = field(default_factory=dict)
    transports: dict[str, PeerTransport] = field(default_factory=dict)
    received: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    async def start(self, node: str, port: int | None = None) -> PeerTransport:
        """`port`: where to listen; by default a free one below the ephemeral range, so a
        node killed and started again on it finds it still free (an ephemeral port may
        be taken meanwhile by a parallel test's outgoing connection, as a CI run saw)."""
        inbox = self.received.setdefault(node, [])
        port = free_port() if port is None else port
        transport = PeerTransport(
            self.addresses.get, lambda env: inbox.append((env.src, env.beats[0].round)), node_id=node
        )
        self.addresses[node] = f"127.0.0.1:{await transport.listen('127.0.0.1', port)}"
        self.transports[node] = transport
        return transport

    def kill(self, node: str) -> int:
        """As a SIGKILL: every stream reset without a goodbye, nothing listening."""
        transport = self.transports.pop(node)
        transport._closing = True
        for stream in list(transport._streams):
            stream.abort()
        for state in transport._peers.values():
            transport._forget(state)  # its dials and timers die with it
        assert transport._server is not None
        transport._server.close()
        return int(self.addresses[node].rsplit(":", 1)[1])

    async def close(self) -> None:
        for transport in self.transports.values():
            await transport.close()

    def one_stream(self, x: str, y: str) -> bool:
        """x and y write on the same connection, and it is the only one between them."""
        tx, ty = self.transports[x], self.transports[y]
        sx, sy = tx.current_stream(y), ty.current_stream(x)
        return (
            sx is not None
            and sy is not None
            and sx.get_extra_info("sockname") == sy.get_extra_info("peername")
            and tx.connections == 1
            and ty.connections == 1
        )


async def _until(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


@on_both_loops
async def test_both_nodes_dialing_at_once_keep_one_connection_and_lose_no_frame() -> None:
    for attempt in range(8):  # the race resolves in different orders from run to run
        await _dial_at_once(attempt)


async def _dial_at_once(attempt: int) -> None:
    cluster = Cluster()
    a, b = await cluster.start("a"), await cluster.start("b")
    try:
        for mark in range(5):  # before either side has a stream: both dial
            a.send([_marked("a", "b", mark)])
            b.send([_marked("b", "a", mark)])
            await asyncio.sleep(0.001 * attempt)
        assert await _until(lambda: cluster.one_stream("a", "b")), attempt
        assert await _until(lambda: len(cluster.received["b"]) == 5 and len(cluster.received["a"]) == 5)
        assert cluster.received["b"] == [("a", m) for m in range(5)]
        assert cluster.received["a"] == [("b", m) for m in range(5)]
    finally:
        await cluster.close()


@on_both_loops
@pytest.mark.parametrize("victim", ["a", "b"])  # the smaller id, then the larger
@pytest.mark.parametrize("same_port", [True, False])  # a local node restarts on a new port
async def test_a_node_restarted_after_a_sigkill_gets_the_pair_stream_back_both_ways(
    victim: str, same_port: bool
) -> None:
    cluster = Cluster()
    await cluster.start("a")
    await cluster.start("b")
    survivor = "b" if victim == "a" else "a"
    try:
        for round_ in range(6):
            mark = 100 * round_
            cluster.transports["a"].send([_marked("a", "b", mark)])
            cluster.transports["b"].send([_marked("b", "a", mark)])
            assert await _until(lambda: cluster.one_stream("a", "b")), round_
            assert await _until(
                lambda mark=mark: (
                    ("a", mark) in cluster.received["b"] and ("b", mark) in cluster.received["a"]
                )
            ), round_
            port = cluster.kill(victim)
            cluster.received[victim].clear()
            # Back on the same address before (or while) the survivor sees the reset;
            # alternately the survivor or the restarted node speaks first.
            restarted = await cluster.start(victim, port if same_port else 0)
            first, second = (restarted, victim), (cluster.transports[survivor], survivor)
            if round_ % 2:
                first, second = second, first
            for transport, node in (first, second):
                peer = survivor if node == victim else victim
                transport.send([_marked(node, peer, mark + 1)])
            # Both directions carry frames again: the failure that froze followers'
            # acknowledgements was one direction written into a stream nobody read.
            for _ in range(20):
                if (victim, mark + 1) in cluster.received[survivor] and (
                    survivor,
                    mark + 1,
                ) in cluster.received[victim]:
                    break
                # Frames written into the dead stream before the reset was seen are
                # lost; the core resends, as this does.
                cluster.transports[victim].send([_marked(victim, survivor, mark + 1)])
                cluster.transports[survivor].send([_marked(survivor, victim, mark + 1)])
                await asyncio.sleep(0.1)
            assert (victim, mark + 1) in cluster.received[survivor], round_
            assert (survivor, mark + 1) in cluster.received[victim], round_
            assert await _until(lambda: cluster.one_stream("a", "b")), round_
    finally:
        await cluster.close()


@on_both_loops
@pytest.mark.parametrize("stale", ["a", "c"])  # smaller than b, then larger
async def test_a_newer_process_with_the_same_id_takes_the_pair_and_the_older_is_cut_off(stale: str) -> None:
    cluster = Cluster()
    old = await cluster.start(stale)
    b = await cluster.start("b")
    try:
        old.send([_marked(stale, "b", 1)])
        b.send([_marked("b", stale, 1)])
        assert await _until(lambda: cluster.one_stream(stale, "b"))
        old_inbox = cluster.received.pop(stale)
        assert await _until(lambda: (stale, 1) in cluster.received["b"] and ("b", 1) in old_inbox)
        # A new process for the same id on another address while the old one still runs
        # (stalled, partitioned): the directory moves, and both speak.
        new = await cluster.start(stale)
        for mark in range(2, 30):
            new.send([_marked(stale, "b", mark)])
            b.send([_marked("b", stale, mark)])
            old.send([_marked(stale, "b", -mark % 2**32)])
            await asyncio.sleep(0.05)
            if (
                cluster.one_stream(stale, "b")
                and old.connections == 0
                and ("b", mark) in cluster.received[stale]
            ):
                break
        assert cluster.one_stream(stale, "b") and old.connections == 0
        # From now on nothing of the old process is taken, and b's frames go to the new one.
        cluster.received["b"].clear()
        for mark in range(100, 110):
            new.send([_marked(stale, "b", mark)])
            b.send([_marked("b", stale, mark)])
            old.send([_marked(stale, "b", -mark % 2**32)])
            await asyncio.sleep(0.02)
        assert await _until(
            lambda: ("b", 109) in cluster.received[stale] and (stale, 109) in cluster.received["b"]
        )
        assert all(mark >= 100 and mark < 110 for _, mark in cluster.received["b"])
        assert not any(mark >= 100 for _, mark in old_inbox)
    finally:
        await old.close()
        await cluster.close()


@on_both_loops
async def test_frames_sent_in_one_loop_turn_leave_in_one_write() -> None:
    cluster = Cluster()
    a = await cluster.start("a")
    await cluster.start("b")
    try:
        a.send([_marked("a", "b", 0)])
        assert await _until(lambda: cluster.received["b"] == [("a", 0)])
        writes = a.writes
        for mark in range(1, 11):  # ten sends within one turn of the loop
            a.send([_marked("a", "b", mark)])
        assert await _until(lambda: len(cluster.received["b"]) == 11)
        assert cluster.received["b"] == [("a", m) for m in range(11)]
        assert a.writes == writes + 1
    finally:
        await cluster.close()


@pytest.mark.parametrize(
    "first_frame",
    [encode_hello("x", "someone-else", 1, 1), b"\x01not a hello", encode_hello("b", "b", 1, 1)],
)
@on_both_loops
async def test_a_stream_whose_hello_is_not_for_this_node_is_closed(first_frame: bytes) -> None:
    cluster = Cluster()
    b = await cluster.start("b")
    try:
        host, port = cluster.addresses["b"].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(encode_frame(first_frame) + encode_frame(b"\x01junk"))
        assert await asyncio.wait_for(reader.read(), 5.0) == b""  # closed, nothing acked
        writer.close()
        assert cluster.received["b"] == [] and b.current_stream("x") is None
    finally:
        await cluster.close()


@on_both_loops
async def test_a_dialer_writes_nothing_but_its_hello_before_the_ack() -> None:
    # A listener that reads but never acks, standing in for a peer whose loop stalls.
    seen = bytearray()

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(65536):
            seen.extend(chunk)
        writer.close()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    cluster = Cluster()
    a = await cluster.start("a")
    cluster.addresses["b"] = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        for mark in range(3):
            a.send([_marked("a", "b", mark)])
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        frames = FrameDecoder().feed(bytes(seen))
        assert len(frames) == 1 and frames[0] == encode_hello("a", "b", a._incarnation, 1)
    finally:
        await cluster.close()
        server.close()


@on_both_loops
async def test_a_peer_of_the_version_before_hellos_is_read_from_and_written_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rolling upgrade: the old version dials with envelopes straight away and its
    listener never acks."""
    monkeypatch.setattr("partita.storage.peer_transport.ACK_TIMEOUT_SECONDS", 0.3)
    seen = FrameDecoder()
    got: list[bytes] = []

    async def old_listener(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(65536):
            got.extend(seen.feed(chunk))
        writer.close()

    server = await asyncio.start_server(old_listener, "127.0.0.1", 0)
    cluster = Cluster()
    b = await cluster.start("b")
    cluster.addresses["old"] = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        host, port = cluster.addresses["b"].rsplit(":", 1)
        _, old_writer = await asyncio.open_connection(host, int(port))
        old_writer.write(b"".join(encode_frame(encode_envelope(_marked("old", "b", m))) for m in (1, 2)))
        assert await _until(lambda: cluster.received["b"] == [("old", 1), ("old", 2)])
        b.send([_marked("b", "old", 7)])
        assert await _until(lambda: len(got) == 2)  # the hello, then the envelope
        assert decode_envelope(got[1]).beats[0].round == 7
        old_writer.close()  # the old node's stream breaks while its listener still runs:
        await asyncio.sleep(0.8)  # probed, not suspected
        assert b.suspected == set()
    finally:
        await cluster.close()
        server.close()


@on_both_loops
async def test_a_dial_refused_without_an_ack_is_never_written_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """An acceptor holding a higher-ranked stream closes a dial at once: the dialer must
    not take it up when its ack deadline passes (it would write into it for good)."""
    monkeypatch.setattr("partita.storage.peer_transport.ACK_TIMEOUT_SECONDS", 0.2)

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    cluster = Cluster()
    a = await cluster.start("a")
    cluster.addresses["b"] = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        a.send([_marked("a", "b", 1)])
        await asyncio.sleep(0.6)  # past the ack deadline of every dial made so far
        assert a.current_stream("b") is None
    finally:
        await cluster.close()
        server.close()


@on_both_loops
async def test_a_dial_that_fails_after_the_peers_own_stream_was_taken_ends_cleanly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The peer's dial is adopted while this node's own dial is still connecting (which
    forgets that dial), and then this node's dial fails (refused, or timed out). Compiled,
    the failure's handler took the forgotten dial for the one it had set (mypy narrows
    the attribute across the await) and died with a TypeError, one "Task exception was
    never retrieved" per such race in the storage logs after a SIGKILL."""
    cluster = Cluster()
    a = await cluster.start("a")
    cluster.addresses["b"] = "127.0.0.1:9"  # never reached: the connection is faked
    problems: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: problems.append(context))

    async def adopted_then_refused(connecting: Any, timeout: float) -> None:
        connecting.close()
        a._peers["b"].dialing = None  # what adopting the peer's stream does
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(asyncio, "wait_for", adopted_then_refused)
    try:
        a.send([_marked("a", "b", 1)])
        assert await _until(lambda: a._peers["b"].dial_task is None and a._peers["b"].last_attempt > 0)
        await asyncio.sleep(0)
        gc.collect()  # a task whose exception nobody retrieved reports it when collected
        assert problems == []
    finally:
        monkeypatch.undo()
        await cluster.close()


@on_both_loops
@pytest.mark.parametrize("down", ["a", "b"])  # the refused dialer ranks above the peer, then below
async def test_a_dial_refused_while_the_peer_is_down_is_dialed_again_once_it_is_back(down: str) -> None:
    """A peer down on its address: the survivor's dials are refused and forgotten, and
    once the peer is back on the same address the pair has one stream again, written
    both ways, whichever of the two outranks the other's dials."""
    cluster = Cluster()
    await cluster.start("a")
    await cluster.start("b")
    survivor = "b" if down == "a" else "a"
    try:
        port = cluster.kill(down)
        cluster.received[down].clear()
        for mark in range(3):  # refused: nothing listens on the peer's address
            cluster.transports[survivor].send([_marked(survivor, down, mark)])
            await asyncio.sleep(0.25)
        assert await _until(lambda: not cluster.transports[survivor]._peers[down].dialing)
        assert cluster.transports[survivor]._peers[down].dial_task is None
        await cluster.start(down, port)  # back on the same address
        for mark in range(10, 30):
            cluster.transports[survivor].send([_marked(survivor, down, mark)])
            cluster.transports[down].send([_marked(down, survivor, mark)])
            await asyncio.sleep(0.1)
            if cluster.received[down] and cluster.received[survivor]:
                break
        assert cluster.received[down], "the survivor never reached the peer back on its address"
        assert cluster.received[survivor], "the peer back on its address never reached the survivor"
        assert await _until(lambda: cluster.one_stream("a", "b"))
    finally:
        await cluster.close()
