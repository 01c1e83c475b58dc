"""Prometheus metrics for every Partita process: one registry, typed helpers, `/metrics`.

Each process has one registry (`REGISTRY`, with the process collector: CPU seconds,
memory, open files). Components declare their metrics in their own `metrics` module
(`partita.router.metrics`, `partita.storage.metrics`; later the Doorman server, the
replication adapter, the autoadmin, a TTL sweeper) with the helpers here, which check
the naming rules once at start-up: `partita_` prefix, base units, counters ending in
`_total`, durations in `_seconds`, sizes in `_bytes`. Labels stay bounded: an
operation, a table, a partition id, a node; never a key.

Two kinds of metric, by how hot the code that feeds them is:
- `counter`, `gauge`, `histogram`: prometheus-client's own objects, for events that
  happen at most a few times per batch (route refreshes, WAL batches).
- `CounterCells` and `HistogramCells`: families kept as plain Python numbers in cells
  that the caller looks up once per label set and keeps; a request then costs an
  attribute increment (a histogram: one bisect more) instead of a label lookup and a
  lock. They are read only when scraped. Every process is one asyncio thread, and
  scrapes run on it too, so no lock is needed.
- `Snapshot`: a family computed when scraped from the state that already holds the
  figures (hosted partitions, the WAL's counters, RocksDB properties).

`exposition()` renders the registry for a process that already serves HTTP (the
router answers `GET /metrics` on its endpoint); `serve_metrics` is a tiny asyncio HTTP
server for the others (storage nodes: `--metrics-port`).

A new component, for example the Doorman server::

    # partita/doorman/metrics.py
    GRANTS = metrics.counter("partita_doorman_grants_total", "Leases granted", ("resource",))
    WANTS = metrics.Snapshot("partita_doorman_wants", "Capacity wanted", ("resource",))

    # where the server starts
    WANTS.read = lambda: (((r.id,), r.wants) for r in server.resources())
    exporter = await metrics.serve_metrics(host, metrics_port)

and a `"metrics": port` entry in its `Child.ports` (cli/supervisor.py), which puts it in
`partita status`, the `partita up` banner and the Prometheus configuration.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

# Request latencies: from 100 µs (a GetItem's own CPU) to 10 s (the router's storage
# timeout), about 2.5x apart; p50/p99 are read from these by histogram_quantile.
LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    10.0,
)
# fsync latencies: a page-cache-only disk answers in tens of µs, a busy SSD in ms.
FSYNC_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.0)
# Batch sizes (requests per data-path batch, records per WAL batch).
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

_NAME = re.compile(r"^partita_[a-z0-9_]+$")
_UNIT_SUFFIXES = ("_seconds", "_bytes", "_total", "_units", "_ratio", "_info")


class MetricNameError(ValueError):
    """A metric name breaks the project's naming rules."""


def check_name(name: str, kind: str) -> None:
    """Raise MetricNameError unless `name` follows the conventions for `kind`."""
    if not _NAME.match(name):
        raise MetricNameError(f"{name}: metric names are partita_[a-z0-9_]+")
    if kind == "counter" and not name.endswith("_total"):
        raise MetricNameError(f"{name}: a counter's name ends in _total")
    if kind != "counter" and name.endswith("_total"):
        raise MetricNameError(f"{name}: only counters end in _total")
    for unit in ("_milliseconds", "_microseconds", "_kilobytes", "_megabytes"):
        if unit in name:
            raise MetricNameError(f"{name}: use base units (_seconds, _bytes)")


# --- prometheus-client objects, for code that runs at most per batch ---------------------


def counter(
    name: str, doc: str, labels: Sequence[str] = (), registry: CollectorRegistry = REGISTRY
) -> Counter:
    check_name(name, "counter")
    # prometheus-client appends _total itself and refuses it twice.
    return Counter(name.removesuffix("_total"), doc, labels, registry=registry)


def gauge(name: str, doc: str, labels: Sequence[str] = (), registry: CollectorRegistry = REGISTRY) -> Gauge:
    check_name(name, "gauge")
    return Gauge(name, doc, labels, registry=registry)


def histogram(
    name: str,
    doc: str,
    labels: Sequence[str] = (),
    buckets: Sequence[float] = LATENCY_BUCKETS,
    registry: CollectorRegistry = REGISTRY,
) -> Histogram:
    check_name(name, "histogram")
    return Histogram(name, doc, labels, buckets=buckets, registry=registry)


# --- plain-number families, for the per-request path -------------------------------------


class CounterCell:
    """One label set's count. Hot paths keep the cell and add to `value`."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0


class CounterCells:
    """A counter family of plain-number cells, one per label set."""

    def __init__(
        self, name: str, doc: str, labels: Sequence[str], registry: CollectorRegistry | None = REGISTRY
    ) -> None:
        check_name(name, "counter")
        self.name = name
        self.doc = doc
        self.labels = tuple(labels)
        self._cells: dict[tuple[str, ...], CounterCell] = {}
        if registry is not None:
            registry.register(_FamilyCollector(self))

    def cell(self, *values: str) -> CounterCell:
        cell = self._cells.get(values)
        if cell is None:
            if len(values) != len(self.labels):
                raise ValueError(f"{self.name} takes labels {self.labels}, got {values}")
            cell = self._cells[values] = CounterCell()
        return cell

    def inc(self, values: tuple[str, ...], amount: float = 1.0) -> None:
        """For callers that do not keep the cell (a few times per batch)."""
        self.cell(*values).value += amount

    def forget(self, predicate: Callable[[tuple[str, ...]], bool]) -> None:
        """Drop label sets that no longer exist (a dropped table's partitions)."""
        for values in [v for v in self._cells if predicate(v)]:
            del self._cells[values]

    def value(self, *values: str) -> float:
        cell = self._cells.get(values)
        return cell.value if cell is not None else 0.0

    def cells(self) -> Iterable[CounterCell]:
        return self._cells.values()

    def family(self) -> Metric:
        family = CounterMetricFamily(self.name.removesuffix("_total"), self.doc, labels=self.labels)
        for values, cell in self._cells.items():
            family.add_metric(values, cell.value)
        return family


class HistogramCell:
    """One label set's histogram: counts per bucket (not cumulative) and the sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last slot: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)


class HistogramCells:
    """A histogram family of plain-number cells, one per label set."""

    def __init__(
        self,
        name: str,
        doc: str,
        labels: Sequence[str],
        buckets: Sequence[float] = LATENCY_BUCKETS,
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        check_name(name, "histogram")
        self.name = name
        self.doc = doc
        self.labels = tuple(labels)
        self.bounds = tuple(sorted(buckets))
        self._cells: dict[tuple[str, ...], HistogramCell] = {}
        if registry is not None:
            registry.register(_FamilyCollector(self))

    def cell(self, *values: str) -> HistogramCell:
        cell = self._cells.get(values)
        if cell is None:
            if len(values) != len(self.labels):
                raise ValueError(f"{self.name} takes labels {self.labels}, got {values}")
            cell = self._cells[values] = HistogramCell(self.bounds)
        return cell

    def family(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labels)
        for values, cell in self._cells.items():
            family.add_metric(list(values), cumulative_buckets(cell.bounds, cell.counts), cell.sum)
        return family


def cumulative_buckets(bounds: Sequence[float], counts: Sequence[int]) -> list[tuple[str, float]]:
    """Prometheus buckets (`le`, cumulative count) from per-bucket counts whose last
    slot counts values above every bound."""
    out = []
    running = 0
    for bound, n in zip(bounds, counts, strict=False):
        running += n
        out.append((_le(bound), float(running)))
    running += counts[len(bounds)]
    out.append(("+Inf", float(running)))
    return out


def _le(bound: float) -> str:
    return str(int(bound)) + ".0" if float(bound).is_integer() else repr(float(bound))


class Snapshot:
    """A family read from live state when scraped: `read` yields (label values, value).

    `source` is replaced when the state it reads is replaced (a storage node opened
    again); with no source the family has no samples.
    """

    def __init__(
        self,
        name: str,
        doc: str,
        labels: Sequence[str],
        kind: str = "gauge",
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        check_name(name, kind)
        self.name = name
        self.doc = doc
        self.labels = tuple(labels)
        self.kind = kind
        self.read: Callable[[], Iterable[tuple[Sequence[str], float]]] | None = None
        if registry is not None:
            registry.register(_FamilyCollector(self))

    def family(self) -> Metric:
        family: GaugeMetricFamily | CounterMetricFamily
        if self.kind == "counter":
            family = CounterMetricFamily(self.name.removesuffix("_total"), self.doc, labels=self.labels)
        else:
            family = GaugeMetricFamily(self.name, self.doc, labels=self.labels)
        if self.read is not None:
            try:
                for values, value in self.read():
                    family.add_metric(list(values), value)
            except Exception:  # a broken figure must not take /metrics down with it
                log.exception("reading metric %s failed", self.name)
        return family


class _FamilyCollector(Collector):
    def __init__(self, owner: CounterCells | HistogramCells | Snapshot) -> None:
        self._owner = owner

    def describe(self) -> Iterable[Metric]:
        # Names only: registering must not read state that may not exist yet.
        owner = self._owner
        if isinstance(owner, HistogramCells):
            return [HistogramMetricFamily(owner.name, owner.doc, labels=owner.labels)]
        if isinstance(owner, CounterCells) or (isinstance(owner, Snapshot) and owner.kind == "counter"):
            return [CounterMetricFamily(owner.name.removesuffix("_total"), owner.doc, labels=owner.labels)]
        return [GaugeMetricFamily(owner.name, owner.doc, labels=owner.labels)]

    def collect(self) -> Iterable[Metric]:
        return [self._owner.family()]


# --- exposition -----------------------------------------------------------------------------


def exposition(registry: CollectorRegistry = REGISTRY) -> tuple[bytes, str]:
    """The registry in Prometheus' text format 0.0.4 (what generate_latest writes and
    every Prometheus server reads), and its Content-Type."""
    return generate_latest(registry), CONTENT_TYPE_PLAIN_0_0_4


def sample_names(registry: CollectorRegistry = REGISTRY) -> set[str]:
    """Every series name the registry exports now (with _total, _bucket, _sum...)."""
    return {sample.name for metric in registry.collect() for sample in metric.samples}


def family_names(registry: CollectorRegistry = REGISTRY) -> set[str]:
    """Every family the registry declares, whether or not it has samples yet, under
    every name PromQL may use for it."""
    names: set[str] = set()
    for metric in registry.collect():
        names.update(series_names(metric.name, metric.type))
    return names


def series_names(name: str, kind: str) -> Iterator[str]:
    if kind == "counter":
        yield name + "_total"
        yield name + "_created"
    elif kind == "histogram":
        yield from (name + "_bucket", name + "_sum", name + "_count", name + "_created")
    elif kind == "summary":
        yield from (name, name + "_sum", name + "_count")
    else:
        yield name


# A scrape request is one short GET; anything longer is not a scraper.
_MAX_REQUEST_HEAD = 8192
_READ_TIMEOUT_SECONDS = 5.0


async def serve_metrics(host: str, port: int, registry: CollectorRegistry = REGISTRY) -> asyncio.Server:
    """`GET /metrics` (the exposition) and `GET /` (a health line) over plain HTTP/1.1,
    one request per connection, on the event loop: the process has no other thread."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_SECONDS)
            status, content_type, body = metrics_http_answer(head, registry)
            writer.write(
                b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                % (status, content_type.encode(), len(body), body)
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port, limit=_MAX_REQUEST_HEAD, reuse_address=True)


def metrics_http_answer(head: bytes, registry: CollectorRegistry = REGISTRY) -> tuple[bytes, str, bytes]:
    """(status line tail, content type, body) for one request head: pure, for tests."""
    line = head.split(b"\r\n", 1)[0].split(b" ")
    if len(line) != 3 or line[0] != b"GET":
        return b"405 Method Not Allowed", "text/plain", b"GET /metrics\n"
    path = line[1].split(b"?", 1)[0]
    if path == b"/metrics":
        body, content_type = exposition(registry)
        return b"200 OK", content_type, body
    if path == b"/":
        return b"200 OK", "text/plain", b"ok\n"
    return b"404 Not Found", "text/plain", b"not found: metrics are at /metrics\n"
