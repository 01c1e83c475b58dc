"""Throughput policy shared by the routers and the autoadmin: what rate a table may use.

PROVISIONED tables use their provisioned RCU/WCU. PAY_PER_REQUEST tables (seed 000
section 4.5) admit up to twice their previous peak at once, and the allowance rises
as traffic grows (the peak is re-read every second, so a sustained demand can double
the allowance each second; DynamoDB grows it more slowly); a new on-demand table behaves as if its previous peak were
DynamoDB's initial one (2,000 WCU / 6,000 RCU, so 4,000 / 12,000 at once).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Literal

Kind = Literal["read", "write"]

# DynamoDB's initial "previous peak" of a new on-demand table, in units per second.
ON_DEMAND_INITIAL_PEAK: dict[Kind, float] = {"read": 6000.0, "write": 2000.0}
# How long a peak is remembered: DynamoDB speaks of the previous peak "within 30 minutes".
PEAK_MEMORY_SECONDS = 1800.0
# Across routers (admission through Doorman): each router asks for this multiple of its
# measured demand, and the table's Doorman capacity is the peak of what they ask (over
# PEAK_MEMORY_SECONDS), so a router's lease absorbs a jump to twice its demand at once
# and the cluster admits twice its previous peak, not each router twice its own.
ON_DEMAND_HEADROOM = 2.0
# What an idle router still asks for: a share of the initial allowance, so a normal load
# on a fresh table is admitted at once and up to four idle routers' floors do not raise
# the table's allowance above the initial one.
ON_DEMAND_FLOOR_SHARE = 0.25


def on_demand_allowance(previous_peak: float, kind: Kind, warm: tuple[int, int] = (0, 0)) -> float:
    """Units per second an on-demand table admits now: twice its previous peak, and at
    least its warm throughput (DynamoDB's WarmThroughput: what it takes at once)."""
    return max(
        2.0 * max(previous_peak, ON_DEMAND_INITIAL_PEAK[kind]), float(warm[0 if kind == "read" else 1])
    )


def on_demand_ceiling(maximum: tuple[int, int], kind: Kind) -> float:
    """The most an on-demand table admits per second of `kind` (DynamoDB's
    OnDemandThroughput, (read, write); 0: no maximum, inf)."""
    units = maximum[0 if kind == "read" else 1]
    return float(units) if units > 0 else math.inf


class PeakTracker:
    """The highest per-second rate seen over the last `memory` seconds (sans-I/O: the
    caller passes the time and the cumulative units consumed so far)."""

    __slots__ = ("_peaks", "_second", "_second_start_units", "memory")

    def __init__(self, now: float, units: float = 0.0, *, memory: float = PEAK_MEMORY_SECONDS) -> None:
        self.memory = memory
        self._second = int(now)
        self._second_start_units = units
        # (second, rate) with rates decreasing: a monotonic queue for a sliding maximum.
        self._peaks: deque[tuple[int, float]] = deque()

    def observe(self, now: float, units: float) -> None:
        second = int(now)
        if second <= self._second:
            return
        # The whole second just closed; seconds with no observation in between are idle
        # and cannot raise the peak.
        rate = (units - self._second_start_units) / (second - self._second)
        while self._peaks and self._peaks[-1][1] <= rate:
            self._peaks.pop()
        self._peaks.append((self._second, rate))
        self._second, self._second_start_units = second, units
        while self._peaks and self._peaks[0][0] < second - self.memory:
            self._peaks.popleft()

    def peak(self, now: float, units: float) -> float:
        """The previous peak: whole seconds only, so the allowance moves once a second
        (counting the second under way would let the allowance chase any spike)."""
        self.observe(now, units)
        return self._peaks[0][1] if self._peaks else 0.0
