"""When a writer may raise a partition key's shard count: cooldown and random back-off.

Pure: time comes in as `now` (epoch seconds, float) and randomness as a `random.Random`,
so tests drive it with a fake clock and a seeded generator.

The seed's rules:
- cooldown: if the count changed less than `cooldown` seconds ago, do not touch the
  metadata item; retry the write (it lands on one of the shards just added). The
  item's creation is not a change: a key hot from its first write need not wait;
- random back-off: once the cooldown has run out, each writer waits its own random
  1..10 s before trying the conditional update, so a crowd of throttled writers does
  not stampede the item the instant the cooldown ends.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from enum import Enum

from partita.client.sharding.metadata import ShardMetadata


@dataclass(frozen=True)
class GrowthPolicy:
    """Tuning of dynamic sharding; every default is the seed's or says why not."""

    # Seconds after a change before the count may change again. The seed leaves the
    # value to the application; a minute lets the new shards absorb load (and
    # DynamoDB's adaptive capacity react) before judging whether more are needed.
    cooldown: float = 60.0
    # The seed's example: each writer picks a random 1..10 s back-off after the cooldown.
    backoff_min: float = 1.0
    backoff_max: float = 10.0
    # Upper bound of the count: every shard is one more Query for each read.
    max_shards: int = 100
    # The seed increments the count by one; a factor above 1 grows geometrically
    # (the new count is max(count + 1, ceil(count * factor))).
    growth_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.cooldown < 0 or self.backoff_min < 0 or self.backoff_max < self.backoff_min:
            raise ValueError("cooldown and back-off must be non-negative, backoff_min <= backoff_max")
        if self.max_shards < 1 or self.growth_factor < 1.0:
            raise ValueError("max_shards must be at least 1 and growth_factor at least 1.0")

    def next_count(self, current: int) -> int:
        return min(self.max_shards, max(current + 1, math.ceil(current * self.growth_factor)))


class Verdict(Enum):
    """What a writer does after a partition-level throttle."""

    RETRY_WRITE = "retry-write"  # cooling down or backing off: retry the write only
    GROW_NOW = "grow-now"  # try the conditional update of the shard count now
    AT_LIMIT = "at-limit"  # the count is at max_shards: growth cannot help


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    # For RETRY_WRITE: seconds until the growth attempt is due (inf when cooling down
    # and no attempt is planned yet), a bound for the caller's sleep.
    grow_in: float = math.inf


@dataclass
class _Plan:
    seen_last_updated: int
    due: float


@dataclass
class GrowthPlanner:
    """Per partition key, the time this writer will try to grow the count.

    A plan belongs to the metadata version it was made for: once `last_updated` moves
    (someone else grew the count), the plan is void and a new cooldown starts.
    """

    policy: GrowthPolicy
    _plans: dict[str, _Plan] = field(default_factory=dict)

    def on_partition_throttle(self, meta: ShardMetadata, now: float, rng: random.Random) -> Decision:
        if meta.number_of_shards >= self.policy.max_shards:
            self._plans.pop(meta.partition_key, None)
            return Decision(Verdict.AT_LIMIT)
        # The cooldown lets shards just added absorb the load before judging again; a key
        # that never changed (only its creation in the history) has no such shards, so a
        # key that is hot from its first write grows after the back-off alone.
        changed = len(meta.history) > 1
        cooldown_ends = meta.last_updated + self.policy.cooldown if changed else float("-inf")
        if now < cooldown_ends:
            self._plans.pop(meta.partition_key, None)
            return Decision(Verdict.RETRY_WRITE)
        plan = self._plans.get(meta.partition_key)
        if plan is None or plan.seen_last_updated != meta.last_updated:
            backoff = rng.uniform(self.policy.backoff_min, self.policy.backoff_max)
            plan = _Plan(meta.last_updated, max(now, cooldown_ends) + backoff)
            self._plans[meta.partition_key] = plan
        if now >= plan.due:
            del self._plans[meta.partition_key]
            return Decision(Verdict.GROW_NOW)
        return Decision(Verdict.RETRY_WRITE, plan.due - now)

    def pending(self, partition_key: str) -> float | None:
        """When this writer will next try to grow `partition_key`, if it plans to."""
        plan = self._plans.get(partition_key)
        return None if plan is None else plan.due


@dataclass(frozen=True)
class RetryDelays:
    """Exponential back-off with full jitter between retries of a throttled write."""

    base: float = 0.05
    cap: float = 1.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0.0, min(self.cap, self.base * 2 ** min(attempt, 30)))
