"""A storage node's load reports: each replica's rate over the window, from the data
plane's cumulative meters, published on an interval."""

from __future__ import annotations

import asyncio

import pytest

from partita.common import config
from partita.control.model import NodeLoad, ReplicaLoad
from partita.control.store import MemoryControlStore
from partita.storage import metrics
from partita.storage.load_report import LoadWindow, meter_counters, report_load


async def _until_a_report(store: MemoryControlStore, seconds: float) -> None:
    """Poll `store` until it holds a load report, for at most `seconds`."""
    for _ in range(round(seconds / 0.01)):
        if await store.list_node_loads():
            return
        await asyncio.sleep(0.01)


def test_the_first_look_only_starts_the_window() -> None:
    window = LoadWindow("n1", 3000.0, 1000.0)
    assert window.report({(1, "p0"): (100.0, 10.0)}, now=5.0, wall=1000.0) is None


def test_rates_are_the_counters_growth_over_the_window() -> None:
    window = LoadWindow("n1", 3000.0, 1000.0)
    window.report({(1, "p0"): (100.0, 10.0), (1, "p1"): (50.0, 0.0)}, now=5.0, wall=1000.0)
    load = window.report(
        {(1, "p0"): (300.0, 30.0), (1, "p1"): (50.0, 0.0), (2, "p0"): (40.0, 0.0)}, 15.0, 1010.0
    )
    # p1 consumed nothing in the window: left out; a replica new in the window counts all.
    assert load == NodeLoad(
        "n1", 1010.0, 10.0, 3000.0, 1000.0, (ReplicaLoad(1, "p0", 20.0, 2.0), ReplicaLoad(2, "p0", 4.0, 0.0))
    )
    assert load.utilisation() == pytest.approx(max(24.0 / 3000.0, 2.0 / 1000.0))


def test_a_meter_made_again_counts_from_zero() -> None:
    window = LoadWindow("n1", 3000.0, 1000.0)
    window.report({(1, "p0"): (500.0, 0.0)}, now=0.0, wall=0.0)
    load = window.report({(1, "p0"): (20.0, 0.0)}, now=2.0, wall=2.0)  # dropped and hosted anew
    assert load is not None and load.replicas == (ReplicaLoad(1, "p0", 10.0, 0.0),)


def test_the_meters_are_the_counters() -> None:
    meter = metrics.meter_of(777, "loaded", "p0")
    try:
        meter.read.value += 12.0
        meter.write.value += 3.0
        assert meter_counters()[(777, "p0")] == (12.0, 3.0)
    finally:
        metrics.forget_table(777, "loaded")


async def test_reports_are_published_every_interval() -> None:
    store = MemoryControlStore()
    counters = {(1, "p0"): [0.0, 0.0]}
    ticks = iter(range(1000))

    def counted() -> dict[tuple[int, str], tuple[float, float]]:
        counters[(1, "p0")][0] += 10.0
        return {k: (v[0], v[1]) for k, v in counters.items()}

    task = asyncio.create_task(
        report_load(
            LoadWindow("n1", 100.0, 100.0),
            store,
            0.01,
            counters=counted,
            clock=lambda: float(next(ticks)),
            wall_clock=lambda: 42.0,
        )
    )
    try:
        await _until_a_report(store, seconds=2.0)
    finally:
        task.cancel()
    [load] = await store.list_node_loads()
    # 10 units a look, one second of the fake clock between looks.
    assert load.node_id == "n1" and load.measured_at == 42.0
    assert load.replicas == (ReplicaLoad(1, "p0", 10.0, 0.0),)


async def test_a_store_that_fails_costs_one_report_not_the_loop() -> None:
    class Flaky(MemoryControlStore):
        failures = 2

        async def put_node_load(self, load: NodeLoad, ttl: int) -> None:
            if self.failures:
                self.failures -= 1
                raise ConnectionError("etcd is down")
            await super().put_node_load(load, ttl)

    store = Flaky()
    task = asyncio.create_task(report_load(LoadWindow("n1", 100.0, 100.0), store, 0.01))
    try:
        await _until_a_report(store, seconds=3.0)
    finally:
        task.cancel()
    assert store.failures == 0 and len(await store.list_node_loads()) == 1


@pytest.mark.parametrize("interval", [0.0, -1.0])
async def test_no_interval_means_no_reports(interval: float) -> None:
    looks = []

    def counted() -> dict[tuple[int, str], tuple[float, float]]:
        looks.append(1)
        return {(1, "p0"): (10.0 * len(looks), 0.0)}

    store = MemoryControlStore()
    # Bounded: an interval taken as a pause would loop until the timeout.
    await asyncio.wait_for(
        report_load(LoadWindow("n1", 100.0, 100.0), store, interval, counters=counted), timeout=1.0
    )
    assert looks == [] and await store.list_node_loads() == []


async def test_an_idle_node_writes_its_empty_report_again_only_every_so_many_intervals() -> None:
    # Every write moves etcd's revision and makes every process read its listings
    # again: an idle node writes once, then only every IDLE_LOAD_REPORT_INTERVALS.
    class Counting(MemoryControlStore):
        puts: list[NodeLoad] = []

        async def put_node_load(self, load: NodeLoad, ttl: int) -> None:
            self.puts.append(load)
            await super().put_node_load(load, ttl)

    store = Counting()
    store.puts = []
    busy = [True] * 3 + [False] * (config.IDLE_LOAD_REPORT_INTERVALS + 5)
    total = [0.0]
    looks = 0

    def counters() -> dict[tuple[int, str], tuple[float, float]]:
        nonlocal looks
        if looks and looks <= len(busy) and busy[looks - 1]:
            total[0] += 10.0
        looks += 1
        return {(1, "p0"): (total[0], 0.0)}

    ticks = iter(range(10_000))
    task = asyncio.create_task(
        report_load(
            LoadWindow("n1", 100.0, 100.0), store, 0.001, counters=counters, clock=lambda: float(next(ticks))
        )
    )
    try:
        for _ in range(500):  # bounded: 5 s
            if looks > len(busy):
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
    kinds = ["busy" if p.replicas else "idle" for p in store.puts]
    # Three busy reports, the first idle one, then one more idle after the interval count.
    assert kinds[:4] == ["busy", "busy", "busy", "idle"]
    assert kinds[4:] == ["idle"] and len(kinds) == 5
