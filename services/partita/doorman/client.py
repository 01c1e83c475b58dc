"""The Doorman client library: ask for capacity, keep within it.

    async with Client(["127.0.0.1:5101", "127.0.0.1:5102"]) as doorman:
        qps = doorman.rate("table/Music/wcu")
        while work:
            await qps.wait()          # at most the leased rate, evenly paced
            ...
        slots = doorman.gauge("mysql/transactions")
        async with slots:             # at most the leased number at once
            ...

`BlockingClient` offers the same for threads that cannot await. One refresh loop asks
for every resource in one GetCapacity call, at the shortest refresh interval the
server granted; a redirect (Mastership) is followed at once, anything else backs off
exponentially. Wants are what the caller set, or estimated from its use. If the lease
runs out while the server cannot be reached, the mode decides: PESSIMISTIC uses
nothing, OPTIMISTIC what it wants, SAFE the safe capacity the server last sent (seed
002, "乐观、悲观和安全模式"). Closing releases every lease (ReleaseCapacity).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from partita._proto import doorman_pb2 as pb
from partita.doorman import wants as wants_estimate
from partita.doorman.connection import Backoff, Connection, Unavailable
from partita.doorman.wants import DemandEstimator

log = logging.getLogger("partita.doorman.client")

DEFAULT_REFRESH_SECONDS = 1.0  # until a server says otherwise
# Estimated gauge wants: the peak of holders and waiters with this much headroom; when
# the caller was held back, ask for this much more than the grant, so a growing demand
# is seen. (Rates: partita.doorman.wants.)
HEADROOM = 1.25
PROBE_FACTOR = 2.0
# A rate resource with estimated wants asks for this much before it has been used.
INITIAL_RATE_WANTS = 1.0


class Mode(enum.Enum):
    PESSIMISTIC = "pessimistic"
    OPTIMISTIC = "optimistic"
    SAFE = "safe"


def default_client_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{id(object()):x}"


class _Usage:
    """What a gauge's caller did since the last refresh, to estimate its wants."""

    def __init__(self) -> None:
        self.blocked = False
        self.peak = 0  # most held or waiting at once

    def reset(self) -> None:
        self.blocked, self.peak = False, 0


class ResourceState:
    def __init__(
        self,
        resource_id: str,
        priority: int,
        wants: float | None,
        now: float,
        demand: DemandEstimator | None = None,
    ) -> None:
        self.resource_id = resource_id
        self.priority = priority
        self.wants = wants  # None: estimate from use
        # Rates with estimated wants: the caller's demand, recorded as it comes.
        self.demand = demand
        self.capacity = 0.0
        self.expiry = 0.0  # wall clock; 0: no lease
        self.refresh_interval = DEFAULT_REFRESH_SECONDS
        self.safe_capacity: float | None = None
        self.users = 0
        self.usage = _Usage()
        self.last_wants = 0.0
        self.changed = asyncio.Event()

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def estimated_wants(self, now: float) -> float:
        if self.wants is not None:
            return self.wants
        if self.demand is not None:
            return self.demand.wants(now, self.capacity)
        wants = self.usage.peak * HEADROOM
        if self.usage.blocked:
            wants = max(wants, self.capacity * PROBE_FACTOR, 1.0)
        return wants


class Client:
    def __init__(
        self,
        addresses: list[str] | str,
        client_id: str | None = None,
        *,
        mode: Mode = Mode.SAFE,
        clock: Callable[[], float] = time.time,
        backoff: Backoff | None = None,
    ) -> None:
        self.connection = Connection([addresses] if isinstance(addresses, str) else addresses)
        self.client_id = client_id or default_client_id()
        self.mode = mode
        self.clock = clock
        self.backoff = backoff or Backoff()
        self.resources: dict[str, ResourceState] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.reachable = True

    async def __aenter__(self) -> Client:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    # --- resources ---------------------------------------------------------------------

    def _state(
        self, resource_id: str, priority: int, wants: float | None, demand: DemandEstimator | None
    ) -> ResourceState:
        state = self.resources.get(resource_id)
        if state is None:
            state = ResourceState(resource_id, priority, wants, self.clock(), demand)
            self.resources[resource_id] = state
            self._wake.set()  # a new resource is asked for at once
        elif wants is not None:
            state.wants = wants
        state.users += 1
        return state

    def rate(
        self,
        resource_id: str,
        *,
        wants: float | None = None,
        priority: int = 1,
        initial_wants: float = INITIAL_RATE_WANTS,
        min_wants: float = 0.0,
        max_wants: float = math.inf,
        headroom: float = wants_estimate.HEADROOM,
        half_life: float = wants_estimate.HALF_LIFE_SECONDS,
    ) -> RateResource:
        """A rate; with no `wants`, wants are estimated from use (`RateResource.wait`,
        or `record` for callers that pace themselves; partita.doorman.wants), starting
        at `initial_wants`, kept within [`min_wants`, `max_wants`]."""
        demand = (
            None
            if wants is not None
            else DemandEstimator(
                self.clock(),
                initial_wants,
                floor=min_wants,
                ceiling=max_wants,
                headroom=headroom,
                half_life=half_life,
            )
        )
        return RateResource(self, self._state(resource_id, priority, wants, demand))

    def gauge(self, resource_id: str, *, wants: float | None = None, priority: int = 1) -> GaugeResource:
        return GaugeResource(self, self._state(resource_id, priority, wants, None))

    def capacity(self, state: ResourceState) -> float:
        """What the caller may use now: the lease while it lasts, else the mode's."""
        if state.expiry > self.clock():
            return state.capacity
        if self.mode is Mode.OPTIMISTIC:
            return state.last_wants
        if self.mode is Mode.SAFE and state.safe_capacity is not None:
            return state.safe_capacity
        return 0.0

    async def _forget(self, state: ResourceState) -> None:
        state.users -= 1
        if state.users <= 0 and self.resources.get(state.resource_id) is state:
            del self.resources[state.resource_id]
            await self._release([state.resource_id])

    # --- protocol ----------------------------------------------------------------------

    def _request(self, now: float) -> pb.GetCapacityRequest:
        request = pb.GetCapacityRequest(client_id=self.client_id)
        for rid, state in sorted(self.resources.items()):
            state.last_wants = state.estimated_wants(now)
            r = request.resource.add(resource_id=rid, priority=state.priority, wants=state.last_wants)
            if state.expiry > now:
                r.has.CopyFrom(
                    pb.Lease(
                        expiry_time=int(state.expiry),
                        refresh_interval=int(state.refresh_interval),
                        capacity=state.capacity,
                    )
                )
        return request

    async def refresh(self) -> float:
        """One GetCapacity round for every resource; returns seconds until the next."""
        if not self.resources:
            return DEFAULT_REFRESH_SECONDS
        now = self.clock()
        response = await self.connection.call("GetCapacity", self._request(now))
        for r in response.response:
            state = self.resources.get(r.resource_id)
            if state is None:
                continue
            state.capacity = r.gets.capacity
            state.expiry = float(r.gets.expiry_time)
            state.refresh_interval = max(1.0, float(r.gets.refresh_interval))
            if r.HasField("safe_capacity"):
                state.safe_capacity = r.safe_capacity
            state.usage.reset()
            state.notify()
        return (
            min(s.refresh_interval for s in self.resources.values())
            if self.resources
            else DEFAULT_REFRESH_SECONDS
        )

    async def _run(self) -> None:
        while True:
            try:
                wait = await self.refresh()
                self.backoff.succeeded()
                self.reachable = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Unavailable, or a server refusing our request
                wait = self.backoff.failed()
                self.reachable = False
                log.warning("Doorman unreachable (%s); retrying in %.0fs", exc, wait)
                for state in self.resources.values():
                    state.notify()  # a lapsed lease now falls back to the mode
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()

    async def _release(self, resource_ids: list[str]) -> None:
        if not resource_ids:
            return
        try:
            await self.connection.call(
                "ReleaseCapacity",
                pb.ReleaseCapacityRequest(client_id=self.client_id, resource_id=resource_ids),
            )
        except Exception as exc:  # the leases will expire on their own
            log.info("ReleaseCapacity failed (%s); the leases will expire", exc)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._release(sorted(self.resources))
        self.resources.clear()
        await self.connection.close()


class RateResource:
    """At most the leased rate (per second), paced evenly: the n-th call returns no
    sooner than n / rate seconds after the first (no burst beyond one call)."""

    def __init__(self, client: Client, state: ResourceState) -> None:
        self.client = client
        self.state = state
        self._next = 0.0

    @property
    def capacity(self) -> float:
        return self.client.capacity(self.state)

    def try_acquire(self) -> bool:
        now = time.monotonic()
        rate = self.capacity
        if rate <= 0 or self._next > now:
            return False
        self._next = max(self._next, now) + 1.0 / rate
        return True

    def record(self, units: float, refused: bool = False) -> None:
        """For callers that pace themselves: units asked for (refused or not), from
        which the wants are estimated."""
        if self.state.demand is not None:
            self.state.demand.record(units, refused)

    async def wait(self) -> None:
        first = True
        while not self.try_acquire():
            if first:
                self.record(1.0, refused=True)
                first = False
            rate = self.capacity
            delay = self._next - time.monotonic() if rate > 0 else DEFAULT_REFRESH_SECONDS
            changed = self.state.changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, min(delay, DEFAULT_REFRESH_SECONDS))):
                    await changed.wait()
        if first:
            self.record(1.0)

    async def close(self) -> None:
        await self.client._forget(self.state)


class GaugeResource:
    """At most the leased number of holders at once (`mark` ... `release`)."""

    def __init__(self, client: Client, state: ResourceState) -> None:
        self.client = client
        self.state = state
        self.in_use = 0
        self._waiting = 0

    @property
    def capacity(self) -> float:
        return self.client.capacity(self.state)

    async def mark(self) -> None:
        self._waiting += 1
        try:
            while self.in_use + 1 > self.capacity:
                self.state.usage.blocked = True
                self.state.usage.peak = max(self.state.usage.peak, self.in_use + self._waiting)
                changed = self.state.changed
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(DEFAULT_REFRESH_SECONDS):
                        await changed.wait()
        finally:
            self._waiting -= 1
        self.in_use += 1
        self.state.usage.peak = max(self.state.usage.peak, self.in_use + self._waiting)

    def release(self) -> None:
        if self.in_use <= 0:
            raise RuntimeError("release() without mark()")
        self.in_use -= 1
        self.state.notify()

    async def __aenter__(self) -> GaugeResource:
        await self.mark()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    async def close(self) -> None:
        await self.client._forget(self.state)


# --- blocking flavour ---------------------------------------------------------------


class BlockingClient:
    """The same client for threaded code: its event loop runs in a daemon thread."""

    def __init__(self, addresses: list[str] | str, client_id: str | None = None, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="doorman-client", daemon=True)
        self._thread.start()

        async def make() -> Client:
            client = Client(addresses, client_id, **options)
            client.start()
            return client

        self.client: Client = self._call(make())

    def _call(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def rate(
        self, resource_id: str, *, wants: float | None = None, priority: int = 1
    ) -> BlockingRateResource:
        async def make() -> RateResource:
            return self.client.rate(resource_id, wants=wants, priority=priority)

        return BlockingRateResource(self, self._call(make()))

    def gauge(
        self, resource_id: str, *, wants: float | None = None, priority: int = 1
    ) -> BlockingGaugeResource:
        async def make() -> GaugeResource:
            return self.client.gauge(resource_id, wants=wants, priority=priority)

        return BlockingGaugeResource(self, self._call(make()))

    def close(self) -> None:
        self._call(self.client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BlockingRateResource:
    def __init__(self, owner: BlockingClient, resource: RateResource) -> None:
        self._owner = owner
        self.resource = resource

    @property
    def capacity(self) -> float:
        return self.resource.capacity

    def wait(self) -> None:
        self._owner._call(self.resource.wait())


class BlockingGaugeResource:
    def __init__(self, owner: BlockingClient, resource: GaugeResource) -> None:
        self._owner = owner
        self.resource = resource

    def mark(self) -> None:
        self._owner._call(self.resource.mark())

    def release(self) -> None:
        async def release() -> None:
            self.resource.release()

        self._owner._call(release())

    def __enter__(self) -> BlockingGaugeResource:
        self.mark()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = [
    "BlockingClient",
    "Client",
    "GaugeResource",
    "Mode",
    "RateResource",
    "Unavailable",
]
