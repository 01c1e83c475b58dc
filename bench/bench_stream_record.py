"""What a write pays for its stream record, and for its point-in-time recovery history
record: the leader's planning and one replica's apply.

Run: .venv/bin/python bench/bench_stream_record.py [--writes 20000] [--items 2000] [--view NEW_AND_OLD_IMAGES]

A write to a table whose stream is enabled carries the stream's settings to the
partition's leader, which reads and decodes the item it replaces, builds the record and
adds it to the write's log entry (`operations._add_change_records`); each replica then
stores it beside the items (`Engine._write`). This measures, on a real engine (RocksDB
files, items committed first, 900-byte items as in `bench.ycsb`), a PutItem's plan and
apply with and without a stream, per write, so the difference can be set against a
replicated write's whole cost (docs/benchmarks.md: hundreds of µs of CPU at RF=3).
A table with point-in-time recovery adds a history record (the old image) the same way,
with or without a stream; a table with a global index has each write's index units
counted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import plan_put

TABLE = 7
PREFIX = keys.stream_shard_prefix(TABLE, 0, 1000, "p0")


def _item(i: int, version: int) -> bytes:
    return orjson.dumps({"pk": {"S": f"user{i}"}, "v": {"N": str(version)}, "field0": {"S": "x" * 880}})


async def measure(writes: int, items: int, options: dict[str, Any]) -> tuple[float, float]:
    """(plan µs, apply µs) per PutItem overwriting an existing item."""
    with tempfile.TemporaryDirectory() as directory:
        engine = Engine.open(Path(directory) / "node", sync=False)
        try:
            stored = [
                keys.item_key(TABLE, keys.key_hash("S", b"user%d" % i), b"user%d" % i, None)
                for i in range(items)
            ]
            await engine.commit([Effect(Kind.PUT, key, _item(i, 0)) for i, key in enumerate(stored)])
            body = orjson.dumps(options) if options else b""  # no options: the plain PutItem
            requests = [
                pb.Request(id=n, op=pb.PUT, key=stored[n % items], value=_item(n % items, n + 1), body=body)
                for n in range(writes)
            ]
            planned = []
            start = time.perf_counter()
            for request in requests:
                planned.append(plan_put(engine, request))
            plan = (time.perf_counter() - start) / writes * 1e6
            placed = [
                [
                    Effect(e.kind, PREFIX, e.value) if e.kind is Kind.STREAM_RECORD else e
                    for e in p.effects or []
                ]
                for p in planned
            ]
            start = time.perf_counter()
            for index, effects in enumerate(placed, start=10):
                engine.apply("g", index, effects)
            apply = (time.perf_counter() - start) / writes * 1e6
            return plan, apply
        finally:
            await engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--items", type=int, default=2_000)
    parser.add_argument("--view", default="NEW_AND_OLD_IMAGES")
    args = parser.parse_args()
    stream = {"view": args.view, "keys": ["pk"], "at": 1.0, "ms": 1000}
    history = {"view": "OLD_IMAGE", "keys": ["pk"], "at": 1.0, "ms": keys.history_stream_ms(1000), "r": 35}
    cases: list[tuple[str, dict[str, Any]]] = [
        ("no stream", {}),
        (f"stream {args.view}", {"stream": stream}),
        ("history (point-in-time)", {"history": history}),
        (f"stream {args.view} + history", {"stream": stream, "history": history}),
        # A table with a global index on `v`: every write counts the index's units (its
        # admission at the routers: router/index_capacity.py).
        ("global index units", {"index_capacity": [["by-v", [["by-v", "v", "N", "HASH"]], None]]}),
    ]
    for label, given in cases:
        plan, apply = asyncio.run(measure(args.writes, args.items, given))
        print(f"{label:>30}: plan {plan:.1f} µs, apply {apply:.1f} µs per PutItem")


if __name__ == "__main__":
    main()
