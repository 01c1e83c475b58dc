"""What split-for-consumption costs the data path: PartitionHeat.record per request,
against a whole GetItem planned by the storage node's own DataPlane.

Run: .venv/bin/python -m bench.bench_heat [--requests 200000] [--rounds 5]

One storage node's engine (RocksDB, no fsync: reads only) in a temporary directory, one
table with one partition, 1,000 items of about 100 bytes. Each round times `--requests`
eventually consistent GETs through `DataPlane.plan` (which meters and heats every
request), and the same number of bare `PartitionHeat.record` calls on the same key
hashes; the best round of each is reported, and the heat's share of a planned GET.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import KeyElement, TableRecord
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.heat import PartitionHeat
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState

TABLE_ID = 7
ITEMS = 1000


def record() -> TableRecord:
    return TableRecord(
        name="bench",
        table_id=TABLE_ID,
        status="ACTIVE",
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
        partitions=(Partition("p0", 0, 2**64, ("n1",), "n1"),),
    )


async def main(requests: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(Path(tmp) / "node", sync=False)
        gets = []
        for i in range(ITEMS):
            pk = f"user-{i}".encode()
            h = keys.key_hash("S", pk)
            key = keys.item_key(TABLE_ID, h, pk, None)
            await engine.commit(
                [Effect(Kind.PUT, key, orjson.dumps({"pk": {"S": pk.decode()}, "v": {"S": "x" * 80}}))]
            )
            gets.append(pb.Request(op=pb.GET, key=key, key_hash=h, table_id=TABLE_ID, partition_id="p0"))
        plane = DataPlane(NodeState("n1", "a", engine, hosted=desired_hosting([record()], "n1")))
        heat = PartitionHeat(time.monotonic(), 3000.0, 1000.0)
        best_plan = best_heat = float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            for i in range(requests):
                plane.plan(gets[i % ITEMS])
            best_plan = min(best_plan, (time.perf_counter() - started) / requests)
            clock = time.monotonic
            started = time.perf_counter()
            for i in range(requests):
                heat.record(gets[i % ITEMS].key_hash, 0.5, 0.0, clock())
            best_heat = min(best_heat, (time.perf_counter() - started) / requests)
        await engine.close()
    print(f"DataPlane.plan(GET), heat included: {best_plan * 1e6:.2f} us per request")
    print(f"PartitionHeat.record alone:         {best_heat * 1e6:.2f} us per request")
    print(f"heat's share of a planned GET:      {best_heat / best_plan:.1%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
