"""YCSB workloads A and B against Partita and dynalite, with one client for all targets.

Run from the repository root:

    .venv/bin/python -m bench.ycsb                      # defaults: all targets, A and B
    .venv/bin/python -m bench.ycsb --targets dynalite --duration 5

Per target: start it in a fresh temporary directory, create table `usertable`, load
`--records` items with PutItem (not measured), then for each workload run a short
unmeasured warm-up and a measured phase of `--duration` seconds (or `--ops` operations)
with `--concurrency` requests in flight. Reported per workload and target: ops/s,
latency percentiles, errors by DynamoDB error type, server CPU µs/op (whole process tree
of the target, from /proc) and client CPU µs/op (this process, from getrusage).

Peak throughput: `--concurrency 16,32,64,128,256` measures each workload at every level
in turn and reports, per target, the level of its highest ops/s (YCSB's throughput is
what a system sustains with enough clients; each system peaks at its own concurrency),
with the whole curve beside it and each target's peak against dynalite's.

YCSB's definitions, as used by the YCSB DynamoDB binding:
- A (update heavy): 50% reads, 50% updates. Updates are PutItem overwrites of an
  existing key with the full item, since UpdateItem may not be implemented everywhere.
- B (read mostly): 95% reads, 5% updates (PutItem overwrites).
- Keys uniform over [0, records); reads eventually consistent unless --consistent-reads.
Two more, to take a workload's cost apart: C (YCSB's read-only workload) and W (updates
only, not one of YCSB's: a write's cost with no read mixed in).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import math
import os
import platform
import random
import shutil
import string
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench import peers, proc_cpu
from bench.lean_client import ClientError, LeanClient

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Defaults, chosen so that the full default run (4 targets x 2 workloads) stays under
# ~4 minutes: 4 x (load of ~3-5 s + 2 x (1 s warm-up + 20 s measured)) plus start-up.
DEFAULT_RECORDS = 10_000  # keys in the table; uniform key choice over all of them
DEFAULT_CONCURRENCY = 32  # requests in flight (one worker per in-flight request)
DEFAULT_DURATION_S = 20.0  # measured seconds per workload per target
DEFAULT_WARMUP_S = 1.0  # unmeasured seconds before each measured phase (JITs, caches)
DEFAULT_ITEM_BYTES = 900  # DynamoDB item size: attribute names + values
DEFAULT_TABLE = "usertable"  # YCSB's table name
DEFAULT_REQUEST_TIMEOUT_S = 10.0
# Per key; a load that silently loses keys would skew every read after. Throttled
# writes back off exponentially (as the AWS SDKs do), about 9 s in all: an
# on-demand table under admission admits its initial 4,000 WCU and savings, and a
# load faster than that is refused for a while.
LOAD_RETRIES = 10
LOAD_BACKOFF_MAX_SECONDS = 2.0
FIELD_COUNT = 8  # attributes besides the key: YCSB's field0..fieldN layout, sized to fit


# --- pure parts: workload mix, keys, items, percentiles -----------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    read_proportion: float  # the rest are PutItem overwrites


WORKLOADS: dict[str, Workload] = {
    "a": Workload("A", 0.50),
    "b": Workload("B", 0.95),
    # Read-only (YCSB C): server CPU per GetItem without any write cost mixed in.
    "c": Workload("C", 1.00),
    # Write-only: server CPU per replicated PutItem without any read mixed in.
    "w": Workload("W", 0.00),
}


class OpMix:
    """Chooses the next operation (read or write) and key, reproducibly from a seed."""

    __slots__ = ("_rand", "_randrange", "read_proportion", "records")

    def __init__(self, read_proportion: float, records: int, seed: int) -> None:
        if not 0.0 <= read_proportion <= 1.0:
            raise ValueError("read_proportion must be within [0, 1]")
        if records < 1:
            raise ValueError("records must be at least 1")
        rng = random.Random(seed)
        self._rand = rng.random
        self._randrange = rng.randrange
        self.read_proportion = read_proportion
        self.records = records

    def next(self) -> tuple[bool, int]:
        """(is_read, key index): a Bernoulli draw for the op, a uniform draw for the key."""
        return self._rand() < self.read_proportion, self._randrange(self.records)


def key_width(records: int) -> int:
    """Digits in a key; at least 6 ("user000123") so item size is the same for all keys."""
    return max(6, len(str(records - 1)))


def key_name(index: int, width: int) -> str:
    return f"user{index:0{width}d}"


def item_size(item: dict[str, dict[str, str]]) -> int:
    """DynamoDB's size of an item of S attributes: UTF-8 bytes of names plus values."""
    return sum(len(name.encode()) + len(value["S"].encode()) for name, value in item.items())


class ItemFactory:
    """Items of an exact DynamoDB size: key "pk" plus FIELD_COUNT string fields.

    A few pre-built variants of the non-key fields make overwrites change the stored
    value without paying for random strings on the hot path.
    """

    def __init__(self, size: int, key_len: int, variants: int = 16, seed: int = 7) -> None:
        rng = random.Random(seed)
        names = [f"field{i}" for i in range(FIELD_COUNT)]
        budget = size - (len("pk") + key_len) - sum(len(n) for n in names)
        if budget < FIELD_COUNT:
            raise ValueError(f"item size {size} too small for {FIELD_COUNT} fields")
        base, extra = divmod(budget, FIELD_COUNT)
        lengths = [base + (1 if i < extra else 0) for i in range(FIELD_COUNT)]
        alphabet = string.ascii_letters + string.digits
        self._variants: list[dict[str, dict[str, str]]] = []
        for _ in range(variants):
            self._variants.append(
                {n: {"S": "".join(rng.choices(alphabet, k=ln))} for n, ln in zip(names, lengths, strict=True)}
            )
        self.size = size

    @property
    def variant_count(self) -> int:
        return len(self._variants)

    def item(self, key: str, variant: int) -> dict[str, dict[str, str]]:
        return {"pk": {"S": key}, **self._variants[variant % len(self._variants)]}


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (the smallest value with at least q% of samples <= it).

    Nearest-rank rather than interpolation: every reported latency was actually observed,
    and p99.9 of 1000 samples is the maximum, as a reader would expect.
    """
    if not sorted_values:
        return math.nan
    if not 0.0 < q <= 100.0:
        raise ValueError("q must be in (0, 100]")
    # Round first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point, and ceil
    # of that would skip a rank.
    rank = math.ceil(round(q / 100.0 * len(sorted_values), 9))
    return sorted_values[max(rank, 1) - 1]


def latency_summary(samples_ns: list[int]) -> dict[str, float]:
    """Percentiles in milliseconds from raw nanosecond samples."""
    if not samples_ns:
        return {"count": 0}
    s = sorted(samples_ns)
    ms = 1e-6
    return {
        "count": len(s),
        "mean_ms": sum(s) / len(s) * ms,
        "p50_ms": percentile(s, 50) * ms,
        "p90_ms": percentile(s, 90) * ms,
        "p99_ms": percentile(s, 99) * ms,
        "p99_9_ms": percentile(s, 99.9) * ms,
        "max_ms": s[-1] * ms,
    }


# --- running a phase ------------------------------------------------------------------------


@dataclass
class Config:
    targets: list[str]
    workloads: list[str]
    records: int = DEFAULT_RECORDS
    concurrency: int = DEFAULT_CONCURRENCY  # the highest level when there are several
    # Several in-flight levels: each workload is measured at each, and its peak reported.
    concurrency_levels: tuple[int, ...] = ()
    connections: int = 0  # 0: one per worker (no pipelining)
    duration_s: float = DEFAULT_DURATION_S
    ops: int = 0  # > 0: measured phase ends after this many operations instead
    warmup_s: float = DEFAULT_WARMUP_S
    consistent_reads: bool = False
    item_bytes: int = DEFAULT_ITEM_BYTES
    table: str = DEFAULT_TABLE
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    seed: int = 1
    endpoint: str = ""  # for the "external" target
    access_key: str = "bench"
    secret_key: str = "bench-secret"
    region: str = "us-east-1"
    server_pid: int = 0  # for the "external" target: root of its process tree, 0 = unknown
    ca_bundle: str = ""  # an https external target's certificate issuer
    admission: str = ""  # Partita targets' `partita up --admission`; "" = its default
    rounds: int = 1  # all targets this many times, alternating; medians reported
    # (RCU, WCU) of a PROVISIONED table instead of PAY_PER_REQUEST: a small rate gives
    # Partita one partition, so one storage node leads and the others only follow.
    provisioned: tuple[int, int] | None = None
    by_process: bool = False  # print each process's server CPU per operation too

    @property
    def conn_count(self) -> int:
        return self.connections or self.concurrency


@dataclass
class PhaseStats:
    """What the workers of one phase observed."""

    read_ns: list[int] = field(default_factory=list)
    write_ns: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)  # "Op:ErrorType" -> count
    remaining: int = 0  # op budget in --ops mode


def _errors_by_type(errors: Counter[str]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for k, n in errors.items():
        out[k.split(":", 1)[1]] += n
    return dict(out)


async def _worker(
    client: LeanClient,
    stats: PhaseStats,
    *,
    table: str,
    keys: list[str],
    items: ItemFactory,
    mix: OpMix,
    conn_index: int,
    deadline: float,
    use_budget: bool,
    consistent: bool,
) -> None:
    # Locals for the hot loop: attribute look-ups are a measurable part of a ~30 µs budget.
    call = client.call_raw
    dumps = orjson.dumps
    monotonic = time.monotonic
    clock = time.perf_counter_ns
    read_ns = stats.read_ns.append
    write_ns = stats.write_ns.append
    errors = stats.errors
    n = 0
    while True:
        if use_budget:
            if stats.remaining <= 0:
                return
            stats.remaining -= 1
        elif monotonic() >= deadline:
            return
        is_read, k = mix.next()
        key = keys[k]
        if is_read:
            op = "GetItem"
            body = dumps({"TableName": table, "Key": {"pk": {"S": key}}, "ConsistentRead": consistent})
        else:
            op = "PutItem"
            n += 1
            body = dumps({"TableName": table, "Item": items.item(key, k + n)})
        t0 = clock()
        try:
            resp = await call(op, body, conn_index)
        except ClientError as exc:
            errors[f"{op}:{exc.kind}"] += 1
            await asyncio.sleep(0.01)  # a dead connection must not turn into a busy loop
            continue
        elapsed = clock() - t0
        if resp.error_type is not None:
            errors[f"{op}:{resp.error_type}"] += 1
        elif is_read:
            if "Item" in resp.data:
                read_ns(elapsed)
            else:
                # Every key was loaded, so a miss is a wrong answer, not a fast read.
                errors[f"{op}:ItemNotFound(client check)"] += 1
        else:
            write_ns(elapsed)


async def run_phase(
    client: LeanClient, cfg: Config, workload: Workload, *, seconds: float, ops: int, seed: int
) -> tuple[PhaseStats, float]:
    """Run the mix with cfg.concurrency workers; returns the stats and the elapsed seconds."""
    width = key_width(cfg.records)
    keys = [key_name(i, width) for i in range(cfg.records)]
    items = ItemFactory(cfg.item_bytes, len(keys[0]))
    stats = PhaseStats(remaining=ops)
    start = time.monotonic()
    deadline = start + seconds
    await asyncio.gather(
        *(
            _worker(
                client,
                stats,
                table=cfg.table,
                keys=keys,
                items=items,
                mix=OpMix(workload.read_proportion, cfg.records, seed * 1000 + i),
                conn_index=i % client.connections,
                deadline=deadline,
                use_budget=ops > 0,
                consistent=cfg.consistent_reads,
            )
            for i in range(cfg.concurrency)
        )
    )
    return stats, time.monotonic() - start


async def create_table(
    client: LeanClient, table: str, timeout: float = 60.0, provisioned: tuple[int, int] | None = None
) -> None:
    billing: dict[str, Any] = (
        {"BillingMode": "PAY_PER_REQUEST"}
        if provisioned is None
        else {
            "BillingMode": "PROVISIONED",
            "ProvisionedThroughput": {
                "ReadCapacityUnits": provisioned[0],
                "WriteCapacityUnits": provisioned[1],
            },
        }
    )
    resp = await client.call(
        "CreateTable",
        {
            "TableName": table,
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            **billing,
        },
    )
    # An existing table (an external target run twice) is fine: the load overwrites it.
    if resp.error_type not in (None, "ResourceInUseException"):
        raise RuntimeError(f"CreateTable failed: {resp.error_type}: {resp.data.get('message')}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        resp = await client.call("DescribeTable", {"TableName": table})
        if resp.error_type is None and resp.data.get("Table", {}).get("TableStatus") == "ACTIVE":
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"table {table} not ACTIVE after {timeout:.0f}s")


async def load(client: LeanClient, cfg: Config) -> dict[str, Any]:
    """Insert every record with PutItem (unmeasured), retrying each key a few times."""
    width = key_width(cfg.records)
    items = ItemFactory(cfg.item_bytes, len(key_name(0, width)))
    next_index = iter(range(cfg.records))
    errors: Counter[str] = Counter()
    failed: list[int] = []

    async def loader(conn_index: int) -> None:
        for i in next_index:  # a shared iterator: each key is taken by exactly one loader
            body = orjson.dumps({"TableName": cfg.table, "Item": items.item(key_name(i, width), i)})
            for attempt in range(LOAD_RETRIES):
                try:
                    resp = await client.call_raw("PutItem", body, conn_index)
                except ClientError as exc:
                    errors[exc.kind] += 1
                else:
                    if resp.error_type is None:
                        break
                    errors[resp.error_type] += 1
                await asyncio.sleep(min(LOAD_BACKOFF_MAX_SECONDS, 0.05 * 2**attempt))
            else:
                failed.append(i)

    start = time.monotonic()
    await asyncio.gather(*(loader(i % client.connections) for i in range(cfg.concurrency)))
    elapsed = time.monotonic() - start
    if failed:
        raise RuntimeError(f"load failed for {len(failed)} keys after {LOAD_RETRIES} tries: {dict(errors)}")
    return {
        "records": cfg.records,
        "seconds": elapsed,
        "ops_per_s": cfg.records / elapsed if elapsed else 0.0,
        "retried_errors": dict(errors),
    }


def _cpu_sample(root_pid: int, *, client_first: bool) -> tuple[float | None, float]:
    # Scanning /proc costs the client a few ms; keep that scan outside the client's window
    # (server first at the start, client first at the end).
    if client_first:
        client = proc_cpu.self_cpu_seconds()
        return (proc_cpu.tree_cpu_seconds(root_pid) if root_pid else None), client
    server = proc_cpu.tree_cpu_seconds(root_pid) if root_pid else None
    return server, proc_cpu.self_cpu_seconds()


async def measure(
    client: LeanClient, cfg: Config, workload: Workload, root_pid: int, seed: int
) -> dict[str, Any]:
    warm_stats: PhaseStats | None = None
    if cfg.warmup_s > 0:
        warm_stats, _ = await run_phase(client, cfg, workload, seconds=cfg.warmup_s, ops=0, seed=seed + 500)
    by_proc0 = proc_cpu.tree_cpu_by_process(root_pid) if root_pid else {}
    server0, client0 = _cpu_sample(root_pid, client_first=False)
    stats, elapsed = await run_phase(
        client, cfg, workload, seconds=cfg.duration_s if cfg.ops <= 0 else math.inf, ops=cfg.ops, seed=seed
    )
    server1, client1 = _cpu_sample(root_pid, client_first=True)
    by_proc1 = proc_cpu.tree_cpu_by_process(root_pid) if root_pid else {}
    ops = len(stats.read_ns) + len(stats.write_ns)
    # Other work on the machine inflates latency and CPU/op; record it next to the figures.
    loadavg = _loadavg()
    server_cpu = None if server0 is None or server1 is None else server1 - server0
    client_cpu = client1 - client0
    all_ns = stats.read_ns + stats.write_ns
    return {
        "workload": workload.name,
        "read_proportion": workload.read_proportion,
        "elapsed_s": elapsed,
        "ops": ops,
        "reads": len(stats.read_ns),
        "writes": len(stats.write_ns),
        "ops_per_s": ops / elapsed if elapsed else 0.0,
        "latency": latency_summary(all_ns),
        "latency_read": latency_summary(stats.read_ns),
        "latency_write": latency_summary(stats.write_ns),
        "errors": _errors_by_type(stats.errors),
        "errors_by_op": dict(stats.errors),
        "warmup_errors": dict(warm_stats.errors) if warm_stats else {},
        "server_cpu_s": server_cpu,
        "server_cpu_us_per_op": server_cpu / ops * 1e6 if server_cpu is not None and ops else None,
        "server_cpu_by_process": {
            k: round(by_proc1.get(k, 0.0) - by_proc0.get(k, 0.0), 3)
            for k in sorted(set(by_proc0) | set(by_proc1))
        },
        "client_cpu_s": client_cpu,
        "loadavg_1m_after": loadavg,
        "client_cpu_us_per_op": client_cpu / ops * 1e6 if ops else None,
    }


async def measure_peak(
    client: LeanClient, cfg: Config, workload: Workload, root_pid: int, seed: int
) -> dict[str, Any]:
    """The workload at each in-flight level: the level of the highest ops/s, with the
    curve (every level's ops/s, p99 and CPU) under "by_concurrency"."""
    curve = [
        await measure(client, dataclasses.replace(cfg, concurrency=level), workload, root_pid, seed)
        for level in cfg.concurrency_levels
    ]
    best_index = max(range(len(curve)), key=lambda k: curve[k]["ops_per_s"])
    best = dict(curve[best_index], concurrency=cfg.concurrency_levels[best_index])
    best["by_concurrency"] = [
        {
            "concurrency": level,
            "ops_per_s": m["ops_per_s"],
            "p99_ms": m["latency"].get("p99_ms"),
            "server_cpu_us_per_op": m["server_cpu_us_per_op"],
            "errors": m["errors"],
        }
        for level, m in zip(cfg.concurrency_levels, curve, strict=True)
    ]
    return best


async def bench_target(
    endpoint: str, access_key: str, secret_key: str, region: str, root_pid: int, cfg: Config
) -> dict[str, Any]:
    client = LeanClient(
        endpoint,
        access_key=access_key,
        secret_key=secret_key,
        region=region,
        connections=cfg.conn_count,
        request_timeout=cfg.request_timeout_s,
        ca_bundle=cfg.ca_bundle,
    )
    await client.start()
    try:
        await create_table(client, cfg.table, provisioned=cfg.provisioned)
        result: dict[str, Any] = {"load": await load(client, cfg), "workloads": {}}
        for i, name in enumerate(cfg.workloads):
            wl = WORKLOADS[name]
            print(
                f"  workload {wl.name}: {cfg.ops or cfg.duration_s} {'ops' if cfg.ops else 's'} "
                f"at {', '.join(map(str, cfg.concurrency_levels or (cfg.concurrency,)))} in flight ...",
                flush=True,
            )
            if cfg.concurrency_levels:
                result["workloads"][name] = await measure_peak(client, cfg, wl, root_pid, cfg.seed + i)
            else:
                result["workloads"][name] = await measure(client, cfg, wl, root_pid, cfg.seed + i)
        return result
    finally:
        await client.close()


def _run_loop(coro: Any) -> Any:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency, but stay usable without
        return asyncio.run(coro)
    return uvloop.run(coro)


def run_target(target: str, cfg: Config) -> dict[str, Any]:
    """Start a target, benchmark it, stop it; errors become the result's "error" entry."""
    print(f"[{target}] starting", flush=True)
    if target == "external":
        if not cfg.endpoint:
            return {"error": "--endpoint is required for the external target"}
        res: dict[str, Any] = _run_loop(
            bench_target(cfg.endpoint, cfg.access_key, cfg.secret_key, cfg.region, cfg.server_pid, cfg)
        )
        res.update(endpoint=cfg.endpoint, version="external", notes={"server_pid": cfg.server_pid})
        return res
    try:
        partita_args = ("--admission", cfg.admission) if cfg.admission else ()
        with peers.running(target, table=cfg.table, partita_args=partita_args) as peer:
            print(f"[{target}] {peer.version} at {peer.endpoint} (pid {peer.root_pid}); loading", flush=True)
            res = _run_loop(
                bench_target(peer.endpoint, peer.access_key, peer.secret_key, peer.region, peer.root_pid, cfg)
            )
            notes = {
                **peer.notes,
                **({"admission": cfg.admission} if cfg.admission and target.startswith("partita") else {}),
            }
            if target.startswith("partita"):
                notes["leaders"] = peers.leaders_per_node(peer, cfg.table)
            res.update(endpoint=peer.endpoint, version=peer.version, notes=notes)
            return res
    except Exception as exc:  # one broken target must not hide the others' results
        traceback.print_exc()
        print(f"[{target}] FAILED: {exc}", file=sys.stderr, flush=True)
        return {"error": f"{type(exc).__name__}: {exc}"}


# --- reporting -----------------------------------------------------------------------------


def _fmt(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def render_table(results: dict[str, dict[str, Any]], workloads: list[str]) -> str:
    """A Markdown table (pasteable into docs/benchmarks.md), one row per workload and target."""
    head = (
        "| workload | target | ops/s | p50 ms | p99 ms | p99.9 ms | errors | "
        "server CPU µs/op | client CPU µs/op |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for name in workloads:
        for target, res in results.items():
            if "error" in res:
                lines.append(f"| {WORKLOADS[name].name} | {target} | not run: {res['error'][:80]} |||||||")
                continue
            w = res["workloads"][name]
            lat = w["latency"]
            errs = ", ".join(f"{k}: {v}" for k, v in sorted(w["errors"].items())) or "0"
            spread = w.get("ops_per_s_range")
            ops = f"{w['ops_per_s']:.0f}" + (f" ({spread[0]:.0f}-{spread[1]:.0f})" if spread else "")
            if "concurrency" in w:
                ops += f" at {w['concurrency']}"
            lines.append(
                f"| {w['workload']} | {target} | {ops} | {_fmt(lat.get('p50_ms'))} | "
                f"{_fmt(lat.get('p99_ms'))} | {_fmt(lat.get('p99_9_ms'))} | {errs} | "
                f"{_fmt(w['server_cpu_us_per_op'], 0)} | {_fmt(w['client_cpu_us_per_op'], 0)} |"
            )
    return "\n".join(lines)


def render_curves(results: dict[str, dict[str, Any]], workloads: list[str]) -> str:
    """Ops/s (p99 ms) of each target at each in-flight level, and each target's peak
    against dynalite's peak in the same run."""
    levels = sorted(
        {p["concurrency"] for r in results.values() for w in r.get("workloads", {}).values()
         for p in w.get("by_concurrency", ())}
    )  # fmt: skip
    if not levels:
        return ""
    lines = [
        "| workload | target | "
        + " | ".join(f"{c} in flight" for c in levels)
        + " | peak / dynalite's peak |",
        "|---|---|" + "---:|" * (len(levels) + 1),
    ]
    for name in workloads:
        base = results.get("dynalite", {}).get("workloads", {}).get(name)
        for target, res in results.items():
            w = res.get("workloads", {}).get(name)
            if not w or "by_concurrency" not in w:
                continue
            at = {p["concurrency"]: p for p in w["by_concurrency"]}
            cells = [
                f"{at[c]['ops_per_s']:.0f} ({_fmt(at[c]['p99_ms'], 1)})" if c in at else "" for c in levels
            ]
            ratio = f"{w['ops_per_s'] / base['ops_per_s']:.2f}x" if base and base["ops_per_s"] else "n/a"
            lines.append(f"| {name.upper()} | {target} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


def _command_version(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


def _loadavg() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def machine_info() -> dict[str, Any]:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "node": _command_version(["node", "--version"]),
        "loadavg_1m_at_start": _loadavg(),
    }


def parse_args(argv: list[str] | None) -> tuple[Config, Path | None]:
    p = argparse.ArgumentParser(prog="python -m bench.ycsb", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--targets",
        default=",".join(peers.TARGETS),
        help=f"comma-separated, from {', '.join((*peers.ALL_TARGETS, 'external'))} (default: %(default)s)",
    )
    p.add_argument(
        "--workloads", default="a,b,c", help="comma-separated, from a, b, c, w (default: %(default)s)"
    )
    p.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="keys loaded (default: %(default)s)")
    p.add_argument(
        "--concurrency",
        default=str(DEFAULT_CONCURRENCY),
        help="in-flight requests (%(default)s); several, comma-separated (16,32,64,128,256), "
        "measure each workload at each and report each target's peak",
    )
    p.add_argument(
        "--connections",
        type=int,
        default=0,
        help="TCP connections; fewer than --concurrency pipelines (default: one each)",
    )
    p.add_argument(
        "--duration", type=float, default=DEFAULT_DURATION_S, help="measured s per workload (%(default)s)"
    )
    p.add_argument("--ops", type=int, default=0, help="measured ops per workload instead of --duration")
    p.add_argument("--warmup", type=float, default=DEFAULT_WARMUP_S, help="unmeasured s first (%(default)s)")
    p.add_argument(
        "--consistent-reads", action="store_true", help="strongly consistent GetItem (default: eventual)"
    )
    p.add_argument("--item-bytes", type=int, default=DEFAULT_ITEM_BYTES, help="item size (%(default)s)")
    p.add_argument("--table", default=DEFAULT_TABLE)
    p.add_argument("--request-timeout", type=float, default=DEFAULT_REQUEST_TIMEOUT_S)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=1, help="repeat all targets; report medians (%(default)s)")
    p.add_argument(
        "--provisioned",
        default="",
        metavar="RCU,WCU",
        help="a PROVISIONED table of this throughput instead of PAY_PER_REQUEST; a small one "
        "is one Partita partition: one node leads it, the others only follow (run Partita "
        "targets with --admission off, or the rate is enforced)",
    )
    p.add_argument(
        "--by-process", action="store_true", help="also print each server process's CPU per operation"
    )
    p.add_argument("--endpoint", default="", help="external target: http://host:port or https://host:port")
    p.add_argument("--ca-bundle", default="", help="an https external target's certificate issuer (PEM)")
    p.add_argument("--access-key", default="bench", help="external target credentials")
    p.add_argument("--secret-key", default="bench-secret")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--server-pid", type=int, default=0, help="external target: root pid for CPU accounting")
    p.add_argument(
        "--admission",
        choices=("off", "local", "doorman"),
        default="",
        help="Partita targets' admission (default: partita up's). off measures the data path "
        "alone: a hot partition of workload A passes DynamoDB's 1,000 WCU per-partition "
        "ceiling on a fast machine, and throttled requests are errors, not ops",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="JSON results file (default: bench/results/<time>.json)"
    )
    a = p.parse_args(argv)
    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    workloads = [w.strip().lower() for w in a.workloads.split(",") if w.strip()]
    for t in targets:
        if t not in (*peers.ALL_TARGETS, "external"):
            p.error(f"unknown target {t!r}")
    for w in workloads:
        if w not in WORKLOADS:
            p.error(f"unknown workload {w!r}")
    try:
        levels = sorted({int(part) for part in a.concurrency.split(",") if part.strip()})
    except ValueError:
        p.error("--concurrency takes positive integers, comma-separated")
    if not levels or levels[0] < 1 or a.records < 1:
        p.error("--concurrency and --records must be positive")
    concurrency = levels[-1]
    if a.connections < 0 or a.connections > levels[0]:
        p.error("--connections must be between 1 and the lowest --concurrency (0: one per worker)")
    cfg = Config(
        targets=targets,
        workloads=workloads,
        records=a.records,
        concurrency=concurrency,
        concurrency_levels=tuple(levels) if len(levels) > 1 else (),
        connections=a.connections,
        duration_s=a.duration,
        ops=a.ops,
        warmup_s=a.warmup,
        consistent_reads=a.consistent_reads,
        item_bytes=a.item_bytes,
        table=a.table,
        request_timeout_s=a.request_timeout,
        seed=a.seed,
        endpoint=a.endpoint,
        ca_bundle=a.ca_bundle,
        access_key=a.access_key,
        secret_key=a.secret_key,
        region=a.region,
        server_pid=a.server_pid,
        admission=a.admission,
        rounds=a.rounds,
        provisioned=_parse_provisioned(p, a.provisioned),
        by_process=a.by_process,
    )
    return cfg, a.out


def _parse_provisioned(p: argparse.ArgumentParser, text: str) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        rcu, wcu = (int(part) for part in text.split(","))
    except ValueError:
        p.error("--provisioned takes RCU,WCU, two positive integers")
    if rcu < 1 or wcu < 1:
        p.error("--provisioned takes RCU,WCU, two positive integers")
    return rcu, wcu


def render_by_process(results: dict[str, dict[str, Any]], workloads: list[str]) -> str:
    """Server CPU per operation of each process (µs), busiest first: with a one-partition
    table (--provisioned) and strong reads, the busiest storage node is the leader."""
    lines = ["| workload | target | process | CPU µs/op |", "|---|---|---|---:|"]
    for name in workloads:
        for target, res in results.items():
            w = res.get("workloads", {}).get(name)
            if not w or not w["ops"]:
                continue
            for label, seconds in sorted(w["server_cpu_by_process"].items(), key=lambda kv: -kv[1]):
                if seconds > 0:
                    lines.append(f"| {name.upper()} | {target} | {label} | {seconds / w['ops'] * 1e6:.0f} |")
    return "\n".join(lines)


def median_of_rounds(
    rounds: list[dict[str, dict[str, Any]]], workloads: list[str]
) -> dict[str, dict[str, Any]]:
    """One result per target whose figures are the medians over rounds (the round with
    the median throughput supplies the latencies), with the throughput range kept."""
    merged: dict[str, dict[str, Any]] = {}
    for target in rounds[0]:
        runs = [r[target] for r in rounds]
        ok = [r for r in runs if "error" not in r]
        if not ok:
            merged[target] = runs[0]
            continue
        out = dict(ok[0], workloads={}, rounds=len(ok))
        for name in workloads:
            ws = sorted((r["workloads"][name] for r in ok), key=lambda w: w["ops_per_s"])
            mid = dict(ws[len(ws) // 2])
            for key in ("server_cpu_us_per_op", "client_cpu_us_per_op"):
                values = sorted(w[key] for w in ws if w[key] is not None)
                mid[key] = values[len(values) // 2] if values else None
            mid["ops_per_s_range"] = [ws[0]["ops_per_s"], ws[-1]["ops_per_s"]]
            out["workloads"][name] = mid
        merged[target] = out
    return merged


def main(argv: list[str] | None = None) -> int:
    cfg, out = parse_args(argv)
    started = dt.datetime.now(dt.UTC)
    # Rounds are outermost and targets alternate inside each, so a burst of load from
    # elsewhere on the machine hits every target alike; medians are reported.
    rounds: list[dict[str, dict[str, Any]]] = []
    for number in range(cfg.rounds):
        if cfg.rounds > 1:
            print(f"=== round {number + 1} of {cfg.rounds}", flush=True)
        rounds.append({target: run_target(target, cfg) for target in cfg.targets})
    results = rounds[0] if cfg.rounds == 1 else median_of_rounds(rounds, cfg.workloads)
    table = render_table(results, cfg.workloads)
    print()
    print(table)
    curves = render_curves(results, cfg.workloads)
    if curves:
        print()
        print(curves)
    if cfg.by_process:
        print()
        print(render_by_process(results, cfg.workloads))
    for target, res in results.items():
        if "error" not in res:
            print(
                f"  {target}: {res['version']}, {res['notes']}, load {res['load']['ops_per_s']:.0f} PutItem/s"
            )
    doc = {
        "benchmark": "ycsb",
        "started": started.isoformat(),
        "finished": dt.datetime.now(dt.UTC).isoformat(),
        "config": dataclasses.asdict(cfg),
        "machine": machine_info(),
        "results": results,
        "rounds": rounds,
        "table_markdown": table,
        "curves_markdown": curves,
    }
    if out is None:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    print(f"\nresults: {out}")
    # A target that could not run is a failed benchmark, not a footnote.
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
