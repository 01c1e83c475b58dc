"""Capacity math: DynamoDB's units and rounding, and the ConsumedCapacity shapes."""

from __future__ import annotations

import pytest

from partita.api import capacity


@pytest.mark.parametrize(
    ("size", "consistent", "units"),
    [
        (0, True, 1.0),  # a missing item still costs the minimum
        (0, False, 0.5),
        (1, True, 1.0),
        (4096, True, 1.0),
        (4097, True, 2.0),
        (4097, False, 1.0),
        (8193, False, 1.5),
        (400 * 1024, True, 100.0),
    ],
)
def test_reads_cost_started_4_kb_units_halved_when_eventually_consistent(
    size: int, consistent: bool, units: float
) -> None:
    assert capacity.read_units(size, consistent) == units


@pytest.mark.parametrize(
    ("old", "new", "units"),
    [(0, 0, 1.0), (0, 1024, 1.0), (0, 1025, 2.0), (2049, 10, 3.0), (10, 2049, 3.0), (400 * 1024, 0, 400.0)],
)
def test_writes_cost_started_1_kb_units_of_the_larger_item(old: int, new: int, units: float) -> None:
    assert capacity.write_units(old, new) == units


def test_a_range_read_rounds_the_total_once() -> None:
    # Ten items of 500 bytes: 5000 bytes, two units, not ten.
    assert capacity.range_read_units(10 * 500, True) == 2.0
    assert capacity.range_read_units(0, False) == 0.5


def test_consumed_capacity_shapes_follow_the_requested_mode() -> None:
    assert capacity.consumed("t", 1.5, "NONE") is None
    assert capacity.consumed("t", 1.5, None) is None
    assert capacity.consumed("t", 1.5, "TOTAL") == {"TableName": "t", "CapacityUnits": 1.5}
    assert capacity.consumed("t", 1.5, "INDEXES") == {
        "TableName": "t",
        "CapacityUnits": 1.5,
        "Table": {"CapacityUnits": 1.5},
    }


def test_batch_capacity_is_summed_per_table_in_first_seen_order() -> None:
    units = [("b", 1.0), ("a", 0.5), ("b", 2.0), ("a", 0.5)]
    assert capacity.consumed_per_table(units, "TOTAL") == [
        {"TableName": "b", "CapacityUnits": 3.0},
        {"TableName": "a", "CapacityUnits": 1.0},
    ]
    assert capacity.consumed_per_table(units, "NONE") is None
