"""A token bucket, sans-I/O: the caller passes the time, nothing here reads a clock.

DynamoDB's admission rule (seed 000 section 4.1): a request is admitted while its
bucket holds tokens, and afterwards charged what it actually consumed (its size is not
known before it runs), so a bucket may go below zero and then refuses until the
refill has paid the debt back. Tokens accrue at `rate` per second up to `rate *
burst_seconds` (DynamoDB keeps up to 300 s of unused throughput for bursts).

A rate change (a new Doorman lease, an UpdateTable) keeps the tokens already earned
but clips them to the new ceiling, so lowering the rate cannot leave a burst larger
than the new one allows. The ceiling follows the rate unless the owner fixes it
(`cap`): a router refilled at its Doorman share keeps savings up to the table's whole
burst, and a lease of zero (a new Doorman master's learning mode) stops the refill
without wiping what the table saved.
"""

from __future__ import annotations

# DynamoDB retains up to five minutes of unused read and write capacity for bursts.
DEFAULT_BURST_SECONDS = 300.0


class TokenBucket:
    __slots__ = ("burst_seconds", "cap", "rate", "stamp", "tokens")

    def __init__(
        self,
        rate: float,
        now: float,
        *,
        burst_seconds: float = DEFAULT_BURST_SECONDS,
        tokens: float = 0.0,
        cap: float | None = None,
    ) -> None:
        if rate < 0 or burst_seconds < 0:
            raise ValueError("rate and burst_seconds must be >= 0")
        self.rate = rate
        self.burst_seconds = burst_seconds
        self.cap = cap
        self.tokens = min(tokens, self.ceiling)
        self.stamp = now

    @property
    def ceiling(self) -> float:
        """The most tokens the bucket keeps: `cap` when fixed, else the burst allowance
        at the current rate, and at least one second's worth so a rate is usable even
        with no burst."""
        if self.cap is not None:
            return self.cap
        return self.rate * max(self.burst_seconds, 1.0)

    def refill(self, now: float) -> None:
        elapsed = now - self.stamp
        if elapsed > 0:
            self.tokens = min(self.ceiling, self.tokens + elapsed * self.rate)
            self.stamp = now

    def admits(self, now: float) -> bool:
        """Whether a request may start now: the bucket is not empty (or in debt)."""
        self.refill(now)
        return self.tokens > 0

    def charge(self, units: float, now: float) -> None:
        """Takes what an admitted request consumed; the balance may go negative."""
        self.refill(now)
        self.tokens -= units

    def take(self, units: float, now: float) -> bool:
        """Admits and charges at once when the cost is known up front and must be
        covered in full (a partition's share of its node): all or nothing."""
        self.refill(now)
        if self.tokens >= units:
            self.tokens -= units
            return True
        return False

    def set_rate(self, rate: float, now: float, cap: float | None = None) -> None:
        self.refill(now)
        self.rate = max(0.0, rate)
        self.cap = cap
        self.tokens = min(self.tokens, self.ceiling)


def full_savings(rate: float, burst_seconds: float = DEFAULT_BURST_SECONDS) -> float:
    """The tokens a table's first bucket starts with: its whole burst allowance.

    DynamoDB admits a short load on a table created a moment ago (the test suites that
    create a 1 WCU table and write 25 items at once rely on it), so a table's savings
    start full at its creation; and since they accrue while it is idle, a table seen
    for the first time by a restarted or new router or storage node has, as of its age,
    savings that are full as well. At least one second's worth.
    """
    return rate * max(burst_seconds, 1.0)
