"""Failure detection from the node-pair streams: a peer whose stream broke and whose
listener refuses every probe is suspected dead (its quiesced groups then fail over in
about a lease instead of after its registration's TTL); its next frame clears that."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from partita.storage.peer_transport import PeerTransport
from partita.storage.replication.coalesce import Envelope, coalesce
from partita.storage.replication.types import Message, MsgKind


def _beat(src: str, dst: str) -> list[Envelope]:
    return coalesce([Message(MsgKind.HEARTBEAT, "g", src, dst, 1, round=1)])


@dataclass
class Pair:
    """Two transports on 127.0.0.1: `b` records what it receives and the liveness
    events it reports; `a` only sends."""

    addresses: dict[str, str] = field(default_factory=dict)
    events: list[tuple[str, bool]] = field(default_factory=list)
    received: list[str] = field(default_factory=list)

    async def start(self) -> tuple[PeerTransport, PeerTransport, int]:
        b = PeerTransport(
            self.addresses.get,
            lambda env: self.received.append(env.src),
            lambda n, alive: self.events.append((n, alive)),
        )
        self.addresses["b"] = f"127.0.0.1:{await b.listen('127.0.0.1', 0)}"
        a = PeerTransport(self.addresses.get, lambda env: None)
        a_port = await a.listen("127.0.0.1", 0)
        self.addresses["a"] = f"127.0.0.1:{a_port}"
        return a, b, a_port


async def _until(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


async def test_a_peer_whose_stream_breaks_and_whose_listener_refuses_is_suspected_until_it_speaks() -> None:
    pair = Pair()
    a, b, a_port = await pair.start()
    addresses, events, received = pair.addresses, pair.events, pair.received
    try:
        a.send(_beat("a", "b"))
        assert await _until(lambda: received == ["a"])
        killed = time.monotonic()
        await a.close()  # as a SIGKILL: the stream breaks and nothing listens any more
        assert await _until(lambda: events == [("a", False)])
        assert time.monotonic() - killed < 2.0 and b.suspected == {"a"}
        # Restarted on the same address: its first frame clears the suspicion.
        a = PeerTransport(addresses.get, lambda env: None)
        await a.listen("127.0.0.1", a_port)
        a.send(_beat("a", "b"))
        assert await _until(lambda: events == [("a", False), ("a", True)])
        assert b.suspected == set()
    finally:
        await a.close()
        await b.close()


async def test_a_broken_stream_from_a_peer_that_still_listens_is_no_suspicion() -> None:
    pair = Pair()
    a, b, _ = await pair.start()
    events, received = pair.events, pair.received
    try:
        a.send(_beat("a", "b"))
        assert await _until(lambda: received == ["a"])
        for stream in list(a._streams):
            stream.retire()  # the stream breaks; a's listener stays up
        await asyncio.sleep(1.0)  # every probe would have run by now
        assert events == [] and b.suspected == set()
    finally:
        await a.close()
        await b.close()
