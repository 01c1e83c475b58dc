"""On-demand allowance (twice the previous peak, DynamoDB's initial peak as a floor) and
the sliding peak it is computed from, in virtual time."""

from __future__ import annotations

import pytest

from partita.common.throughput import ON_DEMAND_INITIAL_PEAK, PeakTracker, on_demand_allowance


@pytest.mark.parametrize(
    ("peak", "kind", "expected"),
    [
        (0.0, "write", 4000.0),  # a new table: 2 x 2,000 WCU at once
        (0.0, "read", 12000.0),  # 2 x 6,000 RCU
        (1500.0, "write", 4000.0),  # below the initial peak: the floor holds
        (5000.0, "write", 10000.0),  # grown: twice the peak
        (50000.0, "read", 100000.0),
    ],
)
def test_allowance_is_twice_the_previous_peak(peak: float, kind: str, expected: float) -> None:
    assert on_demand_allowance(peak, kind) == expected  # type: ignore[arg-type]


def test_a_warm_throughput_is_a_floor_of_the_allowance() -> None:
    assert on_demand_allowance(0.0, "write", (0, 9000)) == 9000.0  # admitted at once
    assert on_demand_allowance(0.0, "read", (0, 9000)) == 12000.0  # only writes were warmed
    assert on_demand_allowance(8000.0, "write", (0, 9000)) == 16000.0  # grown past it


def test_peak_is_the_busiest_whole_second() -> None:
    tracker = PeakTracker(0.0, 0.0)
    units = 0.0
    for second, rate in enumerate([10, 50, 20, 30]):
        units += rate
        tracker.observe(second + 1.0, units)
    assert tracker.peak(4.0, units) == 50.0


def test_a_second_under_way_does_not_count_yet() -> None:
    tracker = PeakTracker(0.0, 0.0)
    tracker.observe(1.0, 10.0)
    assert tracker.peak(1.5, 80.0) == 10.0
    assert tracker.peak(2.0, 80.0) == 70.0


def test_idle_seconds_average_over_the_gap() -> None:
    tracker = PeakTracker(0.0, 0.0)
    assert tracker.peak(10.0, 100.0) == 10.0  # 100 units over 10 s with no observation


def test_peaks_are_forgotten_after_the_memory() -> None:
    tracker = PeakTracker(0.0, 0.0, memory=60.0)
    tracker.observe(1.0, 500.0)  # 500/s in second 0
    units = 500.0
    for second in range(2, 100):
        units += 5
        tracker.observe(float(second), units)
    assert tracker.peak(99.0, units) == 5.0


def test_initial_peaks_are_dynamodbs() -> None:
    assert ON_DEMAND_INITIAL_PEAK == {"read": 6000.0, "write": 2000.0}
