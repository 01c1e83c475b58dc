"""`partita doorman`: one Doorman server (root with a configuration file, or an
intermediate/leaf server with a parent), elected through etcd."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

from partita.common import metrics as metrics_registry
from partita.doorman.config_source import ConfigSource, EtcdSource, FileSource, KeyOverFile
from partita.doorman.core import ServerCore
from partita.doorman.election import (
    DEFAULT_TTL_SECONDS,
    Election,
    EtcdElection,
    InMemoryElection,
    InMemoryLock,
)
from partita.doorman.repository import ConfigError, ResourceRepository
from partita.doorman.server import DoormanServer

log = logging.getLogger("partita.doorman")


async def initial_repository(source: ConfigSource) -> ResourceRepository:
    """A root server does not start without a valid configuration."""
    found = await source.read()
    if found is None:
        raise SystemExit(f"no Doorman configuration in {source.describe()}")
    try:
        return ResourceRepository.from_text(found[1])
    except ConfigError as exc:
        raise SystemExit(f"invalid Doorman configuration in {source.describe()}: {exc}") from exc


async def serve(
    *,
    server_id: str,
    host: str,
    port: int,
    metrics_port: int | None,
    config_path: Path | None,
    config_key: str | None = None,
    parent: list[str] | None,
    etcd: tuple[str, int] | None,
    election_name: str,
    election_ttl: int = DEFAULT_TTL_SECONDS,
    advertise: str | None = None,
) -> None:
    root = config_path is not None or config_key is not None
    if root == (parent is not None):
        raise SystemExit("a Doorman server needs --config and/or --config-key (root), or --parent")
    source: ConfigSource | None = None
    if config_key is not None:
        if etcd is None:
            raise SystemExit("--config-key needs --etcd")
        key = EtcdSource(etcd[0], etcd[1], config_key)
        source = key if config_path is None else KeyOverFile(key, FileSource(config_path))
    elif config_path is not None:
        source = FileSource(config_path)
    repository = await initial_repository(source) if source is not None else None
    address = advertise or f"{host}:{port}"
    election: Election
    if etcd is None:
        election = InMemoryElection(InMemoryLock(), address)  # alone: always the master
    else:
        election = EtcdElection(etcd[0], etcd[1], election_name, address, ttl=election_ttl)
    server = DoormanServer(
        ServerCore(server_id, repository),
        election,
        parent=parent,
        config=source,
        registry=metrics_registry.REGISTRY,
    )
    await server.start(host, port)
    metrics = await metrics_registry.serve_metrics(host, metrics_port) if metrics_port else None
    log.info("doorman %s serving on %s (metrics: %s)", server_id, address, metrics_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    if metrics is not None:
        metrics.close()
    await server.stop()
