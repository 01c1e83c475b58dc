"""Master election for a node of the Doorman tree, behind a small interface.

`run(on_change)` campaigns until cancelled and calls `on_change(is_master, master)`
whenever the outcome or the known master changes; `resign()` steps down so a standby
takes over at once. `EtcdElection` is the real one (a key created in a transaction on
its create revision, attached to a lease kept alive while we lead);
`InMemoryElection` serves tests and single-process setups.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("partita.doorman.election")

OnChange = Callable[[bool, "str | None"], None]

ELECTION_PREFIX = b"/partita/doorman/"
# Seconds a master's etcd lease lives without a keep-alive: the longest a dead
# master blocks its standby. Keep-alives go every third of it.
DEFAULT_TTL_SECONDS = 5
# How often a standby looks at the election key (the master's address, or free?).
DEFAULT_POLL_SECONDS = 0.25


class Election(Protocol):
    address: str  # what the winner announces; "" lets DoormanServer.start fill it in

    async def run(self, on_change: OnChange) -> None: ...
    async def resign(self) -> None: ...


class _Reporter:
    """Calls on_change only when (is_master, master) changes."""

    def __init__(self, on_change: OnChange) -> None:
        self._on_change = on_change
        self._last: tuple[bool, str | None] | None = None

    def __call__(self, is_master: bool, master: str | None) -> None:
        if self._last != (is_master, master):
            self._last = (is_master, master)
            self._on_change(is_master, master)


# --- in memory ----------------------------------------------------------------------


class InMemoryLock:
    """The election's shared state, for candidates living in one process."""

    def __init__(self) -> None:
        self.holder: str | None = None
        self._changed = asyncio.Event()

    def set(self, holder: str | None) -> None:
        self.holder = holder
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self) -> None:
        await self._changed.wait()


class InMemoryElection:
    def __init__(self, lock: InMemoryLock, address: str) -> None:
        self.lock = lock
        self.address = address
        self._running = False

    async def run(self, on_change: OnChange) -> None:
        report = _Reporter(on_change)
        self._running = True
        try:
            while True:
                if self.lock.holder is None:
                    self.lock.set(self.address)
                report(self.lock.holder == self.address, self.lock.holder)
                await self.lock.changed()
        finally:
            self._running = False
            if self.lock.holder == self.address:
                self.lock.set(None)

    async def resign(self) -> None:
        if self.lock.holder == self.address:
            self.lock.set(None)


# --- etcd ---------------------------------------------------------------------------


class EtcdElection:
    def __init__(
        self,
        host: str,
        port: int,
        name: str,
        address: str,
        *,
        ttl: int = DEFAULT_TTL_SECONDS,
        poll: float = DEFAULT_POLL_SECONDS,
    ) -> None:
        self.host, self.port = host, port
        self.key = ELECTION_PREFIX + name.encode() + b"/master"
        self.address = address
        self.ttl = ttl
        self.poll = poll
        self._client: Any = None
        self._lease: Any = None

    async def _connect(self) -> Any:
        import aetcd

        if self._client is None:
            self._client = aetcd.Client(host=self.host, port=self.port, timeout=max(1.0, self.ttl / 3))
        return self._client

    async def run(self, on_change: OnChange) -> None:
        report = _Reporter(on_change)
        try:
            while True:
                try:
                    await self._campaign(report)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    # Not leading (a leader steps down before its lease can lapse);
                    # keep redirecting to the last master we knew and try again.
                    log.warning("election via etcd %s:%s failed: %s", self.host, self.port, exc)
                    await asyncio.sleep(self.poll * 4)
        finally:
            await self._close()

    async def _campaign(self, report: _Reporter) -> None:
        client = await self._connect()
        current = await client.get(self.key)
        if current is not None:  # someone leads: follow it, look again soon
            report(False, current.value.decode())
            await asyncio.sleep(self.poll)
            return
        tx = client.transactions
        lease = await client.lease(self.ttl)
        # Only the candidate that creates the key leads (create revision 0: no key).
        won, _ = await client.transaction(
            compare=[tx.create(self.key) == 0],
            success=[tx.put(self.key, self.address.encode(), lease)],
            failure=[],
        )
        if not won:
            await client.revoke_lease(lease.id)
            return
        self._lease = lease
        log.info("%s won the election for %s", self.address, self.key.decode())
        report(True, self.address)
        await self._lead(client, lease)  # cancelled: run() resigns with self._lease
        self._lease = None
        log.warning("%s lost the election for %s", self.address, self.key.decode())
        report(False, None)

    async def _lead(self, client: Any, lease: Any) -> None:
        """Keeps the lease alive; returns once leadership may have passed on.

        etcd expires the key `ttl` seconds after the last keep-alive it saw; we step
        down when two thirds of that passed without a confirmed keep-alive, so we stop
        answering as master before a standby can win.
        """
        confirmed = time.monotonic()
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                reply = await asyncio.wait_for(client.refresh_lease(lease.id), self.ttl / 3)
                if reply is None or reply.TTL <= 0:
                    return
                current = await asyncio.wait_for(client.get(self.key), self.ttl / 3)
                if current is None or current.lease != lease.id:
                    return
                confirmed = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("keep-alive of the election lease failed: %s", exc)
                if time.monotonic() - confirmed >= self.ttl * 2 / 3:
                    return

    async def resign(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None and self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.revoke_lease(lease.id)

    async def _close(self) -> None:
        await self.resign()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
