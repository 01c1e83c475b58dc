"""Cooldown and random back-off before a writer raises a shard count (injected clock and RNG)."""

from __future__ import annotations

import math
import random

import pytest

from partita.client.sharding.metadata import ShardMetadata, new_metadata
from partita.client.sharding.policy import GrowthPlanner, GrowthPolicy, RetryDelays, Verdict

POLICY = GrowthPolicy(cooldown=60.0, backoff_min=1.0, backoff_max=10.0, max_shards=8)


def changed_at(epoch: int, count: int = 2, key: str = "/f") -> ShardMetadata:
    """The metadata of a key whose count last changed (to `count`) at `epoch`."""
    return new_metadata(key, 1, epoch - 500).changed_to(count, epoch)


class FixedRandom(random.Random):
    """A generator whose uniform() returns a chosen point of the range (0: low end, 1: high end)."""

    def __init__(self, share: float) -> None:
        super().__init__(0)
        self.share = share

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.share


def test_within_the_cooldown_the_writer_only_retries_the_write() -> None:
    planner = GrowthPlanner(POLICY)
    meta = changed_at(1000)
    for now in (1000.0, 1030.0, 1059.99):
        assert planner.on_partition_throttle(meta, now, random.Random(1)).verdict is Verdict.RETRY_WRITE
    assert planner.pending("/f") is None


def test_after_the_cooldown_the_writer_counts_down_its_random_backoff_then_grows() -> None:
    planner = GrowthPlanner(POLICY)
    meta = changed_at(1000)
    rng = FixedRandom(0.5)  # back-off 5.5 s
    first = planner.on_partition_throttle(meta, 1060.0, rng)
    assert first.verdict is Verdict.RETRY_WRITE
    assert first.grow_in == pytest.approx(5.5)
    assert planner.pending("/f") == pytest.approx(1065.5)
    assert planner.on_partition_throttle(meta, 1065.0, rng).verdict is Verdict.RETRY_WRITE
    assert planner.on_partition_throttle(meta, 1065.5, rng).verdict is Verdict.GROW_NOW
    assert planner.pending("/f") is None


def test_the_backoff_counts_from_the_end_of_the_cooldown_when_the_throttle_came_earlier() -> None:
    """A throttle seen long after the cooldown ended starts the count-down from that moment."""
    planner = GrowthPlanner(POLICY)
    meta = changed_at(1000)
    planner.on_partition_throttle(meta, 5000.0, FixedRandom(0.0))
    assert planner.pending("/f") == pytest.approx(5001.0)


def test_backoffs_of_many_writers_spread_over_the_seeds_1_to_10_seconds() -> None:
    meta = changed_at(1000)
    dues = []
    for seed in range(500):
        planner = GrowthPlanner(POLICY)
        planner.on_partition_throttle(meta, 1060.0, random.Random(seed))
        due = planner.pending("/f")
        assert due is not None
        dues.append(due - 1060.0)
    assert all(1.0 <= d <= 10.0 for d in dues)
    assert min(dues) < 1.5 and max(dues) > 9.5
    # no two writers of a crowd fire at the same instant
    assert len({round(d, 6) for d in dues}) == len(dues)


def test_a_count_raised_by_someone_else_voids_the_plan_and_restarts_the_cooldown() -> None:
    planner = GrowthPlanner(POLICY)
    meta = changed_at(1000)
    planner.on_partition_throttle(meta, 1060.0, FixedRandom(0.5))
    grown = meta.changed_to(3, 1062)
    assert planner.on_partition_throttle(grown, 1066.0, FixedRandom(0.5)).verdict is Verdict.RETRY_WRITE
    assert planner.pending("/f") is None  # cooling down again
    later = planner.on_partition_throttle(grown, 1122.0, FixedRandom(0.0))
    assert later.verdict is Verdict.RETRY_WRITE and planner.pending("/f") == pytest.approx(1123.0)


def test_a_key_that_never_changed_grows_after_the_backoff_alone() -> None:
    """Its creation added no shards to wait for: a key hot from its first write need not sit out the cooldown."""
    planner = GrowthPlanner(POLICY)
    created = new_metadata("/f", 1, 1000)
    first = planner.on_partition_throttle(created, 1000.5, FixedRandom(0.0))
    assert first.verdict is Verdict.RETRY_WRITE and first.grow_in == pytest.approx(1.0)
    assert planner.on_partition_throttle(created, 1001.5, FixedRandom(0.0)).verdict is Verdict.GROW_NOW


def test_plans_are_per_partition_key() -> None:
    planner = GrowthPlanner(POLICY)
    planner.on_partition_throttle(changed_at(0, key="/a"), 100.0, FixedRandom(0.0))
    assert planner.pending("/a") == pytest.approx(101.0)
    assert planner.pending("/b") is None


def test_at_max_shards_growth_is_not_attempted() -> None:
    planner = GrowthPlanner(POLICY)
    meta = changed_at(0, 8)
    decision = planner.on_partition_throttle(meta, 10_000.0, random.Random(1))
    assert decision.verdict is Verdict.AT_LIMIT and math.isinf(decision.grow_in)


def test_zero_cooldown_and_backoff_grow_at_once() -> None:
    planner = GrowthPlanner(GrowthPolicy(cooldown=0, backoff_min=0, backoff_max=0))
    assert (
        planner.on_partition_throttle(new_metadata("/f", 1, 50), 50.0, random.Random(1)).verdict
        is Verdict.GROW_NOW
    )


@pytest.mark.parametrize(
    ("factor", "counts"),
    [(1.0, [1, 2, 3, 4, 5, 6, 7, 8, 8]), (2.0, [1, 2, 4, 8, 8])],
)
def test_the_count_grows_by_one_or_by_a_factor_up_to_max_shards(factor: float, counts: list[int]) -> None:
    policy = GrowthPolicy(max_shards=8, growth_factor=factor)
    seen = [1]
    while len(seen) < len(counts):
        seen.append(policy.next_count(seen[-1]))
    assert seen == counts


@pytest.mark.parametrize(
    "bad",
    [
        {"cooldown": -1},
        {"backoff_min": 5, "backoff_max": 1},
        {"max_shards": 0},
        {"growth_factor": 0.5},
    ],
)
def test_nonsense_policies_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        GrowthPolicy(**bad)  # type: ignore[arg-type]


def test_write_retries_back_off_exponentially_with_full_jitter_up_to_the_cap() -> None:
    delays = RetryDelays(base=0.05, cap=1.0)
    top = FixedRandom(1.0)
    assert [delays.delay(a, top) for a in range(7)] == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert delays.delay(3, FixedRandom(0.0)) == 0.0
    assert delays.delay(10_000, top) == 1.0
