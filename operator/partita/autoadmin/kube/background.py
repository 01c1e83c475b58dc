"""The operator's background tasks (the Doorman publisher, the membership watch, the
migration checks, the fleet's scale-down): started by handlers, each runs until
cancelled, and its last error, if any, is not the operator's stop's concern."""

from __future__ import annotations

import asyncio
import contextlib


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


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel `task` (if any) and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
