"""The Doorman server process: a thin asyncio shell around `ServerCore`.

It feeds the core the gRPC calls (grpc.aio), the election's outcomes, the parent's
answers (intermediate and leaf servers) and configuration reloads, each with the
wall-clock time (leases carry absolute expiry times), and exports metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from partita._proto import doorman_pb2 as pb
from partita._proto import doorman_pb2_grpc
from partita.doorman.config_source import ConfigSource
from partita.doorman.connection import Connection, Unavailable
from partita.doorman.core import InvalidRequest, ServerCore
from partita.doorman.election import Election
from partita.doorman.metrics import DoormanMetrics
from partita.doorman.repository import ConfigError, ResourceRepository

log = logging.getLogger("partita.doorman")

# How often the configuration (file or etcd key) is checked for changes (seconds).
CONFIG_POLL_SECONDS = 2.0


class _Servicer(doorman_pb2_grpc.CapacityServicer):
    def __init__(self, core: ServerCore, clock: Callable[[], float], metrics: DoormanMetrics) -> None:
        self.core = core
        self.clock = clock
        self.metrics = metrics

    async def _answer(self, method: str, context: Any, run: Callable[[], Any]) -> Any:
        try:
            out = run()
        except InvalidRequest as exc:
            self.metrics.rpcs.labels(method, "invalid").inc()
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        result = "redirect" if method != "Discovery" and out.HasField("mastership") else "ok"
        self.metrics.rpcs.labels(method, result).inc()
        return out

    async def Discovery(self, request: pb.DiscoveryRequest, context: Any) -> Any:
        return await self._answer("Discovery", context, self.core.discovery)

    async def GetCapacity(self, request: pb.GetCapacityRequest, context: Any) -> Any:
        return await self._answer(
            "GetCapacity", context, lambda: self.core.get_capacity(request, self.clock())
        )

    async def GetServerCapacity(self, request: pb.GetServerCapacityRequest, context: Any) -> Any:
        return await self._answer(
            "GetServerCapacity", context, lambda: self.core.get_server_capacity(request, self.clock())
        )

    async def ReleaseCapacity(self, request: pb.ReleaseCapacityRequest, context: Any) -> Any:
        return await self._answer("ReleaseCapacity", context, lambda: self.core.release_capacity(request))


class DoormanServer:
    def __init__(
        self,
        core: ServerCore,
        election: Election,
        *,
        parent: list[str] | None = None,
        config: ConfigSource | None = None,
        clock: Callable[[], float] = time.time,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.core = core
        self.election = election
        self.parent = Connection(parent) if parent else None
        self.config = config
        self.clock = clock
        self.metrics = DoormanMetrics(lambda: core.status(clock()), registry)
        self._server: grpc.aio.Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._config_version: int | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        self._server = grpc.aio.server()
        servicer = _Servicer(self.core, self.clock, self.metrics)
        doorman_pb2_grpc.add_CapacityServicer_to_server(servicer, self._server)  # type: ignore[no-untyped-call]
        bound = self._server.add_insecure_port(f"{host}:{port}")
        await self._server.start()
        self.port = int(bound)
        if not self.election.address:
            self.election.address = f"{host}:{self.port}"
        self._tasks.append(asyncio.create_task(self.election.run(self._on_election)))
        if self.parent is not None:
            self._tasks.append(asyncio.create_task(self._ask_parent()))
        if self.config is not None:
            self._tasks.append(asyncio.create_task(self._watch_config()))
        return self.port

    def _on_election(self, is_master: bool, master: str | None) -> None:
        was = self.core.is_master
        self.core.on_election(is_master, master, self.clock())
        if was != is_master:
            self.metrics.master_changes.inc()
            log.info("%s: %s (master: %s)", self.core.server_id, "master" if is_master else "standby", master)

    async def _ask_parent(self) -> None:
        assert self.parent is not None
        while True:
            request = self.core.upstream_request(self.clock())
            wait = 1.0
            if request is not None and request.resource:
                try:
                    response = await self.parent.call("GetServerCapacity", request)
                    wait = self.core.apply_upstream(response, self.clock())
                except (Unavailable, grpc.aio.AioRpcError) as exc:
                    wait = self.core.upstream_failed()
                    log.warning("GetServerCapacity from the parent failed (%s); next try in %.0fs", exc, wait)
            await asyncio.sleep(wait)

    async def reload_config(self) -> bool:
        """Loads the configuration again if it changed; True if a new one is in force.
        A configuration that fails validation (or vanished) leaves the old one."""
        assert self.config is not None
        try:
            found = await self.config.read()
        except Exception as exc:
            log.warning("cannot read the configuration from %s: %s", self.config.describe(), exc)
            return False
        if found is None or found[0] == self._config_version:
            return False
        version, text = found
        self._config_version = version
        try:
            repository = ResourceRepository.from_text(text)
        except ConfigError as exc:
            log.error(
                "configuration in %s refused, keeping the previous one: %s", self.config.describe(), exc
            )
            return False
        self.core.load_repository(repository)
        log.info("configuration from %s loaded", self.config.describe())
        return True

    async def _watch_config(self) -> None:
        while True:
            await self.reload_config()
            await asyncio.sleep(CONFIG_POLL_SECONDS)

    async def stop(self, grace: float = 1.0) -> None:
        """Stops campaigning (which resigns: the standby takes over without waiting
        for the election lease to lapse), then stops serving."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.election.resign()
        if self._server is not None:
            await self._server.stop(grace)
        if self.parent is not None:
            await self.parent.close()
        if self.config is not None:
            await self.config.close()
