"""The cyclic garbage collector's settings for the long-running services (storage
nodes, routers, Doorman servers).

Almost everything a request allocates is freed by reference counting; the cyclic
collector only finds the rare cycle. At Python's default (a young collection every 700
net allocations) the storage nodes under YCSB A spent 2.9-3.5% of their CPU in it
(5.0-5.7% beside a CPU-bound process; `perf`, docs/benchmarks.md round 11), walking
objects that live as long as the process. Young collections are made rarer, and what
the process holds once it has started (modules, the groups it hosts, its caches) is
moved out of the collector's sight, so the old generation's full passes no longer walk
it."""

from __future__ import annotations

import asyncio
import gc

# Net allocations between young collections (Python's default: 700).
YOUNG_THRESHOLD = 50_000
# Seconds after the start before the survivors are frozen: by then a node has opened
# its engine and hosts its groups.
FREEZE_AFTER_SECONDS = 30.0


def tune_for_serving(loop: asyncio.AbstractEventLoop) -> None:
    """Rarer young collections now; the start's survivors frozen a little later."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    loop.call_later(FREEZE_AFTER_SECONDS, freeze_survivors)


def freeze_survivors() -> None:
    """Collect once, then move every object left to the permanent generation: the
    collector never walks them again (they are still freed by reference counting)."""
    gc.collect()
    gc.freeze()
