"""The collector's settings for serving: rarer young collections at once, the start's
survivors frozen later (out of the collector's sight, still freed by refcounting)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from partita.common import gc_policy


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


async def test_serving_makes_young_collections_rarer_and_freezes_the_survivors_later(
    restored_collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc_policy, "FREEZE_AFTER_SECONDS", 0.05)
    _, older, oldest = gc.get_threshold()
    gc.unfreeze()
    survivor = [object()]  # tracked by the collector: a list
    gc_policy.tune_for_serving(asyncio.get_running_loop())
    assert gc.get_threshold() == (gc_policy.YOUNG_THRESHOLD, older, oldest)
    assert gc.get_freeze_count() == 0  # not yet: the start is not over
    await asyncio.sleep(0.2)
    assert gc.get_freeze_count() > 0
    assert not any(obj is survivor for obj in gc.get_objects())  # frozen: out of sight
    assert gc.is_tracked(survivor)


def test_frozen_objects_are_still_freed_by_reference_counting(restored_collector: None) -> None:
    class Held:
        freed = False

        def __del__(self) -> None:
            Held.freed = True

    held = [Held()]
    gc_policy.freeze_survivors()
    del held
    assert Held.freed


def test_the_services_main_coroutines_run_with_it(restored_collector: None) -> None:
    from partita.cli.main import _run_loop

    seen: list[tuple[int, int, int]] = []

    async def service() -> None:
        seen.append(gc.get_threshold())

    _run_loop(service())  # how `partita storage`, `router` and `doorman` run
    assert seen and seen[0][0] == gc_policy.YOUNG_THRESHOLD
