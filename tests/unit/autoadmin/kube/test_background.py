"""Stopping a background task: cancelled and awaited, its own failure not raised."""

from __future__ import annotations

import asyncio

from partita.autoadmin.kube.background import cancel_and_wait


async def test_a_running_task_is_cancelled_and_ended_and_a_failed_one_does_not_raise() -> None:
    running = asyncio.get_running_loop().create_task(asyncio.sleep(3600))
    await cancel_and_wait(running)
    assert running.cancelled()

    async def fail() -> None:
        raise RuntimeError("etcd unreachable")

    failed = asyncio.get_running_loop().create_task(fail())
    await asyncio.sleep(0)
    await cancel_and_wait(failed)
    assert failed.done() and isinstance(failed.exception(), RuntimeError)
    await cancel_and_wait(None)
