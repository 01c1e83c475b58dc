"""Stopping the operator's background tasks (the Doorman publisher, the membership
watch, the fleet's scale-down): each runs until cancelled, and its last error, if any,
is not the operator's stop's concern."""

from __future__ import annotations

import asyncio
import contextlib


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel `task` (if any) and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
