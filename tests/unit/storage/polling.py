"""Waiting, in tests of in-process nodes, for a condition their event loop makes true."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

POLL_SECONDS = 0.025


async def wait_until(predicate: Callable[[], bool], seconds: float = 10.0) -> None:
    """Return once `predicate()` holds; fail after `seconds` (polls are bounded in count)."""
    for _ in range(round(seconds / POLL_SECONDS)):
        if predicate():
            return
        await asyncio.sleep(POLL_SECONDS)
    raise AssertionError(f"condition never became true within {seconds:g} s")
