"""Seed 002's convergence scenarios in virtual time, with the real server core
(bench/doorman_sim.py; `python -m bench.doorman_sim` writes the figures and plots to
docs/doorman.md). Targets from issue 6: better than the design document on every
figure, aiming for >= 98% allocated, peak allocation <= 103%, re-convergence < 1 min."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from bench.doorman_sim import SCENARIOS, Result, Simulation

RESULTS: dict[str, Result] = {}


def result(name: str) -> Result:
    if name not in RESULTS:
        RESULTS[name] = Simulation(next(c for c in SCENARIOS if c.name == name)).run()
    return RESULTS[name]


NAMES = [c.name for c in SCENARIOS]


@pytest.mark.parametrize("name", NAMES)
def test_allocates_at_least_98_percent_of_what_can_be_allocated(name: str) -> None:
    assert result(name).share_allocated() >= 0.98  # the document: 96.6% / 96.8%


@pytest.mark.parametrize("name", NAMES)
def test_grants_never_exceed_capacity_by_more_than_3_percent(name: str) -> None:
    r = result(name)
    _, peak, mean = r.shortfalls()
    assert peak <= 103.0  # the document: 106.05% peak
    assert mean <= 102.0  # the document: 102% mean during shortfalls
    assert all(a <= 1.03 * c for a, c in zip(r.allocated, r.capacity, strict=True))


@pytest.mark.parametrize("name", [n for n in NAMES if "tree" in n])
def test_re_converges_within_a_minute_after_every_demand_change_and_failover(name: str) -> None:
    r = result(name)
    changes = r.convergence()
    assert changes, "the scenario has events"
    for at, what, seconds in changes:
        assert math.isfinite(seconds) and seconds < 60, (at, what, seconds)  # the document: 2 minutes


def test_the_faulty_scenario_really_crashes_servers_including_learning_mode() -> None:
    r = result("tree of 45 clients, with faults")
    crashes = [what for _, what in r.events if what.endswith("crashed")]
    assert len(crashes) == 4 and any(w == "root crashed" for w in crashes)


def test_the_simulation_is_deterministic_for_a_seed() -> None:
    config = replace(SCENARIOS[0], duration=600)
    a, b = Simulation(config).run(), Simulation(config).run()
    assert a.allocated == b.allocated and a.events == b.events
    other = Simulation(replace(config, seed=2)).run()
    assert other.allocated != a.allocated
