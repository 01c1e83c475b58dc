"""CPU per replicated write of the storage node's `DataPlane.commit`, settling included.

Run: .venv/bin/python bench/bench_commit_settle.py [--batches 3000] [--size 1]

A batch is `--size` writes to one replicated group as one router frame brings them: each
staged on a real engine, its proposal a future that the "replica host" resolves one loop
turn later (no consensus, no WAL: only the data plane's own cost of waiting for the
proposals, answering and unstaging). Process CPU per write, uvloop. To compare two
versions, put the other version's `services/` first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import uvloop

from partita._proto import storage_pb2 as pb
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.operations import Plan

WARMUP_BATCHES = 200


async def run(batches: int, size: int) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-settle-") as directory:
        engine = Engine.open(Path(directory) / "node", sync=False)
        plane = DataPlane(NodeState("n1", "a", engine, hosted=desired_hosting([], "n1")))
        loop = asyncio.get_running_loop()

        async def batch(number: int) -> None:
            plans = []
            for i in range(size):
                effects = [Effect(Kind.PUT, b"k%d-%d" % (number, i), b"v")]
                engine.stage(effects)
                plan = Plan(pb.Response(id=i, status=pb.OK), effects, "g1")
                plan.proposal = loop.create_future()
                plans.append(plan)
            answers = loop.create_task(plane.commit(plans))
            await asyncio.sleep(0)
            for plan in plans:
                assert plan.proposal is not None
                plan.proposal.set_result(None)
            await answers

        for number in range(WARMUP_BATCHES):
            await batch(number)
        started = time.process_time()
        for number in range(batches):
            await batch(number)
        spent = time.process_time() - started
        await engine.close()
    return spent / (batches * size)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=3000)
    parser.add_argument("--size", type=int, default=1, help="writes per batch (1)")
    args = parser.parse_args()
    per_write = uvloop.run(run(args.batches, args.size))
    print(f"{args.size} write(s) per batch: {per_write * 1e6:.2f} µs CPU per write")


if __name__ == "__main__":
    main()
