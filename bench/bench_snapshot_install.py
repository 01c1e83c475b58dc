"""One snapshot install into a real RocksDB (`Engine.install_snapshot`): its time and the
process's peak RSS, in bounded batches (the default, one snapshot chunk) or, with
`--batch-bytes` above the snapshot's size, in one batch as before (docs/replication.md,
"Snapshots"); and how long the event loop (the node's other groups) stalls meanwhile: the
longest gap between the wake-ups of a task asking for one every millisecond, with the
install on the loop or, with `--off-loop`, its RocksDB writes in a worker thread
(`Engine.install_snapshot_off_loop`, what the replica host does).

    .venv/bin/python -m bench.bench_snapshot_install [--mb 400] [--batch-bytes 262144] [--off-loop]

Run each setting in a fresh process: the peak RSS is the process's, never reset.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from partita.storage.engine import INSTALL_BATCH_BYTES, Engine

VALUE = b"v" * 1000


def pairs(megabytes: int) -> Iterator[tuple[bytes, bytes]]:
    for i in range(megabytes * 1000):
        yield b"t%09d" % i, VALUE


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="snapshot size (1 KB values)")
    parser.add_argument("--batch-bytes", type=int, default=INSTALL_BATCH_BYTES)
    parser.add_argument("--off-loop", action="store_true", help="write from a worker thread")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        engine = Engine.open(Path(directory) / "node", sync=False)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        gaps: list[float] = []
        ticking = asyncio.create_task(loop_gaps(gaps))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        if args.off_loop:
            await engine.install_snapshot_off_loop(
                "g", b"t", b"u", pairs(args.mb), 10, 2, batch_bytes=args.batch_bytes
            )
        else:
            engine.install_snapshot("g", b"t", b"u", pairs(args.mb), 10, 2, batch_bytes=args.batch_bytes)
        took = time.perf_counter() - started
        await asyncio.sleep(0.01)
        ticking.cancel()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await engine.close()
    late = sorted(gaps)
    print(
        f"{args.mb} MB in batches of {args.batch_bytes} B{' off the loop' if args.off_loop else ''}: "
        f"{took:.2f} s (flush included), peak RSS {peak / 1024:.0f} MB (before the install "
        f"{before / 1024:.0f} MB); event loop's longest stall {late[-1] * 1000:.0f} ms, "
        f"99th percentile {late[int(len(late) * 0.99)] * 1000:.1f} ms over {len(late)} wake-ups"
    )


async def loop_gaps(gaps: list[float]) -> None:
    """Ask for a wake-up every millisecond and record each gap between two: how long
    the event loop could not run this task."""
    last = time.perf_counter()
    while True:
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


if __name__ == "__main__":
    asyncio.run(main())
