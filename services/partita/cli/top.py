"""`partita top`: a live terminal view of a cluster, read from its /metrics endpoints.

Every `--interval` seconds it scrapes every endpoint (from `<data-dir>/cluster.json`, or
`--endpoint` given any number of times), and shows rates over the last interval: per
table requests, errors and throttles per second; per operation p50/p99 latency; per
storage node consumed read/write units per second, hosted partitions and WAL fsync p99.
It redraws in place with curses (plain terminals and SSH sessions alike) and exits on
`q` or Ctrl-C. `--once` prints one frame (two scrapes `--interval` apart) and exits.

The figures are computed by pure functions over two scrapes (`Scrape`, `view`,
`render`), so they are tested without a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import ssl
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from partita.common import config

# DynamoDB's throttling errors: a request refused for capacity, at any layer.
THROTTLES = frozenset(
    {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"}
)
SCRAPE_TIMEOUT_SECONDS = 2.0

Labels = tuple[tuple[str, str], ...]


@dataclass
class Scrape:
    """One scrape of every endpoint: sample values by (endpoint, name, labels)."""

    at: float
    values: dict[tuple[str, str, Labels], float] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def add(self, endpoint: str, text: str) -> None:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                self.values[(endpoint, s.name, tuple(sorted(s.labels.items())))] = s.value

    def select(self, name: str) -> Iterable[tuple[str, dict[str, str], float]]:
        for (endpoint, n, labels), value in self.values.items():
            if n == name:
                yield endpoint, dict(labels), value


def _delta(
    before: Scrape, after: Scrape, name: str, key: Callable[[str, dict[str, str]], str | None]
) -> dict[str, float]:
    """Per key, the growth of a counter between two scrapes (a restart counts from 0)."""
    out: dict[str, float] = {}
    for endpoint, labels, value in after.select(name):
        k = key(endpoint, labels)
        if k is None:
            continue
        old = before.values.get((endpoint, name, tuple(sorted(labels.items()))), 0.0)
        out[k] = out.get(k, 0.0) + (value - old if value >= old else value)
    return out


def _quantile(q: float, buckets: dict[float, float]) -> float | None:
    """Prometheus' histogram_quantile over cumulative bucket counts (le -> count)."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    previous_bound, previous_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return previous_bound
            if count == previous_count:
                return bound
            return previous_bound + (bound - previous_bound) * (rank - previous_count) / (
                count - previous_count
            )
        previous_bound, previous_count = bound, count
    return bounds[-1]


def _quantiles(
    before: Scrape, after: Scrape, name: str, label: str
) -> dict[str, tuple[float | None, float | None]]:
    """(p50, p99) per value of `label` from a histogram's bucket growth."""
    grouped: dict[str, dict[float, float]] = {}
    for key, growth in _delta(
        before, after, name, lambda e, ls: f"{ls.get(label, '')}\x00{ls['le']}"
    ).items():
        value, le = key.split("\x00")
        buckets = grouped.setdefault(value, {})
        buckets[float(le)] = buckets.get(float(le), 0.0) + growth
    return {value: (_quantile(0.5, b), _quantile(0.99, b)) for value, b in grouped.items()}


@dataclass
class TableRow:
    table: str
    requests: float
    errors: float
    throttles: float


@dataclass
class OperationRow:
    operation: str
    requests: float
    p50: float | None
    p99: float | None


@dataclass
class NodeRow:
    node: str
    partitions: float
    read_units: float
    write_units: float
    fsync_p99: float | None


@dataclass
class View:
    seconds: float
    tables: list[TableRow]
    operations: list[OperationRow]
    nodes: list[NodeRow]
    failed: list[str]


def view(before: Scrape, after: Scrape) -> View:
    """The figures of one frame: rates over the time between the two scrapes."""
    dt = max(after.at - before.at, 1e-9)
    requests = "partita_router_requests_total"
    by_table = _delta(before, after, requests, lambda e, ls: ls.get("table") or "(none)")
    errors = _delta(
        before,
        after,
        requests,
        lambda e, ls: (ls.get("table") or "(none)") if ls.get("outcome") != "ok" else None,
    )
    throttles = _delta(
        before,
        after,
        requests,
        lambda e, ls: (ls.get("table") or "(none)") if ls.get("outcome") in THROTTLES else None,
    )
    tables = [
        TableRow(t, n / dt, errors.get(t, 0.0) / dt, throttles.get(t, 0.0) / dt)
        for t, n in sorted(by_table.items(), key=lambda kv: -kv[1])
    ]
    by_operation = _delta(before, after, requests, lambda e, ls: ls.get("operation"))
    latency = _quantiles(before, after, "partita_router_request_duration_seconds_bucket", "operation")
    operations = [
        OperationRow(op, n / dt, *latency.get(op, (None, None)))
        for op, n in sorted(by_operation.items(), key=lambda kv: -kv[1])
        if n > 0
    ]
    node_of = {e: ls["node"] for e, ls, _ in after.select("partita_storage_hosted_partitions")}
    partitions: dict[str, float] = {}
    for endpoint, _, value in after.select("partita_storage_hosted_partitions"):
        partitions[node_of[endpoint]] = partitions.get(node_of[endpoint], 0.0) + value
    reads = _delta(
        before, after, "partita_storage_consumed_read_capacity_units_total", lambda e, ls: node_of.get(e)
    )
    writes = _delta(
        before, after, "partita_storage_consumed_write_capacity_units_total", lambda e, ls: node_of.get(e)
    )
    fsync = _quantiles(before, after, "partita_storage_wal_sync_duration_seconds_bucket", "node")
    nodes = [
        NodeRow(
            n, partitions[n], reads.get(n, 0.0) / dt, writes.get(n, 0.0) / dt, fsync.get(n, (None, None))[1]
        )
        for n in sorted(partitions)
    ]
    return View(dt, tables, operations, nodes, list(after.failed))


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f}"


def render(frame: View, width: int = 100, title: str = "") -> list[str]:
    """The frame as lines of at most `width` characters."""
    lines = [f"partita top {title}  (rates over {frame.seconds:.1f}s; q quits)"]
    lines.append("")
    lines.append(f"{'TABLE':<32} {'REQ/S':>10} {'ERR/S':>10} {'THROTTLE/S':>11}")
    for t in frame.tables:
        lines.append(f"{t.table[:32]:<32} {t.requests:>10.1f} {t.errors:>10.1f} {t.throttles:>11.1f}")
    if not frame.tables:
        lines.append("(no requests)")
    lines.append("")
    lines.append(f"{'OPERATION':<32} {'REQ/S':>10} {'P50 MS':>10} {'P99 MS':>10}")
    for o in frame.operations:
        lines.append(f"{o.operation[:32]:<32} {o.requests:>10.1f} {_ms(o.p50):>10} {_ms(o.p99):>10}")
    lines.append("")
    lines.append(f"{'NODE':<20} {'PARTITIONS':>10} {'RCU/S':>10} {'WCU/S':>10} {'FSYNC P99 MS':>13}")
    for n in frame.nodes:
        lines.append(
            f"{n.node[:20]:<20} {n.partitions:>10.0f} {n.read_units:>10.1f} {n.write_units:>10.1f} {_ms(n.fsync_p99):>13}"
        )
    for endpoint in frame.failed:
        lines.append(f"unreachable: {endpoint}")
    return [line[:width] for line in lines]


# --- I/O ------------------------------------------------------------------------------


# The routers' /metrics is on the DynamoDB port, HTTPS when the cluster serves TLS, often
# with a self-signed certificate: `top` reads this host's own cluster, and sends nothing.
_LOCAL_TLS = ssl.create_default_context()
_LOCAL_TLS.check_hostname = False
_LOCAL_TLS.verify_mode = ssl.CERT_NONE


def scrape(endpoints: list[str], now: Callable[[], float] = time.monotonic) -> Scrape:
    result = Scrape(now())
    for url in endpoints:
        try:
            with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_SECONDS, context=_LOCAL_TLS) as response:
                result.add(url, response.read().decode())
        except (OSError, ValueError):
            result.failed.append(url)
    return result


def endpoints_of(data_dir: Path) -> list[str]:
    """The Partita endpoints `partita up` recorded (etcd's own metrics are not read)."""
    cluster = json.loads((data_dir / "cluster.json").read_text())
    return [url for name, url in cluster.get("metrics", {}).items() if name != "etcd"]


def run_curses(endpoints: list[str], interval: float, title: str) -> None:
    import curses

    def loop(screen: curses.window) -> None:
        curses.curs_set(0)
        screen.timeout(100)  # getch waits at most 0.1 s: keys are noticed quickly
        before = scrape(endpoints)
        next_at = time.monotonic() + interval
        while True:
            key = screen.getch()
            if key in (ord("q"), ord("Q")):
                return
            if time.monotonic() < next_at:
                continue
            after = scrape(endpoints)
            height, width = screen.getmaxyx()
            screen.erase()
            for row, line in enumerate(render(view(before, after), width - 1, title)[: height - 1]):
                screen.addstr(row, 0, line)
            screen.refresh()
            before = after
            next_at = time.monotonic() + interval

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C quits, as q does
        curses.wrapper(loop)


def cmd_top(args: argparse.Namespace) -> int:
    endpoints = list(args.endpoint or [])
    if not endpoints:
        data_dir = Path(args.data_dir)
        if not (data_dir / "cluster.json").exists():
            print(f"no cluster in {data_dir} (run `partita up`, or give --endpoint)", file=sys.stderr)
            return 1
        endpoints = endpoints_of(data_dir)
    title = ", ".join(endpoints) if len(endpoints) == 1 else f"{len(endpoints)} endpoints"
    if args.once:
        before = scrape(endpoints)
        time.sleep(args.interval)
        print("\n".join(render(view(before, scrape(endpoints)), 200, title)))
        return 0
    run_curses(endpoints, args.interval, title)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "top", help="live view of request rates, latency and throttles per table and node"
    )
    parser.add_argument(
        "--data-dir", default=config.DEFAULT_DATA_DIR, help="the cluster whose cluster.json to read"
    )
    parser.add_argument(
        "--endpoint", action="append", help="a /metrics URL (repeatable; instead of --data-dir)"
    )
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes (%(default)s)")
    parser.add_argument("--once", action="store_true", help="print one frame and exit")
    parser.set_defaults(func=cmd_top)
