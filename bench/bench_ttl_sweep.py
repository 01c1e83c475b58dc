"""The TTL sweeper's cost: items scanned and expired items deleted per second of work.

Run: .venv/bin/python -m bench.bench_ttl_sweep [--items 20000] [--expired-fraction 0.5]
     [--dir DIR] [--unsafe]

One storage node's engine (RocksDB + WAL with fsync, in a temporary directory unless
`--dir`), one table with one partition led by the node, `--items` items of about 100
bytes, a fraction of them expired. Two passes of the real sweeper
(`storage/ttl_sweeper.py`) through the node's own DataPlane:

- unpaced (share 1.0, no rests): the raw cost of a pass, so items/s of work;
- paced at the default share (5%), after loading another tenth of `--items`: the
  measured work divided by the elapsed time, which the pacer bounds at 5%.

`--unsafe` opens the WAL with sync=False (no fsync): the deletes' CPU cost alone.
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

from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import KeyElement, TableRecord, TimeToLive
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.ttl_sweep import DEFAULT_SHARE, SweepPacer
from partita.storage.ttl_sweeper import TtlSweeper

NODE = "bench"
TABLE_ID = 0x7711


def _record() -> TableRecord:
    return TableRecord(
        name="ttlbench",
        table_id=TABLE_ID,
        status="ACTIVE",
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
        partitions=(Partition("p0", 0, 2**64, (NODE,), NODE),),
        time_to_live=TimeToLive("ENABLED", "expires", 0.0),
    )


async def _load(engine: Engine, prefix: str, items: int, expired_fraction: float, now: int) -> None:
    every = max(1, round(1 / expired_fraction)) if expired_fraction > 0 else 0
    batch: list[list[Effect]] = []
    for i in range(items):
        pk = f"{prefix}-{i:08d}".encode()
        expires = now - 60 if every and i % every == 0 else now + 86400
        item = {"pk": {"S": pk.decode()}, "payload": {"S": "x" * 60}, "expires": {"N": str(expires)}}
        h = keys.key_hash("S", pk)
        batch.append([Effect(Kind.PUT, keys.item_key(TABLE_ID, h, pk, None), orjson.dumps(item))])
        if len(batch) == 1000:
            await engine.commit_many(batch)
            batch = []
    if batch:
        await engine.commit_many(batch)


async def _pass(state: NodeState, share: float) -> tuple[float, TtlSweeper]:
    sweeper = TtlSweeper(state, DataPlane(state), SweepPacer(interval=60.0, share=share))
    started = time.perf_counter()
    await sweeper.sweep_once()
    return time.perf_counter() - started, sweeper


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        engine = Engine.open(Path(tmp) / "node", sync=not args.unsafe)
        try:
            state = NodeState(node_id=NODE, zone="a", engine=engine)
            state.hosted = desired_hosting([_record()], NODE)
            now = int(time.time())
            await _load(engine, "a", args.items, args.expired_fraction, now)
            elapsed, sweeper = await _pass(state, 1.0)
            print(
                f"unpaced: {args.items} items, {sweeper.deleted} deleted in {elapsed:.3f} s: "
                f"{args.items / elapsed:,.0f} items scanned/s, {sweeper.deleted / elapsed:,.0f} deletes/s"
            )
            # More items for the paced pass: the first pass deleted its expired items.
            present = args.items - sweeper.deleted + args.items // 10
            await _load(engine, "b", args.items // 10, args.expired_fraction, now)
            elapsed, sweeper = await _pass(state, DEFAULT_SHARE)
            print(
                f"paced at {DEFAULT_SHARE:.0%}: {present} items, "
                f"{sweeper.deleted} deleted in {elapsed:.2f} s; work {sweeper.pacer.work_seconds:.3f} s "
                f"= {sweeper.pacer.work_seconds / elapsed:.1%} of the elapsed time"
            )
        finally:
            await engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--expired-fraction", type=float, default=0.5)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--unsafe", action="store_true")
    asyncio.run(main(parser.parse_args()))
