"""Doorman's Prometheus metrics, and a small asyncio /metrics endpoint.

Self-contained on purpose (a registry per server, no process globals) so it can move
onto the common metrics module. Per-resource figures are read from the core at scrape
time, so they are never stale and cost nothing between scrapes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from partita.doorman.core import ServerStatus

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _ResourceCollector(Collector):
    def __init__(self, status: Callable[[], ServerStatus]) -> None:
        self._status = status

    def collect(self) -> Iterator[GaugeMetricFamily]:
        status = self._status()
        families = {
            "has": GaugeMetricFamily(
                "doorman_server_has", "Capacity leased to clients.", labels=["resource"]
            ),
            "wants": GaugeMetricFamily(
                "doorman_server_wants", "Capacity clients ask for.", labels=["resource"]
            ),
            "capacity": GaugeMetricFamily(
                "doorman_server_capacity", "Capacity this server can lease.", labels=["resource"]
            ),
            "clients": GaugeMetricFamily(
                "doorman_server_clients", "Clients (subclients counted) holding a lease.", labels=["resource"]
            ),
            "learning": GaugeMetricFamily(
                "doorman_server_learning_mode",
                "1 while the resource is in learning mode.",
                labels=["resource"],
            ),
        }
        for r in status.resources:
            families["has"].add_metric([r.resource_id], r.sum_has)
            families["wants"].add_metric([r.resource_id], r.sum_wants)
            families["capacity"].add_metric([r.resource_id], r.capacity)
            families["clients"].add_metric([r.resource_id], r.clients)
            families["learning"].add_metric([r.resource_id], 1.0 if r.learning else 0.0)
        yield from families.values()
        master = GaugeMetricFamily("doorman_server_is_master", "1 while this server is the master.")
        master.add_metric([], 1.0 if status.is_master else 0.0)
        yield master


class DoormanMetrics:
    def __init__(self, status: Callable[[], ServerStatus]) -> None:
        self.registry = CollectorRegistry()
        self.rpcs = Counter(
            "doorman_server_requests",
            "RPCs answered, by method and result (ok, redirect, invalid).",
            ["method", "result"],
            registry=self.registry,
        )
        self.master_changes = Counter(
            "doorman_server_master_changes",
            "Times this server won or lost mastership.",
            registry=self.registry,
        )
        self.registry.register(_ResourceCollector(status))

    def render(self) -> bytes:
        return generate_latest(self.registry)


async def serve_metrics(host: str, port: int, render: Callable[[], bytes]) -> asyncio.Server:
    """GET /metrics (anything else: 404), one short response per connection."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass  # headers: ignored, bounded by the timeout and StreamReader's limit
            parts = line.split()
            if len(parts) >= 2 and parts[0] == b"GET" and parts[1].split(b"?")[0] == b"/metrics":
                body, status = render(), b"200 OK"
            else:
                body, status = b"not found\n", b"404 Not Found"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: " + CONTENT_TYPE.encode() + b"\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
            )
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await asyncio.start_server(handle, host, port)
