"""One snapshot install into a real RocksDB (`Engine.install_snapshot`): its time and the
process's peak RSS, in bounded batches (the default, one snapshot chunk) or, with
`--batch-bytes` above the snapshot's size, in one batch as before (docs/replication.md,
"Snapshots").

    .venv/bin/python -m bench.bench_snapshot_install [--mb 400] [--batch-bytes 262144]

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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        engine = Engine.open(Path(directory) / "node", sync=False)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        engine.install_snapshot("g", b"t", b"u", pairs(args.mb), 10, 2, batch_bytes=args.batch_bytes)
        took = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await engine.close()
    print(
        f"{args.mb} MB in batches of {args.batch_bytes} B: {took:.2f} s (flush included), "
        f"peak RSS {peak / 1024:.0f} MB (before the install {before / 1024:.0f} MB)"
    )


if __name__ == "__main__":
    asyncio.run(main())
