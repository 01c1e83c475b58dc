"""The node-pair transport alone: three nodes' `PeerTransport`s in one process, real TCP
on 127.0.0.1, no consensus.

Run: .venv/bin/python -m bench.bench_peer_transport [--seconds 3] [--beats 1,100,4000]
     [--rounds-in-flight 4] [--transport-file OLD.py]
     .venv/bin/python -m bench.bench_peer_transport --codec [--wire-file OLD_WIRE.py]

Each round, every node sends every peer one envelope of `beats` coalesced heartbeats
(what `coalesce()` makes of that many groups' heartbeats), and every receiver answers
with one envelope of as many acks; `--rounds-in-flight` rounds are kept outstanding, as
the replica host's pump does while a round is being persisted. Reported: rounds per
second, CPU microseconds per envelope (this process's CPU, all three nodes and both
directions: the transport's cost, not the machine's other load), socket writes per
envelope, and the TCP connections the three nodes hold. `--transport-file` loads
another version of `peer_transport.py` (e.g. `git show REV:services/partita/storage/
peer_transport.py > /tmp/old.py`) to compare before and after.

`--codec`: `wire.py` alone, the CPU microseconds to encode and to decode one envelope of
`beats` heartbeats (and one of as many acks), each over about `--seconds`; `--wire-file`
loads another version of `wire.py` (its relative imports made absolute) the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import time
from types import ModuleType
from typing import Any

from partita.storage.replication.coalesce import Beat, BeatAck, Envelope

_WIRE_PACKAGE = "partita.storage.replication"

NODES = ("a", "b", "c")


def _module(path: str | None) -> ModuleType:
    if path is None:
        from partita.storage import peer_transport

        return peer_transport
    spec = importlib.util.spec_from_file_location("peer_transport_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def run(module: ModuleType, beats: int, seconds: float, in_flight: int) -> dict[str, float]:
    addresses: dict[str, str] = {}
    transports: dict[str, Any] = {}
    acked = asyncio.Event()
    outstanding = [0]
    received = [0]

    def deliver_to(node: str) -> Any:
        def deliver(envelope: Envelope) -> None:
            received[0] += 1
            if envelope.beats:
                acks = tuple(BeatAck(b.group, b.term, b.round) for b in envelope.beats)
                transports[node].send([Envelope(node, envelope.src, (), acks, ())])
            else:
                outstanding[0] -= 1
                acked.set()

        return deliver

    takes_node_id = "node_id" in inspect.signature(module.PeerTransport).parameters
    for node in NODES:
        kwargs = {"node_id": node} if takes_node_id else {}
        transports[node] = module.PeerTransport(addresses.get, deliver_to(node), **kwargs)
        port = await transports[node].listen("127.0.0.1", 0)
        addresses[node] = f"127.0.0.1:{port}"
    envelopes = {
        (src, dst): Envelope(
            src, dst, tuple(Beat(f"{i}/p0", 3, 100, 7, 100, False) for i in range(beats)), (), ()
        )
        for src in NODES
        for dst in NODES
        if src != dst
    }

    def send_round() -> None:
        for src in NODES:
            transports[src].send([e for (s, _), e in envelopes.items() if s == src])
        outstanding[0] += len(envelopes)

    # Warm up: every pair connected.
    send_round()
    for _ in range(500):
        if outstanding[0] == 0:
            break
        await asyncio.sleep(0.01)
    rounds = 0
    received[0] = 0
    writes_before = sum(getattr(t, "writes", 0) for t in transports.values())
    cpu, wall = time.process_time(), time.monotonic()
    while time.monotonic() - wall < seconds:
        while outstanding[0] < in_flight * len(envelopes):
            send_round()
            rounds += 1
        acked.clear()
        await acked.wait()
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    # Each TCP connection has an end on two nodes (the old transport: outgoing links
    # plus accepted streams; the new one counts its streams).
    ends = sum(
        getattr(t, "connections", len(getattr(t, "_links", {})) + len(getattr(t, "_incoming", ())))
        for t in transports.values()
    )
    writes = sum(getattr(t, "writes", 0) for t in transports.values()) - writes_before
    for t in transports.values():
        await t.close()
    envelopes_moved = max(received[0], 1)
    return {
        "rounds_per_s": rounds / wall,
        "cpu_us_per_envelope": cpu / envelopes_moved * 1e6,
        "writes_per_envelope": writes / envelopes_moved if writes else float("nan"),
        "connections": ends / 2,
    }


def _wire(path: str | None) -> ModuleType:
    if path is None:
        from partita.storage.replication import wire

        return wire
    with open(path) as file:
        source = file.read().replace("from .", f"from {_WIRE_PACKAGE}.")
    module = ModuleType("wire_under_test")
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def codec(wire: ModuleType, beats: int, seconds: float) -> dict[str, float]:
    """CPU microseconds per encode and per decode of an envelope of `beats` beats, and
    of one of as many acks: the best of batches of calls (the machine is shared, and
    the other load only ever adds)."""
    heartbeats = Envelope(
        "storage-a", "storage-b", tuple(Beat(f"{i}/p0", 3, 100, 7, 100, False) for i in range(beats)), (), ()
    )
    acks = Envelope("storage-b", "storage-a", (), tuple(BeatAck(f"{i}/p0", 3, 7) for i in range(beats)), ())
    figures = {}
    for name, envelope in (("beats", heartbeats), ("acks", acks)):
        data = wire.encode_envelope(envelope)
        assert wire.decode_envelope(data) == envelope
        for step, call, arg in (
            ("encode", wire.encode_envelope, envelope),
            ("decode", wire.decode_envelope, data),
        ):
            best, start = float("inf"), time.process_time()
            while time.process_time() - start < seconds / 4:
                batch = time.process_time()
                for _ in range(max(1, 2000 // max(beats, 1))):
                    call(arg)
                best = min(best, (time.process_time() - batch) / max(1, 2000 // max(beats, 1)))
            figures[f"{name}_{step}_us"] = best * 1e6
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--beats", default="1,100,4000")
    parser.add_argument("--rounds-in-flight", type=int, default=4)
    parser.add_argument("--transport-file")
    parser.add_argument("--codec", action="store_true")
    parser.add_argument("--wire-file")
    args = parser.parse_args(argv)
    if args.codec:
        wire = _wire(args.wire_file)
        print(f"wire: {args.wire_file or wire.__name__}")
        for beats in [int(b) for b in args.beats.split(",")]:
            f = codec(wire, beats, args.seconds)
            print(
                f"{beats:5d} beats: encode {f['beats_encode_us']:8.1f} us, decode {f['beats_decode_us']:8.1f} us; "
                f"{beats:5d} acks: encode {f['acks_encode_us']:8.1f} us, decode {f['acks_decode_us']:8.1f} us",
                flush=True,
            )
        return 0
    module = _module(args.transport_file)
    print(f"transport: {args.transport_file or module.__name__}")
    for beats in [int(b) for b in args.beats.split(",")]:
        figures = asyncio.run(run(module, beats, args.seconds, args.rounds_in_flight))
        print(
            f"beats/envelope {beats:5d}: {figures['rounds_per_s']:8.0f} rounds/s, "
            f"{figures['cpu_us_per_envelope']:8.1f} CPU-us/envelope, "
            f"{figures['writes_per_envelope']:.2f} writes/envelope, "
            f"{figures['connections']:.0f} TCP connections for 3 nodes",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
