"""The operator's background tasks (the Doorman publisher, the membership watch, the
migration checks, the fleet's scale-down): started by handlers, each runs until
cancelled, and its last error, if any, is not the operator's stop's concern."""

from __future__ import annotations

import asyncio
import contextlib
import logging

log = logging.getLogger(__name__)


class StartedByHandlers:
    """A background loop that runs once a handler has started it: handlers run only on
    the acting peer, and in the loop the operator runs in. `_run` is the loop."""

    _task: asyncio.Task[None] | None = None

    def started(self) -> None:
        """Start the loop if it is not running (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)


class PassesInBackground(StartedByHandlers):
    """A background loop of passes: `pass_once`, then `wait`, for as long as the operator
    runs; a pass that fails (etcd or the API server unreachable) is logged and tried
    again after the wait."""

    # What a pass does, for the log line of a failed one ("<doing> failed").
    doing = "a background pass"

    async def pass_once(self) -> object:
        raise NotImplementedError

    async def wait(self) -> None:
        raise NotImplementedError

    async def _run(self) -> None:
        while True:
            try:
                await self.pass_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("%s failed (%s); retrying", self.doing, exc)
            await self.wait()


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel `task` (if any) and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
