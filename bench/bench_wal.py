"""Write-ahead log group commit: appends/s and fsyncs/s under 1, 8 and 64 writers.

Run: .venv/bin/python bench/bench_wal.py [--seconds 3] [--payload-bytes 200]
     [--writers 1,8,64] [--dir DIR] [--unsafe] [--uvloop]

Each writer is a coroutine that appends one record, waits until it is durable, and
appends the next: the shape of independent client requests. With one writer every
append pays a whole fdatasync; with more, appends that arrive while a sync runs share
the next one, so records per fsync should approach the writer count. Latency is one
append's wait, from call to acknowledgement.

`--dir` chooses the file system (the default is a temporary directory under the
system's temp dir; a tmpfs there makes fsync free and the figures meaningless).
`--unsafe` opens the log with sync=False: no fsync at all, so it measures the
framing, checksum and write path alone. Never a configuration for real data.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

from partita.storage.wal import WriteAheadLog


@dataclass
class Result:
    writers: int
    seconds: float
    appends: int
    fsyncs: int
    batches: int
    latencies: list[float]
    loop_cpu: float  # CPU seconds of the event loop's thread (the writers and the log's loop side)
    process_cpu: float  # CPU seconds of the whole process, the log's sync thread included

    @property
    def appends_per_s(self) -> float:
        return self.appends / self.seconds

    @property
    def fsyncs_per_s(self) -> float:
        return self.fsyncs / self.seconds

    @property
    def loop_us_per_batch(self) -> float:
        return self.loop_cpu / self.batches * 1e6 if self.batches else 0.0

    @property
    def process_us_per_batch(self) -> float:
        return self.process_cpu / self.batches * 1e6 if self.batches else 0.0

    @property
    def records_per_batch(self) -> float:
        return self.appends / self.batches if self.batches else 0.0


async def run(directory: Path, writers: int, seconds: float, payload: bytes, sync: bool) -> Result:
    wal = WriteAheadLog.open(directory, sync=sync)
    latencies: list[float] = []
    stop = False

    async def writer() -> None:
        clock = time.perf_counter
        while not stop:
            start = clock()
            await wal.append(payload)
            latencies.append(clock() - start)

    # A short warm-up so the first segment's creation and the sync thread's start
    # are not measured.
    for _ in range(20):
        await wal.append(payload)
    fsyncs0, batches0, records0 = wal.metrics.fsyncs, wal.metrics.batches, wal.metrics.records
    started = time.perf_counter()
    loop_cpu0, process_cpu0 = time.thread_time(), time.process_time()
    tasks = [asyncio.create_task(writer()) for _ in range(writers)]
    await asyncio.sleep(seconds)
    stop = True
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    loop_cpu, process_cpu = time.thread_time() - loop_cpu0, time.process_time() - process_cpu0
    result = Result(
        writers=writers,
        seconds=elapsed,
        appends=wal.metrics.records - records0,
        fsyncs=wal.metrics.fsyncs - fsyncs0,
        batches=wal.metrics.batches - batches0,
        latencies=latencies,
        loop_cpu=loop_cpu,
        process_cpu=process_cpu,
    )
    await wal.close()
    return result


def percentile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time per writer count (3)")
    parser.add_argument("--payload-bytes", type=int, default=200, help="payload size (200)")
    parser.add_argument("--writers", default="1,8,64", help="comma-separated writer counts (1,8,64)")
    parser.add_argument("--dir", type=Path, default=None, help="parent directory for the logs")
    parser.add_argument("--unsafe", action="store_true", help="sync=False: no fsync (not durable)")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop")
    args = parser.parse_args()

    payload = bytes(range(256)) * (args.payload_bytes // 256) + bytes(args.payload_bytes % 256)
    counts = [int(w) for w in args.writers.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-wal-", dir=args.dir) as parent:
        for writers in counts:
            coro = run(Path(parent) / f"w{writers}", writers, args.seconds, payload, not args.unsafe)
            if args.uvloop:
                import uvloop

                results.append(uvloop.run(coro))
            else:
                results.append(asyncio.run(coro))
        where = parent

    mode = "UNSAFE, no fsync" if args.unsafe else "fdatasync per batch"
    loop = "uvloop" if args.uvloop else "asyncio"
    print(f"WAL group commit: {args.payload_bytes}-byte payloads, {mode}, {loop}, in {where}")
    header = f"{'writers':>7} {'appends/s':>10} {'fsyncs/s':>9} {'rec/batch':>9} {'p50 ms':>7} {'p99 ms':>7}"
    header += f" {'loop µs/batch':>13} {'proc µs/batch':>13}"
    print(header)
    print("-" * len(header))
    for r in results:
        p50 = percentile(r.latencies, 50) * 1000
        p99 = percentile(r.latencies, 99) * 1000
        print(
            f"{r.writers:>7} {r.appends_per_s:>10.0f} {r.fsyncs_per_s:>9.0f} "
            f"{r.records_per_batch:>9.1f} {p50:>7.2f} {p99:>7.2f} "
            f"{r.loop_us_per_batch:>13.1f} {r.process_us_per_batch:>13.1f}"
        )


if __name__ == "__main__":
    main()
