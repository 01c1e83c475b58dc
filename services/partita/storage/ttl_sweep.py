"""Time to Live, the pure part: which items are expired, and how fast the sweeper may work.

Expiry, as DynamoDB documents it: an item is expired when its TTL attribute is a
top-level Number (N) of epoch seconds less than the current time. Any other type (a
string, a number set, a map...) is ignored, and so is a value more than five years in
the past (so a timestamp in the wrong unit or a forgotten default never mass-deletes a
table). A value in milliseconds lies far in the future and never expires, as on DynamoDB.

Cost: `SweepPacer` keeps the sweeper within a fixed share of the node's time. The sweeper
works in chunks (a bounded number of items read, and the deletes among them committed
through the write path, waiting for the WAL's fsync); after each chunk it rests for
`work * (1 - share) / share`, so over any run of chunks its work, CPU and I/O alike,
is at most `share` of the elapsed time however large the partitions grow. A pass over
the partitions starts at most every `interval` seconds. No clock or sleep here: the
adapter (storage/ttl_sweeper.py) passes the time in.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

# Values further in the past than this are not expiry times (DynamoDB: five years).
MAX_PAST_SECONDS = 5 * 365 * 24 * 3600
# Default share of the node's time the sweeper may use (5%, as the item-count pass).
DEFAULT_SHARE = 0.05
# Items read per chunk, between rests; the deletes of a chunk share one WAL batch.
CHUNK_ITEMS = 256


def expiry_of(item: Mapping[str, Any], attribute: str) -> Decimal | None:
    """The item's expiry time in epoch seconds, or None if it has none DynamoDB honours."""
    value = item.get(attribute)
    if not isinstance(value, dict):
        return None
    number = value.get("N")
    if not isinstance(number, str):
        return None
    try:
        return Decimal(number)
    except InvalidOperation:
        return None


def is_expired(item: Mapping[str, Any], attribute: str, now: float) -> bool:
    expiry = expiry_of(item, attribute)
    return expiry is not None and _expired(expiry, now)


def _expired(expiry: Decimal, now: float) -> bool:
    current = Decimal(repr(now))
    return current - MAX_PAST_SECONDS <= expiry < current


def still_expired_condition(attribute: str, now: float) -> dict[str, Any]:
    """Storage options of a conditional delete that succeeds only if the item is still
    expired at the moment of deletion, by the rule of `is_expired` (a comparison of a
    non-number with a number is false, so a TTL rewritten as a string also wins)."""
    current = Decimal(repr(now))
    return {
        "condition": "#ttl >= :oldest AND #ttl < :now",
        "names": {"#ttl": attribute},
        "values": {":oldest": {"N": str(current - MAX_PAST_SECONDS)}, ":now": {"N": str(current)}},
    }


class SweepPacer:
    """When the sweeper may work: rests after each chunk, and the start of each pass.

    Times are seconds on the caller's monotonic clock.
    """

    def __init__(self, interval: float, share: float = DEFAULT_SHARE) -> None:
        if not 0 < share <= 1:
            raise ValueError("share must be in (0, 1]")
        self.interval = interval
        self.share = share
        self.work_seconds = 0.0  # all chunks so far
        self.rest_seconds = 0.0  # all rests prescribed so far
        self._chunk_started: float | None = None
        self._pass_started: float | None = None

    def pass_started(self, now: float) -> None:
        self._pass_started = now

    def chunk_started(self, now: float) -> None:
        self._chunk_started = now

    def chunk_finished(self, now: float) -> float:
        """The rest to take before the next chunk."""
        if self._chunk_started is None:
            raise RuntimeError("chunk_finished without chunk_started")
        work = max(0.0, now - self._chunk_started)
        self._chunk_started = None
        rest = work * (1 - self.share) / self.share
        self.work_seconds += work
        self.rest_seconds += rest
        return rest

    def until_next_pass(self, now: float) -> float:
        """The wait before the next pass: passes start `interval` apart, or back to back
        when a pass (rests included) took longer."""
        if self._pass_started is None:
            return 0.0
        return max(0.0, self._pass_started + self.interval - now)
