"""What a plain write pays for transactions: the leader's look for a lock on its item.

Run: .venv/bin/python bench/bench_lock_check.py [--checks 200000] [--items 2000]

Every PutItem, UpdateItem and DeleteItem a partition's leader plans first asks the
engine for a transaction's lock record beside the item (`operations.check_unlocked`):
one `Engine.latest` of a key that is almost never there. This measures that look on a
real engine (RocksDB files, items committed first), per check, so it can be set
against a write's whole cost (docs/benchmarks.md: hundreds of µs of CPU at RF=3).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

from partita.common import keys
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import check_unlocked


async def measure(checks: int, items: int) -> float:
    with tempfile.TemporaryDirectory() as directory:
        engine = Engine.open(Path(directory) / "node", sync=False)
        try:
            stored = [
                keys.item_key(7, keys.key_hash("S", b"k%d" % i), b"k%d" % i, None) for i in range(items)
            ]
            await engine.commit([Effect(Kind.PUT, key, b'{"a":{"S":"x"}}') for key in stored])
            start = time.perf_counter()
            for i in range(checks):
                check_unlocked(engine, stored[i % items])
            return (time.perf_counter() - start) / checks * 1e6
        finally:
            await engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200_000)
    parser.add_argument("--items", type=int, default=2_000)
    args = parser.parse_args()
    print(f"lock check of a write's item: {asyncio.run(measure(args.checks, args.items)):.2f} µs")


if __name__ == "__main__":
    main()
