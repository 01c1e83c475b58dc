"""Query and Scan throughput (items/s and pages/s) against Partita, and dynalite for scale.

Run from the repository root:

    .venv/bin/python -m bench.bench_query_scan                          # partita, ~1.5 min
    .venv/bin/python -m bench.bench_query_scan --targets partita,dynalite
    .venv/bin/python -m bench.bench_query_scan --endpoint http://127.0.0.1:8000 \\
        --data-dir .partita                                              # a running cluster

Per target: start it in a fresh temporary directory (`partita up --data-dir <tmp>
--port <free>`, credentials from <tmp>/credentials.json, through bench.peers), create
table `querybench` (partition key `pk` S, sort key `sk` N, on-demand), load `--partitions` x
`--per-partition` items of `--item-bytes` bytes with BatchWriteItem (not measured), then
run each workload for `--duration` seconds after a 1 s warm-up:

- query:        Query one random partition key, pages of `--page` items (Limit), following
                LastEvaluatedKey to the end of the item collection;
- query-filter: the same with a FilterExpression that keeps half the items;
- query-count:  the same with Select=COUNT (items are read, none returned);
- scan:         one client scanning the whole table page by page (Limit `--scan-page`);
- scan-4seg:    four clients scanning segments 0..3 of TotalSegments=4 in parallel.

items/s counts items *read* (ScannedCount), pages/s counts successful responses.
Latency percentiles are per page (one request). Server CPU is the target's whole
process tree (from /proc) per item read. Results go to bench/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import peers, proc_cpu
from bench.lean_client import ClientError, LeanClient
from bench.ycsb import RESULTS_DIR, _run_loop, latency_summary, machine_info

TABLE = "querybench"
# Defaults sized so one target takes about a minute and a half on 2 cores.
DEFAULT_PARTITIONS = 20  # distinct partition keys (item collections)
DEFAULT_PER_PARTITION = 500  # items per partition key
DEFAULT_ITEM_BYTES = 200  # DynamoDB item size of each item
DEFAULT_PAGE = 100  # Query Limit
DEFAULT_SCAN_PAGE = 1000  # Scan Limit
DEFAULT_CONCURRENCY = 8  # Query clients in flight
DEFAULT_DURATION_S = 10.0
WARMUP_S = 1.0
WORKLOADS = ("query", "query-filter", "query-count", "scan", "scan-4seg")


@dataclass
class Stats:
    pages: int = 0
    items: int = 0
    latencies_ns: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


def item_of(pk: int, sk: int, item_bytes: int) -> dict[str, Any]:
    """An item of exactly `item_bytes` DynamoDB bytes (names + values, numbers by digits)."""
    from partita.api.values import item_size

    base: dict[str, Any] = {
        "pk": {"S": f"part-{pk:04d}"},
        "sk": {"N": str(sk)},
        "odd": {"BOOL": sk % 2 == 1},
        "pad": {"S": ""},
    }
    base["pad"]["S"] = "x" * max(0, item_bytes - item_size(base))
    return base


async def create_table(client: LeanClient) -> None:
    resp = await client.call(
        "CreateTable",
        {
            "TableName": TABLE,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    if resp.error_type not in (None, "ResourceInUseException"):
        raise RuntimeError(f"CreateTable failed: {resp.error_type}: {resp.data}")
    for _ in range(600):
        resp = await client.call("DescribeTable", {"TableName": TABLE})
        if resp.data.get("Table", {}).get("TableStatus") == "ACTIVE":
            return
        await asyncio.sleep(0.1)
    raise RuntimeError("table never became ACTIVE")


async def load(client: LeanClient, args: argparse.Namespace) -> float:
    """BatchWriteItem every item (25 per call), retrying UnprocessedItems; returns seconds."""
    pending = [
        {"PutRequest": {"Item": item_of(p, s, args.item_bytes)}}
        for p in range(args.partitions)
        for s in range(args.per_partition)
    ]
    batches = [pending[i : i + 25] for i in range(0, len(pending), 25)]
    queue = iter(batches)

    async def loader(conn: int) -> None:
        for batch in queue:
            requests = {TABLE: batch}
            for _ in range(20):
                resp = await client.call("BatchWriteItem", {"RequestItems": requests}, conn)
                if resp.error_type is not None:
                    await asyncio.sleep(0.05)
                    continue
                requests = resp.data.get("UnprocessedItems") or {}
                if not requests:
                    break
            else:
                raise RuntimeError(f"load failed: {resp.error_type} {resp.data}")

    start = time.monotonic()
    await asyncio.gather(*(loader(i % client.connections) for i in range(client.connections)))
    return time.monotonic() - start


def _query_body(args: argparse.Namespace, workload: str, pk: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": f"part-{pk:04d}"}},
        "Limit": args.page,
    }
    if workload == "query-filter":
        body["FilterExpression"] = "odd = :t"
        body["ExpressionAttributeValues"][":t"] = {"BOOL": True}
    elif workload == "query-count":
        body["Select"] = "COUNT"
    return body


async def _page(
    client: LeanClient, op: str, body: dict[str, Any], conn: int, stats: Stats, measured: bool
) -> Any:
    """One page; returns LastEvaluatedKey, None at the end, or False after an error."""
    started = time.perf_counter_ns()
    try:
        resp = await client.call(op, body, conn)
    except ClientError as exc:
        stats.errors[exc.kind] += 1
        return False
    if resp.error_type is not None:
        stats.errors[resp.error_type] += 1
        return False
    if measured:
        stats.pages += 1
        stats.items += int(resp.data.get("ScannedCount", 0))
        stats.latencies_ns.append(time.perf_counter_ns() - started)
    return resp.data.get("LastEvaluatedKey")


async def run_workload(client: LeanClient, args: argparse.Namespace, workload: str, seconds: float) -> Stats:
    stats = Stats()
    deadline = time.monotonic() + seconds

    async def querier(worker: int) -> None:
        rng = random.Random(worker)
        while time.monotonic() < deadline:
            body = _query_body(args, workload, rng.randrange(args.partitions))
            while time.monotonic() < deadline:
                last = await _page(client, "Query", body, worker % client.connections, stats, True)
                if not last:
                    break
                body["ExclusiveStartKey"] = last

    async def scanner(worker: int, segment: int | None, total: int | None) -> None:
        while time.monotonic() < deadline:
            body: dict[str, Any] = {"TableName": TABLE, "Limit": args.scan_page}
            if segment is not None:
                body.update(Segment=segment, TotalSegments=total)
            while time.monotonic() < deadline:
                last = await _page(client, "Scan", body, worker % client.connections, stats, True)
                if not last:
                    break
                body["ExclusiveStartKey"] = last

    if workload.startswith("query"):
        await asyncio.gather(*(querier(i) for i in range(args.concurrency)))
    elif workload == "scan":
        await scanner(0, None, None)
    else:
        await asyncio.gather(*(scanner(i, i, 4) for i in range(4)))
    return stats


async def bench_target(endpoint: str, access: str, secret: str, region: str, root_pid: int,
                       args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    client = LeanClient(
        endpoint, access_key=access, secret_key=secret, region=region, connections=max(args.concurrency, 4)
    )
    await client.start()
    try:
        await create_table(client)
        load_s = await load(client, args)
        total = args.partitions * args.per_partition
        print(f"  loaded {total} items in {load_s:.1f} s", flush=True)
        out: dict[str, Any] = {"load_seconds": load_s, "items": total, "workloads": {}}
        for workload in args.workloads:
            await run_workload(client, args, workload, WARMUP_S)
            cpu_before = proc_cpu.tree_cpu_seconds(root_pid) if root_pid else None
            start = time.monotonic()
            stats = await run_workload(client, args, workload, args.duration)
            elapsed = time.monotonic() - start
            cpu = proc_cpu.tree_cpu_seconds(root_pid) - cpu_before if cpu_before is not None else None
            out["workloads"][workload] = {
                "pages_per_s": stats.pages / elapsed,
                "items_per_s": stats.items / elapsed,
                "latency": latency_summary(stats.latencies_ns),
                "errors": dict(stats.errors),
                "server_cpu_us_per_item": cpu * 1e6 / stats.items
                if cpu is not None and stats.items
                else None,
            }
            print(
                f"  {workload}: {stats.items / elapsed:,.0f} items/s, {stats.pages / elapsed:,.1f} pages/s",
                flush=True,
            )
        return out
    finally:
        await client.close()


def run_target(target: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"[{target}] starting", flush=True)
    if target == "external":
        creds = peers.read_partita_credentials(Path(args.data_dir) / "credentials.json", TABLE)
        result: dict[str, Any] = _run_loop(
            bench_target(args.endpoint, *creds, "us-east-1", args.server_pid, args)
        )
        return result
    with peers.running(target, table=TABLE) as peer:
        result = _run_loop(
            bench_target(peer.endpoint, peer.access_key, peer.secret_key, peer.region, peer.root_pid, args)
        )
        result["version"] = peer.version
        return result


def render(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "| workload | target | items/s | pages/s | p50 ms | p99 ms | errors | server CPU µs/item |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for workload in args.workloads:
        for target, res in results.items():
            if "error" in res:
                lines.append(f"| {workload} | {target} | not run: {res['error'][:60]} ||||||")
                continue
            w = res["workloads"][workload]
            lat = w["latency"]
            cpu = w["server_cpu_us_per_item"]
            errors = ", ".join(f"{k}: {v}" for k, v in sorted(w["errors"].items())) or "0"
            lines.append(
                f"| {workload} | {target} | {w['items_per_s']:,.0f} | {w['pages_per_s']:,.1f} | "
                f"{lat.get('p50_ms', float('nan')):.2f} | {lat.get('p99_ms', float('nan')):.2f} | {errors} | "
                f"{'n/a' if cpu is None else f'{cpu:.1f}'} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_query_scan", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--targets", default="partita", help="partita, partita-nofsync, dynalite, dynalite-disk, external"
    )
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS)
    p.add_argument("--per-partition", type=int, default=DEFAULT_PER_PARTITION)
    p.add_argument("--item-bytes", type=int, default=DEFAULT_ITEM_BYTES)
    p.add_argument("--page", type=int, default=DEFAULT_PAGE)
    p.add_argument("--scan-page", type=int, default=DEFAULT_SCAN_PAGE)
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    p.add_argument("--duration", type=float, default=DEFAULT_DURATION_S)
    p.add_argument("--endpoint", default="", help="external target: the router's URL")
    p.add_argument("--data-dir", default=".partita", help="external target: where credentials.json is")
    p.add_argument("--server-pid", type=int, default=0, help="external target: root pid for CPU accounting")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    args.workloads = [w for w in args.workloads.split(",") if w]
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    results: dict[str, dict[str, Any]] = {}
    for target in [t for t in args.targets.split(",") if t]:
        try:
            results[target] = run_target(target, args)
        except Exception as exc:  # one broken target must not hide the others
            print(f"[{target}] FAILED: {exc}", file=sys.stderr, flush=True)
            results[target] = {"error": f"{type(exc).__name__}: {exc}"}
    table = render(results, args)
    print(table)
    out = args.out or RESULTS_DIR / f"query-scan-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    out.write_text(
        json.dumps({"machine": machine_info(), "settings": settings, "results": results}, indent=2)
    )
    print(f"results: {out}")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
