"""Wants estimated from use (partita.doorman.wants): table-driven, in virtual time."""

from __future__ import annotations

import math

import pytest

from partita.doorman.wants import DemandEstimator

# Each window: (seconds, units recorded, refused?, grant at the refresh) -> wants.
Window = tuple[float, float, bool, float, float]

CASES: dict[str, tuple[dict[str, float], list[Window]]] = {
    "a new client asks for its initial wants before any window closes": (
        {"initial": 100.0},
        [(0.1, 3.0, False, 0.0, 100.0)],
    ),
    "a steady demand is asked for with 25% headroom": (
        {"initial": 0.0},
        [(1.0, 40.0, False, 50.0, 50.0), (1.0, 40.0, False, 50.0, 50.0), (5.0, 200.0, False, 50.0, 50.0)],
    ),
    "a rise is asked for at once": (
        {"initial": 0.0},
        [(1.0, 8.0, False, 10.0, 10.0), (1.0, 80.0, False, 100.0, 100.0)],
    ),
    "a fall decays by half per half-life, not at once": (
        {"initial": 0.0, "half_life": 10.0},
        [(1.0, 80.0, False, 100.0, 100.0), (10.0, 0.0, False, 100.0, 50.0), (10.0, 0.0, False, 50.0, 25.0)],
    ),
    "an idle client stays at its floor": (
        {"initial": 100.0, "floor": 5.0, "half_life": 1.0},
        [(60.0, 0.0, False, 100.0, 5.0), (60.0, 0.0, False, 5.0, 5.0)],
    ),
    "a refused demand asks for twice the grant": (
        {"initial": 0.0},
        [(1.0, 4.0, True, 4.0, 8.0), (1.0, 8.0, True, 8.0, 16.0)],
    ),
    "a refused demand above twice the grant asks for the demand": (
        {"initial": 0.0},
        [(1.0, 100.0, True, 10.0, 125.0)],
    ),
    "wants stop at the ceiling": (
        {"initial": 0.0, "ceiling": 30.0},
        [(1.0, 100.0, True, 25.0, 30.0)],
    ),
    "the initial wants count as a demand already seen, decaying when idle": (
        {"initial": 100.0, "half_life": 30.0},
        [(30.0, 0.0, False, 100.0, 50.0)],
    ),
    "a window under half a second stays open (no rate from one request)": (
        {"initial": 0.0},
        [(0.01, 1.0, False, 0.0, 0.0), (0.99, 39.0, False, 0.0, 50.0)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_wants_follow_the_recorded_demand(name: str) -> None:
    options, windows = CASES[name]
    initial = options.pop("initial")
    estimator = DemandEstimator(
        0.0,
        initial,
        floor=options.get("floor", 0.0),
        ceiling=options.get("ceiling", math.inf),
        half_life=options.get("half_life", 30.0),
    )
    options["initial"] = initial  # the table is shared by the parametrized runs
    now = 0.0
    for i, (seconds, units, refused, granted, expected) in enumerate(windows):
        now += seconds
        estimator.record(units, refused)
        assert estimator.wants(now, granted) == pytest.approx(expected), f"window {i}"


def test_a_busy_client_takes_an_idle_ones_share_under_fair_share() -> None:
    """Two routers on 100 units, one idle, one offered 300/s: after a few refreshes the
    busy one wants (and FAIR_SHARE grants it) nearly everything."""
    from partita.doorman.algorithms import water_level

    busy = DemandEstimator(0.0, 100.0, floor=5.0, half_life=30.0)
    idle = DemandEstimator(0.0, 100.0, floor=5.0, half_life=30.0)
    grants = [50.0, 50.0]
    now = 0.0
    for _ in range(40):  # 40 refreshes of 5 s
        now += 5.0
        busy.record(300.0 * 5, refused=True)
        wants = [busy.wants(now, grants[0]), idle.wants(now, grants[1])]
        level = water_level(100.0, [(w, 1) for w in wants])
        grants = [min(w, level) for w in wants]
        assert sum(grants) <= 100.0 + 1e-9
    assert grants[1] == 5.0 and grants[0] == pytest.approx(95.0)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        DemandEstimator(0.0, 1.0, half_life=0.0)
    with pytest.raises(ValueError):
        DemandEstimator(0.0, 1.0, headroom=0.5)
