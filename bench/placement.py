"""Shuffle-sharded placement against round-robin: how exposed tables are to each other.

`python -m bench.placement [--tables 40] [--fleets 5x1,6x1,8x1,6x2,10x2,12x4]`
places `--tables` tables one after another with the autoadmin's placement core
(`partita.autoadmin.placement`), three replicas each, on fleets of three zones, once
with shuffle sharding (the default) and once round-robin from the table's seeded offset
(`--no-shuffle-shard`, the placement before it). A fleet `NxP` is N nodes per zone and
tables of P partitions. Each table's seed is drawn as the autoadmin's table ids are
(random 63-bit).

Printed per fleet and placement:
- exposed pairs: ordered pairs of tables (A, B) where A's nodes hold two or more
  replicas of some partition of B, so that a fault confined to A's nodes (a poison
  request, a hot key starving them) takes B's partition's quorum with it, out of
  `tables * (tables - 1)`;
- tables placed before the first such pair;
- placement CPU per table (the greedy search against every earlier table's partitions).

Pure computation, no cluster: seconds to run.
"""

from __future__ import annotations

import argparse
import random
import time

from partita.autoadmin.placement import ShardPolicy, initial_placement, shuffle_shard
from partita.control.model import NodeRecord

ZONES = ("a", "b", "c")
REPLICAS = 3


def fleet(per_zone: int, zones: int = 3) -> list[NodeRecord]:
    names = "abcdefghijklmnopqrstuvwxyz"[:zones]
    return [NodeRecord(f"node-{zone}{i}", zone, "") for zone in names for i in range(per_zone)]


def place_all(
    per_zone: int, partitions: int, tables: int, policy: ShardPolicy, zones: int = 3
) -> tuple[list[list[tuple[str, ...]]], float]:
    """Each table's partitions' replicas, placed one table after another; CPU s per table."""
    nodes = fleet(per_zone, zones)
    placed: list[list[tuple[str, ...]]] = []
    started = time.process_time()
    for t in range(tables):
        seed = random.Random(t).getrandbits(63)
        others = [frozenset(replicas) for table in placed for replicas in table]
        shard = shuffle_shard(seed, nodes, partitions, policy, others)
        placed.append(initial_placement(partitions, shard, seed, REPLICAS))
    return placed, (time.process_time() - started) / tables


def exposed(a: list[tuple[str, ...]], b: list[tuple[str, ...]]) -> bool:
    nodes = {n for replicas in a for n in replicas}
    return any(len(nodes & set(replicas)) >= 2 for replicas in b)


def report(
    per_zone: int, partitions: int, tables: int, policy: ShardPolicy, zones: int = 3
) -> dict[str, float]:
    placed, cpu = place_all(per_zone, partitions, tables, policy, zones)
    pairs = [(a, b) for a in range(tables) for b in range(tables) if a != b]
    count = sum(1 for a, b in pairs if exposed(placed[a], placed[b]))
    first = next(
        (
            t
            for t in range(1, tables)
            if any(exposed(placed[t], placed[o]) or exposed(placed[o], placed[t]) for o in range(t))
        ),
        tables,
    )
    return {
        "exposed_pairs": count,
        "pairs": len(pairs),
        "clean_tables": first,
        "cpu_ms_per_table": 1000 * cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.placement", description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument(
        "--fleets",
        default="5x1,6x1,8x1,6x2,10x2,12x4,1x1@6,1x1@9",
        help="NxP[@Z]: N nodes per zone, P partitions, Z zones (3; the local cluster's "
        "`partita node add` gives each node a zone of its own)",
    )
    args = parser.parse_args(argv)
    print(
        "| zones x nodes per zone x partitions | placement | exposed pairs | tables before the first | ms CPU per table |"
    )
    print("|---|---|---:|---:|---:|")
    for spec in args.fleets.split(","):
        shape, _, zones_text = spec.partition("@")
        per_zone, partitions = (int(x) for x in shape.split("x"))
        zones = int(zones_text or 3)
        for name, policy in (("shuffle shard", ShardPolicy()), ("round-robin", ShardPolicy(enabled=False))):
            r = report(per_zone, partitions, args.tables, policy, zones)
            print(
                f"| {zones} x {per_zone} x {partitions} | {name} | {r['exposed_pairs']} of {r['pairs']} "
                f"| {r['clean_tables']} | {r['cpu_ms_per_table']:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
