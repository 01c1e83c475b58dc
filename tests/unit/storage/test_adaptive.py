"""Adaptive capacity's decision, table-driven (seed 000 section 4.1.2): a throttled
partition gains part of its table's headroom, bounded by the ceiling; boosts fade with
traffic and are cut when the table is over its rate; an allocation is never under the
partition's share and a boost never takes the table's partitions past the ceiling."""

from __future__ import annotations

import pytest

from partita.storage.adaptive import GAIN, PartitionLoad, allocations

L = PartitionLoad


@pytest.mark.parametrize(
    ("name", "table_rate", "ceiling", "loads", "expected"),
    [
        (
            "a throttled partition gains half the headroom",
            100.0,
            100.0,
            {"hot": L(50, 50, 50, True), "cold": L(50, 50, 10, False)},
            {"hot": 50 + GAIN * 40, "cold": 50},
        ),
        (
            "two throttled partitions split the headroom",
            100.0,
            100.0,
            {"a": L(25, 25, 25, True), "b": L(25, 25, 25, True), "c": L(50, 50, 10, False)},
            {"a": 25 + GAIN * 20, "b": 25 + GAIN * 20, "c": 50},
        ),
        (
            "a boost stops at the ceiling (the node's capacity here)",
            1000.0,
            120.0,
            {"hot": L(100, 110, 110, True), "cold": L(900, 900, 0, False)},
            {"hot": 120, "cold": 900},
        ),
        (
            "a table over its rate loses its boosts",
            100.0,
            100.0,
            {"hot": L(50, 80, 80, True), "other": L(50, 50, 50, True)},
            {"hot": 50, "other": 50},
        ),
        (
            "a table at its rate keeps them (no oscillation)",
            100.0,
            100.0,
            {"hot": L(50, 90, 90, True), "cold": L(50, 50, 10, False)},
            {"hot": 90, "cold": 50},
        ),
        (
            "a boost fades to twice what the partition uses",
            100.0,
            100.0,
            {"hot": L(50, 90, 30, False), "cold": L(50, 50, 0, False)},
            {"hot": 60, "cold": 50},
        ),
        (
            "never under the share",
            100.0,
            100.0,
            {"idle": L(50, 70, 0, False), "cold": L(50, 50, 0, False)},
            {"idle": 50, "cold": 50},
        ),
        ("nothing throttled, nothing boosted", 10.0, 10.0, {"p": L(10, 10, 3, False)}, {"p": 10}),
    ],
)
def test_allocations(
    name: str, table_rate: float, ceiling: float, loads: dict[str, PartitionLoad], expected: dict[str, float]
) -> None:
    out = allocations(table_rate, ceiling, loads)
    assert out == pytest.approx(expected), name
    for pid, allocation in out.items():
        assert allocation >= loads[pid].share
        if allocation > loads[pid].allocation:
            assert allocation <= ceiling


def test_repeated_periods_converge_on_the_tables_unused_rate() -> None:
    # A hot partition wanting 1,000/s in a 100/s table of four partitions, the others idle.
    loads = {f"p{i}": L(25, 25, 0, False) for i in range(1, 4)}
    hot = L(25, 25, 25, True)
    for _ in range(20):
        loads["p0"] = hot
        allocation = allocations(100.0, 100.0, loads)["p0"]
        hot = L(25, allocation, allocation, True)  # it uses all it gets, and wants more
    assert 99.0 <= hot.allocation <= 100.0
