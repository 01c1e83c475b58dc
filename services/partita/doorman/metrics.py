"""Doorman's Prometheus metrics, on the common metrics module.

A process serving one Doorman passes the process registry (`partita.common.metrics.
REGISTRY`, served by `serve_metrics` with the process figures); tests that run several
servers in one process give each a registry of its own. Per-resource figures are read
from the core at scrape time, so they are never stale and cost nothing between scrapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from partita.common import metrics
from partita.doorman.core import ServerStatus

PER_RESOURCE = {
    "has": ("partita_doorman_has", "Capacity leased to clients."),
    "wants": ("partita_doorman_wants", "Capacity clients ask for."),
    "capacity": ("partita_doorman_capacity", "Capacity this server can lease."),
    "clients": ("partita_doorman_clients", "Clients (subclients counted) holding a lease."),
    "learning": ("partita_doorman_learning_mode", "1 while the resource is in learning mode."),
}
IS_MASTER = "partita_doorman_is_master"


class _ResourceCollector(Collector):
    def __init__(self, status: Callable[[], ServerStatus]) -> None:
        self._status = status

    def collect(self) -> Iterator[GaugeMetricFamily]:
        status = self._status()
        families = {
            key: GaugeMetricFamily(name, doc, labels=["resource"])
            for key, (name, doc) in PER_RESOURCE.items()
        }
        for r in status.resources:
            families["has"].add_metric([r.resource_id], r.sum_has)
            families["wants"].add_metric([r.resource_id], r.sum_wants)
            families["capacity"].add_metric([r.resource_id], r.capacity)
            families["clients"].add_metric([r.resource_id], r.clients)
            families["learning"].add_metric([r.resource_id], 1.0 if r.learning else 0.0)
        yield from families.values()
        master = GaugeMetricFamily(IS_MASTER, "1 while this server is the master.")
        master.add_metric([], 1.0 if status.is_master else 0.0)
        yield master


class DoormanMetrics:
    def __init__(self, status: Callable[[], ServerStatus], registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.rpcs: Counter = metrics.counter(
            "partita_doorman_requests_total",
            "RPCs answered, by method and result (ok, redirect, invalid).",
            ("method", "result"),
            registry=self.registry,
        )
        self.master_changes: Counter = metrics.counter(
            "partita_doorman_master_changes_total",
            "Times this server won or lost mastership.",
            registry=self.registry,
        )
        self.registry.register(_ResourceCollector(status))

    def render(self) -> bytes:
        return generate_latest(self.registry)
