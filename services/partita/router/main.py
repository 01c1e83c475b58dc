"""`partita router`: the DynamoDB HTTP endpoint as a process."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from partita.control.kubernetes import KubernetesRouteSource, KubernetesTableCatalog
from partita.control.store import EtcdControlStore, RouteSource, TableCatalog
from partita.router import metrics
from partita.router.admission import Admission, ProvisionedRate, RateSource
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.copy_jobs import CLAIM_SECONDS, CopyJobs
from partita.router.credentials import CredentialStore
from partita.router.http_server import Connections, start_http_server
from partita.router.storage_client import DataChannel, StorageClient
from partita.router.table_cache import TableCache
from partita.router.tls import TlsFiles, reload_when_renewed, server_context
from partita.router.transaction_sweeper import sweep_transactions

if TYPE_CHECKING:
    from partita.doorman.client import Client as DoormanClient

log = logging.getLogger(__name__)
# A stopping router answers what its connections already asked for, this long at most.
FINISH_SECONDS = 5.0


def watch_tables(tables: TableCache) -> None:
    """Point the table gauges at this router's cache (read when scraped)."""

    def statuses() -> list[tuple[tuple[str], float]]:
        counts: dict[str, int] = {}
        for cached in tables.tables.values():
            counts[cached.record.status] = counts.get(cached.record.status, 0) + 1
        return [((status,), float(n)) for status, n in counts.items()]

    metrics.TABLES.read = statuses
    metrics.PLACED_REPLICAS.read = lambda: [
        ((c.record.name,), float(sum(len(p.replicas) for p in c.record.partitions)))
        for c in tables.tables.values()
        if c.record.status != "DELETING"
    ]
    metrics.PROVISIONED.read = lambda: metrics.provisioned(
        [(c.record.name, c.record.read_capacity, c.record.write_capacity) for c in tables.tables.values()]
    )


def control_store(
    kind: str, etcd_host: str, etcd_port: int, namespace: str | None
) -> tuple[TableCatalog, RouteSource, EtcdControlStore]:
    """The catalog the router writes and the routes it reads: etcd (the local cluster),
    or in Kubernetes the Table and Partition resources (nodes and statistics from etcd,
    where storage nodes register); and the transaction ledger, in etcd either way."""
    store = EtcdControlStore(etcd_host, etcd_port)
    if kind == "etcd":
        return store, store, store
    catalog = KubernetesTableCatalog.in_cluster(namespace)
    return catalog, KubernetesRouteSource(catalog, store), store


@dataclass
class RunningRouter:
    """A router started in this process: `close` stops taking connections, answers what
    the open ones asked and closes them, and releases its leases."""

    server: asyncio.AbstractServer
    connections: Connections
    storage: StorageClient
    refresher: asyncio.Task[None]
    routes: RouteSource
    doorman_client: DoormanClient | None
    sweeper: asyncio.Task[None] | None = None
    tls_reloader: asyncio.Task[None] | None = None
    copy_jobs: CopyJobs | None = None
    copy_sweeper: asyncio.Task[None] | None = None

    async def close(self) -> None:
        for address, requests, batches in self.storage.batching():
            log.info("data path to %s: %d requests in %d batches", address, requests, batches)
        self.server.close()
        await self.connections.finish(FINISH_SECONDS)
        self.refresher.cancel()
        for task in (self.sweeper, self.tls_reloader, self.copy_sweeper):
            if task is not None:
                task.cancel()
        if self.copy_jobs is not None:
            await self.copy_jobs.close()
        await self.storage.close()
        if self.doorman_client is not None:
            await self.doorman_client.close()  # releases this router's leases at once
        await self.routes.close()
        log.info("router stopped")


async def start(
    *,
    host: str,
    port: int,
    etcd_host: str,
    etcd_port: int,
    data_dir: Path,
    settings: RouterSettings,
    store_kind: str = "etcd",
    namespace: str | None = None,
    admission: str = "off",
    doorman: list[str] | None = None,
    local: Mapping[str, DataChannel] | None = None,
    reuse_port: bool = False,
    tls: TlsFiles | None = None,
    copy_claim_seconds: float = CLAIM_SECONDS,
) -> RunningRouter:
    """`local`: in-process data channels by storage node data address (a router in a
    storage node's process); `reuse_port`: share the port with the other processes
    serving it (SO_REUSEPORT: the kernel spreads connections over them); `tls`: serve
    HTTPS with this certificate (reloaded when renewed)."""
    # A certificate that cannot be used stops the router before anything starts.
    context = server_context(tls) if tls is not None else None
    catalog, routes, ledger = control_store(store_kind, etcd_host, etcd_port, namespace)
    tables = TableCache(routes)
    watch_tables(tables)
    await tables.refresh()
    refresher = asyncio.create_task(tables.run())
    storage = StorageClient(local)
    ctx = RouterContext(tables, catalog, storage, settings)
    ctx.ledger = ledger
    ctx.imports = ledger
    sweeper = asyncio.create_task(sweep_transactions(ctx, ledger))
    # Backups' and restores' copies: this router's own, and those a dead router left.
    ctx.copy_jobs = CopyJobs(
        ctx, f"router-{socket.gethostname()}:{port}:{os.getpid()}", claim_seconds=copy_claim_seconds
    )
    copy_sweeper = asyncio.create_task(ctx.copy_jobs.run())
    doorman_client: DoormanClient | None = None
    source: RateSource = ProvisionedRate()
    if admission == "doorman":
        if not doorman:
            raise SystemExit("--admission doorman needs --doorman host:port,...")
        from partita.doorman.client import Client
        from partita.router.doorman_rate import DoormanRate

        # Routers sharing a port are told apart by their process; a lone router keeps its
        # name across restarts, and so its leases.
        name = f"router-{socket.gethostname()}:{port}" + (f":{os.getpid()}" if reuse_port else "")
        doorman_client = Client(doorman, name)
        doorman_client.start()
        source = DoormanRate(doorman_client)
    admitter = Admission(source, table_arn=ctx.table_arn, start_full=True) if admission != "off" else None
    app = DynamoApp(ctx, CredentialStore.from_data_dir(data_dir), admitter)
    connections = Connections()
    server = await start_http_server(
        app, host, port, reuse_port=reuse_port, connections=connections, tls=context
    )
    scheme = "https" if context is not None else "http"
    log.info("router serving DynamoDB on %s://%s:%d (metrics: /metrics)", scheme, host, port)
    reloader = None
    if tls is not None and context is not None:
        reloader = asyncio.create_task(reload_when_renewed(context, tls))
    return RunningRouter(
        server,
        connections,
        storage,
        refresher,
        routes,
        doorman_client,
        sweeper,
        reloader,
        ctx.copy_jobs,
        copy_sweeper,
    )


async def serve(starting: Awaitable[RunningRouter]) -> None:
    """`partita router`: the router `start` starts, until SIGINT or SIGTERM."""
    router = await starting
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await router.close()
