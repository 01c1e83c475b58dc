"""How hot a partition runs, and where its load divides: the storage side of
split-for-consumption (seed 000, section 4).

A partition's leader records the capacity each request consumed with the request's key
hash. Time is cut into fixed windows; at the end of each, the partition is hot if its
read or write rate reached `hot_share` of its allocation. A partition hot for several
windows in a row reports for how long, with the key distribution point of the load: the
median key hash of the consumed capacity (so a split there gives each child about half
the load), or that one key carries most of it (no split on key hashes can divide a
single key's load, so the autoadmin must not split for it).

Reads and writes are weighed together as read-equivalent units, three per write unit
(DynamoDB's per-partition ceilings: 3,000 RCU and 1,000 WCU, the weighting of
`partition_count`). The load's distribution is a sample weighted by units: a key hash is
kept each time about another `every` units were consumed (the step jittered, so a
periodic request pattern cannot alias with it), and past `MAX_SAMPLES` a random half of
the samples is kept and `every` doubles, so recording costs O(1) and memory stays
bounded however busy the partition.

Sans-I/O: the caller passes the time (and may pass the random source).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

WRITE_WEIGHT = 3.0  # read-equivalent units per write unit
# A partition is hot in a window whose rate reaches this share of its allocation.
DEFAULT_HOT_SHARE = 0.8
DEFAULT_WINDOW_SECONDS = 10.0


@dataclass(frozen=True)
class Heat:
    """What a leader reports about a partition's load."""

    hot_seconds: float  # length of the run of hot windows that ended last (0: cool)
    split_hash: int | None  # the load's median key hash (None: too few samples)
    single_key: bool  # one key hash carries more than half the load


COOL = Heat(0.0, None, False)


class PartitionHeat:
    MAX_SAMPLES = 256

    def __init__(
        self,
        now: float,
        read_allocation: float,
        write_allocation: float,
        window: float = DEFAULT_WINDOW_SECONDS,
        hot_share: float = DEFAULT_HOT_SHARE,
        rng: random.Random | None = None,
    ) -> None:
        # Units per second the partition is allocated (the owner updates them when the
        # table's throughput or partition count changes).
        self.read_allocation = read_allocation
        self.write_allocation = write_allocation
        self.window = window
        self.hot_share = hot_share
        self.window_end = now + window
        self.read_units = 0.0
        self.write_units = 0.0
        self.samples: list[int] = []
        self.every = 1.0
        self.rng = rng or random.Random()
        self._step = 1.0
        self._accrued = 0.0
        self._hot_since: float | None = None
        self.last = COOL

    def record(self, key_hash: int, read_units: float, write_units: float, now: float) -> None:
        """One request's consumption (hot path: a few additions, now and then an append)."""
        if now >= self.window_end:
            self._close(now)
        self.read_units += read_units
        self.write_units += write_units
        self._accrued += read_units + WRITE_WEIGHT * write_units
        while self._accrued >= self._step:
            self._accrued -= self._step
            self._step = self.every * (0.5 + self.rng.random())
            self.samples.append(key_hash)
            if len(self.samples) > self.MAX_SAMPLES:
                self.samples = self.rng.sample(self.samples, len(self.samples) // 2)
                self.every *= 2

    def report(self, now: float) -> Heat:
        """The heat as of the last window that ended by `now`."""
        if now >= self.window_end:
            self._close(now)
        return self.last

    def _close(self, now: float) -> None:
        """End the current window, judging it against the allocation; windows that
        passed since with nothing recorded were cool and end any hot run."""
        hot = (
            self.read_units >= self.hot_share * self.read_allocation * self.window
            or self.write_units >= self.hot_share * self.write_allocation * self.window
        )
        start = self.window_end - self.window
        if hot and self._hot_since is None:
            self._hot_since = start
        if hot and self._hot_since is not None:
            self.last = Heat(self.window_end - self._hot_since, *distribution_point(self.samples))
        else:
            self.last, self._hot_since = COOL, None
        if now >= self.window_end + self.window:  # whole windows went by unrecorded
            self.last, self._hot_since = COOL, None
        self.window_end += ((now - self.window_end) // self.window + 1) * self.window
        self.read_units = self.write_units = self._accrued = 0.0
        self.samples = []
        self.every = self._step = 1.0


def distribution_point(samples: list[int]) -> tuple[int | None, bool]:
    """(median key hash of the load, whether one key hash carries most of it)."""
    if len(samples) < 2:
        return None, False
    _, top = Counter(samples).most_common(1)[0]
    if 2 * top > len(samples):
        return None, True
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], False
