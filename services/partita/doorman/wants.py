"""Wants estimated from use: what a rate client asks Doorman for (seed 002, "客户端
的需求估算"). Pure: the caller passes the time.

The caller records the units it was asked for (used or refused) as they come; at each
refresh `wants()` closes the window since the previous one and answers:

- the window's demand rate, or the smoothed one (an exponentially weighted average
  with `half_life`) when that is higher: a rise is asked for at once, a fall slowly,
  so a router that pauses for a few seconds keeps its share;
- times `headroom`, so a steady demand is granted a little more than it uses;
- at least `probe` times the grant when some of the demand was refused, so a demand
  held back by its own grant is seen (its measured rate cannot exceed the grant);
- never above `ceiling` (nothing is gained by asking for more than the resource has)
  and never below `floor` (an idle client keeps a small share, so its next request is
  not refused until the next refresh).

Before the first window closes the answer is `initial`: a new client asks
optimistically (the router: the table's whole rate) instead of for the floor.
"""

from __future__ import annotations

import math

HEADROOM = 1.25
PROBE_FACTOR = 2.0
HALF_LIFE_SECONDS = 60.0
# Windows shorter than this are not closed: a burst of refreshes (a new resource asked
# for at once) would otherwise turn one request into a huge rate.
MIN_WINDOW_SECONDS = 0.5


class DemandEstimator:
    __slots__ = (
        "_refused",
        "_since",
        "_units",
        "ceiling",
        "floor",
        "half_life",
        "headroom",
        "probe",
        "smoothed",
    )

    def __init__(
        self,
        now: float,
        initial: float,
        *,
        floor: float = 0.0,
        ceiling: float = math.inf,
        headroom: float = HEADROOM,
        probe: float = PROBE_FACTOR,
        half_life: float = HALF_LIFE_SECONDS,
    ) -> None:
        if half_life <= 0 or headroom < 1 or probe < 1 or floor < 0:
            raise ValueError("half_life > 0, headroom >= 1, probe >= 1 and floor >= 0 are required")
        self.floor = floor
        self.ceiling = ceiling
        self.headroom = headroom
        self.probe = probe
        self.half_life = half_life
        # The demand (units per second) the estimate starts from: `initial` counts as
        # a smoothed rate already seen, so it decays like one if the client stays idle.
        self.smoothed = initial / headroom
        self._since = now
        self._units = 0.0
        self._refused = False

    def record(self, units: float, refused: bool = False) -> None:
        """Units the caller was asked for; `refused`: some of them were not granted."""
        self._units += units
        self._refused = self._refused or refused

    def wants(self, now: float, granted: float) -> float:
        """Closes the window since the last call and answers what to ask for."""
        elapsed = now - self._since
        if elapsed >= MIN_WINDOW_SECONDS:
            rate = self._units / elapsed
            keep = 0.5 ** (elapsed / self.half_life)
            self.smoothed = max(rate, keep * self.smoothed + (1.0 - keep) * rate)
            refused = self._refused
            self._since, self._units, self._refused = now, 0.0, False
        else:
            refused = self._refused
        wants = self.smoothed * self.headroom
        if refused:
            wants = max(wants, granted * self.probe)
        return max(self.floor, min(self.ceiling, wants))
