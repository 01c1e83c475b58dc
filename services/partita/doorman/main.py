"""`partita doorman`: one Doorman server (root with a configuration file, or an
intermediate/leaf server with a parent), elected through etcd."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

from partita.doorman.core import ServerCore
from partita.doorman.election import (
    DEFAULT_TTL_SECONDS,
    Election,
    EtcdElection,
    InMemoryElection,
    InMemoryLock,
)
from partita.doorman.metrics import serve_metrics
from partita.doorman.repository import ResourceRepository
from partita.doorman.server import DoormanServer

log = logging.getLogger("partita.doorman")


async def serve(
    *,
    server_id: str,
    host: str,
    port: int,
    metrics_port: int | None,
    config_path: Path | None,
    parent: list[str] | None,
    etcd: tuple[str, int] | None,
    election_name: str,
    election_ttl: int = DEFAULT_TTL_SECONDS,
    advertise: str | None = None,
) -> None:
    if (config_path is None) == (parent is None):
        raise SystemExit("a Doorman server needs exactly one of --config (root) or --parent")
    repository = ResourceRepository.from_file(config_path) if config_path is not None else None
    address = advertise or f"{host}:{port}"
    election: Election
    if etcd is None:
        election = InMemoryElection(InMemoryLock(), address)  # alone: always the master
    else:
        election = EtcdElection(etcd[0], etcd[1], election_name, address, ttl=election_ttl)
    server = DoormanServer(
        ServerCore(server_id, repository), election, parent=parent, config_path=config_path
    )
    await server.start(host, port)
    metrics = await serve_metrics(host, metrics_port, server.metrics.render) if metrics_port else None
    log.info("doorman %s serving on %s (metrics: %s)", server_id, address, metrics_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    if metrics is not None:
        metrics.close()
    await server.stop()
