"""Latency against offered load: the paper's figures 5 and 6, on this machine.

Saturating a server shows its peak; a database is judged by latency at the load it is
given. This sweeps the offered rate: for each target, one cluster, one load of the
table, then for each rate in `--rates` a paced phase where the workers together start
requests at that rate (each worker on its own schedule, `concurrency / rate` apart).
Latency is measured from each request's *scheduled* start, so a server that falls
behind is charged the queueing it causes (no coordinated omission), up to the point
where every worker is busy and the achieved rate stops following the offered one.

    .venv/bin/python -m bench.sweep --targets partita,dynalite --workload b --rates 1000,2000,4000

Output: JSON (`--out`), one entry per target and rate: offered and achieved ops/s,
p50/p99/p99.9, errors, server CPU per operation; `bench.report` plots it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from bench import peers, proc_cpu
from bench.lean_client import ClientError, LeanClient
from bench.ycsb import (
    RESULTS_DIR,
    WORKLOADS,
    Config,
    ItemFactory,
    OpMix,
    Workload,
    create_table,
    key_name,
    key_width,
    latency_summary,
    load,
    machine_info,
)

DEFAULT_RATES = (500, 1000, 2000, 3000, 4000, 6000, 8000)
DEFAULT_PHASE_SECONDS = 5.0
DEFAULT_CONCURRENCY = 64  # enough workers that pacing, not their count, sets the rate below saturation


async def _paced_worker(
    client: LeanClient,
    *,
    cfg: Config,
    keys: list[str],
    items: ItemFactory,
    mix: OpMix,
    conn_index: int,
    start: float,
    interval: float,
    measure_from: float,
    end: float,
    latencies: list[int],
    errors: Counter[str],
) -> None:
    n = 0
    scheduled = start
    while scheduled < end:
        delay = scheduled - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        is_read, k = mix.next()
        if is_read:
            op = "GetItem"
            body = orjson.dumps({"TableName": cfg.table, "Key": {"pk": {"S": keys[k]}}})
        else:
            op = "PutItem"
            n += 1
            body = orjson.dumps({"TableName": cfg.table, "Item": items.item(keys[k], k + n)})
        try:
            resp = await client.call_raw(op, body, conn_index)
        except ClientError as exc:
            errors[exc.kind] += 1
        else:
            if resp.error_type is not None:
                errors[resp.error_type] += 1
            elif scheduled >= measure_from:
                # From the scheduled start: waiting for a busy worker is latency too.
                latencies.append(int((time.monotonic() - scheduled) * 1e9))
        scheduled += interval


async def paced_phase(
    client: LeanClient,
    cfg: Config,
    workload: Workload,
    rate: float,
    seconds: float,
    root_pid: int,
    seed: int,
    warmup: float = 1.0,
) -> dict[str, Any]:
    """`warmup` seconds at the rate first, unmeasured: the queue reaches its steady state."""
    width = key_width(cfg.records)
    keys = [key_name(i, width) for i in range(cfg.records)]
    items = ItemFactory(cfg.item_bytes, len(keys[0]))
    latencies: list[int] = []
    errors: Counter[str] = Counter()
    interval = cfg.concurrency / rate
    start = time.monotonic() + 0.05
    measure_from = start + warmup
    end = measure_from + seconds
    cpu: dict[str, Any] = {}

    async def sample_at_measure_start() -> None:
        await asyncio.sleep(max(0.0, measure_from - time.monotonic()))
        cpu["total"] = proc_cpu.tree_cpu_seconds(root_pid) if root_pid else None
        cpu["by_process"] = proc_cpu.tree_cpu_by_process(root_pid) if root_pid else {}

    await asyncio.gather(
        sample_at_measure_start(),
        *(
            _paced_worker(
                client,
                cfg=cfg,
                keys=keys,
                items=items,
                mix=OpMix(workload.read_proportion, cfg.records, seed * 1000 + i),
                conn_index=i % client.connections,
                start=start + interval * i / cfg.concurrency,  # staggered: an even stream
                interval=interval,
                measure_from=measure_from,
                end=end,
                latencies=latencies,
                errors=errors,
            )
            for i in range(cfg.concurrency)
        ),
    )
    elapsed = time.monotonic() - measure_from
    cpu0, by_proc0 = cpu["total"], cpu["by_process"]
    cpu1 = proc_cpu.tree_cpu_seconds(root_pid) if root_pid else None
    by_proc1 = proc_cpu.tree_cpu_by_process(root_pid) if root_pid else {}
    ops = len(latencies)
    return {
        "offered_ops_per_s": rate,
        "ops_per_s": ops / elapsed if elapsed else 0.0,
        "ops": ops,
        "latency": latency_summary(latencies),
        "errors": dict(errors),
        "server_cpu_us_per_op": (cpu1 - cpu0) / ops * 1e6
        if cpu0 is not None and cpu1 is not None and ops
        else None,
        "server_cpu_by_process": {k: round(by_proc1.get(k, 0.0) - by_proc0.get(k, 0.0), 3) for k in by_proc1},
    }


async def sweep_target(
    peer: peers.Peer, cfg: Config, workload: Workload, rates: list[float], seconds: float
) -> dict[str, Any]:
    client = LeanClient(
        peer.endpoint,
        access_key=peer.access_key,
        secret_key=peer.secret_key,
        region=peer.region,
        connections=cfg.conn_count,
        request_timeout=cfg.request_timeout_s,
    )
    await client.start()
    try:
        await create_table(client, cfg.table)
        loaded = await load(client, cfg)
        points = []
        for i, rate in enumerate(rates):
            print(f"  offered {rate:.0f} ops/s for {seconds:.0f} s ...", flush=True)
            points.append(
                await paced_phase(client, cfg, workload, rate, seconds, peer.root_pid, cfg.seed + i)
            )
        return {"version": peer.version, "notes": peer.notes, "load": loaded, "points": points}
    finally:
        await client.close()


def run(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--targets", default="partita,dynalite")
    p.add_argument("--workload", default="b", choices=sorted(WORKLOADS))
    p.add_argument(
        "--rates", default=",".join(str(r) for r in DEFAULT_RATES), help="offered ops/s, comma-separated"
    )
    p.add_argument("--seconds", type=float, default=DEFAULT_PHASE_SECONDS, help="per rate (%(default)s)")
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    p.add_argument(
        "--admission",
        choices=("off", "local", "doorman"),
        default="",
        help="Partita targets' admission (default: partita up's); off measures the data path alone",
    )
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    cfg = Config(
        targets=a.targets.split(","), workloads=[a.workload], records=a.records, concurrency=a.concurrency
    )
    rates = [float(r) for r in a.rates.split(",")]
    workload = WORKLOADS[a.workload]
    started = dt.datetime.now(dt.UTC)
    results: dict[str, Any] = {}
    for target in cfg.targets:
        print(f"[{target}] starting", flush=True)
        try:
            partita_args = ("--admission", a.admission) if a.admission else ()
            with peers.running(target, table=cfg.table, partita_args=partita_args) as peer:
                results[target] = _run_loop(sweep_target(peer, cfg, workload, rates, a.seconds))
        except Exception as exc:  # one broken target must not hide the others
            print(f"[{target}] FAILED: {exc}", file=sys.stderr, flush=True)
            results[target] = {"error": f"{type(exc).__name__}: {exc}"}
    doc = {
        "benchmark": "sweep",
        "started": started.isoformat(),
        "finished": dt.datetime.now(dt.UTC).isoformat(),
        "workload": a.workload,
        "rates": rates,
        "seconds": a.seconds,
        "concurrency": a.concurrency,
        "records": a.records,
        "admission": a.admission or "default",
        "machine": machine_info(),
        "results": results,
    }
    out = a.out
    if out is None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / f"sweep-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    print(f"results: {out}")
    return doc


def _run_loop(coro: Any) -> Any:
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
    return uvloop.run(coro)


def main(argv: list[str] | None = None) -> int:
    doc = run(argv)
    return 1 if any("error" in r for r in doc["results"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
