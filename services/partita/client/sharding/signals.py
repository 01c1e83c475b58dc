"""Is a throttled write limited by its partition or by the whole table?

Only a partition limit is cured by more shards; a table limit needs more provisioned
capacity (UpdateTable, auto scaling), and growing the shard count would only make reads
dearer. The seed's test: the table's consumed capacity is below its provisioned
capacity, so the table had room and one partition was the bottleneck. Where that
evidence comes from depends on the service, hence the pluggable signal:

- `ThrottlingReasonsSignal`: DynamoDB names the reason in the error itself
  (`ThrottlingReasons`, e.g. "TableWriteKeyRangeThroughputExceeded" for a partition,
  "TableWriteProvisionedThroughputExceeded" for the table);
- `ProvisionedCapacitySignal`: the seed's comparison, with the provisioned rate from
  DescribeTable and the consumed rate from a pluggable meter (by default the writes
  this client made itself; CloudWatch is out of scope);
- `NullSignal`: no evidence; the writer's `grow_when_unknown` decides;
- `FirstKnown`: the first signal that knows, in order.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

ErrorResponse = Mapping[str, Any]  # botocore's ClientError.response


class Constraint(Enum):
    PARTITION = "partition"
    TABLE = "table"
    UNKNOWN = "unknown"


class ThrottleSignal(Protocol):
    def classify(self, table_name: str, error: ErrorResponse) -> Constraint: ...


class NullSignal:
    """Knows nothing: every throttle is UNKNOWN."""

    def classify(self, table_name: str, error: ErrorResponse) -> Constraint:
        return Constraint.UNKNOWN


class ThrottlingReasonsSignal:
    """Reads DynamoDB's `ThrottlingReasons` ("ResourceType+OperationType+LimitType")."""

    def classify(self, table_name: str, error: ErrorResponse) -> Constraint:
        reasons = throttling_reasons(error)
        if not reasons:
            return Constraint.UNKNOWN
        # A table-wide limit anywhere in the list means more shards cannot help.
        if any(not reason.endswith("KeyRangeThroughputExceeded") for reason in reasons):
            return Constraint.TABLE
        return Constraint.PARTITION


def throttling_reasons(error: ErrorResponse) -> list[str]:
    """The `reason` of each ThrottlingReason; botocore puts modeled error fields at the top."""
    raw = error.get("ThrottlingReasons")
    if raw is None:
        raw = error.get("Error", {}).get("ThrottlingReasons")
    if not isinstance(raw, list):
        return []
    return [str(entry.get("reason", "")) for entry in raw if isinstance(entry, Mapping)]


@dataclass
class FirstKnown:
    """The first of `signals` that answers other than UNKNOWN."""

    signals: Sequence[ThrottleSignal]

    def classify(self, table_name: str, error: ErrorResponse) -> Constraint:
        for signal in self.signals:
            answer = signal.classify(table_name, error)
            if answer is not Constraint.UNKNOWN:
                return answer
        return Constraint.UNKNOWN


@dataclass
class ConsumedCapacityMeter:
    """Capacity consumed per second and table over a sliding window, from ConsumedCapacity.

    Fed by the writer with each response's ConsumedCapacity (it asks for TOTAL when a
    meter is configured). It sees only this process's writes, so it measures a table
    only where this process is its main writer; feed it from elsewhere otherwise.
    """

    clock: Callable[[], float]
    window: float = 10.0
    _samples: dict[str, deque[tuple[float, float]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, table_name: str, units: float) -> None:
        now = self.clock()
        with self._lock:
            samples = self._samples.setdefault(table_name, deque())
            samples.append((now, units))
            self._expire(samples, now)

    def rate(self, table_name: str) -> float | None:
        """Units per second over the last `window` seconds."""
        now = self.clock()
        with self._lock:
            samples = self._samples.get(table_name, deque())
            self._expire(samples, now)
            return sum(units for _, units in samples) / self.window

    def _expire(self, samples: deque[tuple[float, float]], now: float) -> None:
        while samples and samples[0][0] <= now - self.window:
            samples.popleft()


class ConsumedRate(Protocol):
    def rate(self, table_name: str) -> float | None: ...


@dataclass
class ProvisionedCapacitySignal:
    """The seed's test: consumed below provisioned means the partition is the limit.

    `client` is a boto3 DynamoDB client (DescribeTable answers the provisioned write
    rate, cached for `describe_ttl` seconds); `consumed` gives the table's consumed write
    rate. On-demand tables have no provisioned rate to compare: UNKNOWN.
    """

    client: Any
    consumed: ConsumedRate
    clock: Callable[[], float]
    # Consumed below this share of provisioned counts as "the table had room": a meter
    # averages over seconds, so a table at its limit can read slightly below 100%.
    below_share: float = 0.9
    describe_ttl: float = 30.0
    _provisioned: dict[str, tuple[float, float | None]] = field(default_factory=dict)

    def classify(self, table_name: str, error: ErrorResponse) -> Constraint:
        provisioned = self._provisioned_wcu(table_name)
        consumed = self.consumed.rate(table_name)
        if provisioned is None or consumed is None or math.isnan(consumed):
            return Constraint.UNKNOWN
        return Constraint.PARTITION if consumed < self.below_share * provisioned else Constraint.TABLE

    def _provisioned_wcu(self, table_name: str) -> float | None:
        now = self.clock()
        cached = self._provisioned.get(table_name)
        if cached is not None and now - cached[0] < self.describe_ttl:
            return cached[1]
        table = self.client.describe_table(TableName=table_name)["Table"]
        wcu: float | None = None
        if table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED") == "PROVISIONED":
            units = table.get("ProvisionedThroughput", {}).get("WriteCapacityUnits")
            wcu = float(units) if units else None
        self._provisioned[table_name] = (now, wcu)
        return wcu
