"""How long a leader's event loop (its node's other groups, its clients) stalls while it
takes a snapshot to send (`Engine.snapshot_range`: a RocksDB checkpoint of the group's
range at its applied position), with the memtable holding `--mb` of unflushed writes, as
it does on a busy node: the longest gap between the wake-ups of a task asking for one
every millisecond. `--inline-flush` takes the checkpoint as before, letting
`create_checkpoint` flush the memtable itself (rocksdict holds the GIL through that, not
through `flush`, which the engine now runs from a worker thread first).

    .venv/bin/python -m bench.bench_snapshot_stall [--mb 40] [--rounds 5] [--inline-flush]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import rocksdict

from bench.bench_snapshot_install import loop_gaps
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine

VALUE = b"v" * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mb", type=int, default=40, help="unflushed writes before each snapshot (1 KB values)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inline-flush", action="store_true", help="the checkpoint flushes (as before)")
    args = parser.parse_args()
    stalls: list[float] = []
    took: list[float] = []
    with tempfile.TemporaryDirectory() as directory:
        engine = Engine.open(Path(directory) / "node", sync=False)
        index = 0
        for _ in range(args.rounds):
            for start in range(0, args.mb * 1000, 1000):  # applied as a leader does: batches
                index += 1
                effects = [Effect(Kind.PUT, b"t%09d" % (start + i), VALUE) for i in range(1000)]
                engine.apply("g", index, effects, term=1)
            gaps: list[float] = []
            ticking = asyncio.create_task(loop_gaps(gaps))
            await asyncio.sleep(0.05)
            started = time.perf_counter()
            if args.inline_flush:
                _inline_checkpoint(engine, Path(directory))
            else:
                _, _, pairs = await engine.snapshot_range("g", b"t", b"u")
                del pairs  # the checkpoint is read by the stream; not timed here
            took.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)
            ticking.cancel()
            stalls.append(max(gaps))
        await engine.close()
    mode = "checkpoint flushing inline (before)" if args.inline_flush else "flush from a worker thread first"
    print(
        f"{mode}, {args.mb} MB unflushed, {args.rounds} rounds: event loop's longest stall "
        f"median {statistics.median(stalls) * 1000:.1f} ms (max {max(stalls) * 1000:.1f} ms); "
        f"snapshot taken in median {statistics.median(took) * 1000:.1f} ms"
    )


def _inline_checkpoint(engine: Engine, directory: Path) -> None:
    path = directory / "inline" / uuid.uuid4().hex
    path.parent.mkdir(parents=True, exist_ok=True)
    # The old way, for comparison: the checkpoint flushes the memtable itself.
    rocksdict.Checkpoint(engine._db).create_checkpoint(str(path))


if __name__ == "__main__":
    asyncio.run(main())
