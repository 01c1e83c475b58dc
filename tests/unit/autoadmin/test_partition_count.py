"""Initial partition count from provisioned throughput: ceil(RCU/3000 + WCU/1000)."""

from __future__ import annotations

import pytest

from partita.autoadmin.partition_count import (
    initial_partition_count,
    partition_count_after_update,
)


@pytest.mark.parametrize(
    ("rcu", "wcu", "expected"),
    [
        (0, 0, 1),  # never fewer than one
        (1, 1, 1),
        (5, 5, 1),
        (3000, 0, 1),  # exactly one partition's reads
        (3001, 0, 2),
        (0, 1000, 1),  # exactly one partition's writes
        (0, 1001, 2),
        (1500, 500, 1),  # 0.5 + 0.5 is exactly one
        (1501, 500, 2),
        (3000, 1000, 2),
        (0, 3200, 4),  # the seed's example: 3200 WCU -> 4 partitions of 800 WCU
        (0, 6000, 6),  # a new table; an existing one of 4 splits to 8 (below)
        (6000, 0, 2),
        (10000, 10000, 14),  # 3.33 + 10 = 13.33
        (40000, 40000, 54),  # DynamoDB's default per-table maximum: 13.33 + 40
    ],
)
def test_provisioned_table_gets_ceil_rcu_over_3000_plus_wcu_over_1000(
    rcu: int, wcu: int, expected: int
) -> None:
    assert initial_partition_count(rcu, wcu, on_demand=False) == expected


def test_seed_example_gives_800_wcu_per_partition() -> None:
    assert 3200 / initial_partition_count(0, 3200, on_demand=False) == 800


@pytest.mark.parametrize(("rcu", "wcu"), [(0, 0), (100000, 100000)])
def test_on_demand_table_starts_with_the_configured_default(rcu: int, wcu: int) -> None:
    assert initial_partition_count(rcu, wcu, on_demand=True) == 4
    assert initial_partition_count(rcu, wcu, on_demand=True, on_demand_default=10) == 10


@pytest.mark.parametrize(("rcu", "wcu"), [(-1, 0), (0, -1)])
def test_negative_capacity_is_rejected(rcu: int, wcu: int) -> None:
    with pytest.raises(ValueError):
        initial_partition_count(rcu, wcu, on_demand=False)


def test_on_demand_default_must_be_positive() -> None:
    with pytest.raises(ValueError):
        initial_partition_count(0, 0, on_demand=True, on_demand_default=0)


@pytest.mark.parametrize(
    ("current", "rcu", "wcu", "expected"),
    [
        (4, 0, 3600, 4),  # seed: 3600 WCU still fits 4 partitions (900 each)
        (4, 0, 6000, 8),  # seed: 6000 WCU splits all 4 into 8 (750 each)
        (8, 0, 5000, 8),  # seed: a decrease never merges
        (1, 0, 5000, 8),  # doubling overshoots 5 to 8
        (3, 9001, 0, 6),
    ],
)
def test_throughput_increase_splits_every_partition_in_two_until_enough(
    current: int, rcu: int, wcu: int, expected: int
) -> None:
    assert partition_count_after_update(current, rcu, wcu) == expected


def test_update_needs_an_existing_partition() -> None:
    with pytest.raises(ValueError):
        partition_count_after_update(0, 1, 1)
