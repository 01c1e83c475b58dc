"""Publishing every Table's throughput as Doorman resources, on Kubernetes.

The local autoadmin writes the Doorman servers' file; on Kubernetes they share no
file with the operator, so the operator writes the same configuration to an etcd key
they read (`partita doorman --config-key`, with the chart's templates as `--config`
until the key exists). Level-based: each pass lists every Table in the namespace and
writes the whole configuration, so a missed event or an operator restart cannot leave
a table's resource behind or missing. Table handlers call `changed()`; passes run at
most once per `min_interval` however many tables change at once (a resync of 1,000
tables is one list, not 1,000), and a failed pass is retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from partita.autoadmin.doorman_config import DoormanConfigKey
from partita.autoadmin.kube.background import cancel_and_wait
from partita.control.model import TableSpec

log = logging.getLogger(__name__)


class TablesPublisher:
    def __init__(
        self,
        list_tables: Callable[[], Awaitable[list[TableSpec]]],
        sink: DoormanConfigKey,
        *,
        min_interval: float = 1.0,
        retry_seconds: float = 5.0,
    ) -> None:
        self.list_tables = list_tables
        self.sink = sink
        self.min_interval = min_interval
        self.retry_seconds = retry_seconds
        self._pending = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.passes = 0  # completed passes (tests wait on it)

    def changed(self) -> None:
        """A Table was created, changed or released: a pass follows soon."""
        self._pending.set()
        if self._task is None or self._task.done():
            # Started here, in the loop the handlers run in (only the active peer's).
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        # Alive only while passes are due: kopf waits for its loop's other tasks when
        # the operator stops, so an idle task waiting for work would hold the stop up.
        while self._pending.is_set():
            self._pending.clear()
            try:
                specs = await self.list_tables()
                if await self.sink.publish(specs):
                    log.info("Doorman resources of %d tables written to etcd %s", len(specs), self.sink.key)
                self.passes += 1
            except Exception as exc:  # the API server or etcd unreachable: try again
                log.warning("publishing the tables' Doorman resources failed (%s); retrying", exc)
                self._pending.set()
                await asyncio.sleep(self.retry_seconds)
                continue
            await asyncio.sleep(self.min_interval)

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self.sink.close()
