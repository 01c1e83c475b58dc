"""Partition and node admission at a storage node (seed 000 section 4.1.1).

Each partition a node serves has, per kind (read, write), two buckets refilled at its
share of the table's rate (the provisioned rate over the partition count; on-demand:
DynamoDB's per-partition ceiling, 3,000 RCU / 1,000 WCU): `allocated`, holding one
second's worth, says whether the partition is within its rate; `saved` keeps up to
300 s of unused throughput. The node has one bucket per kind at its own capacity,
holding a few seconds of it, the last line of defence.

A request is admitted when the node is not in debt, the partition has saved tokens,
and either it is within its rate (allocated tokens) or the node has spare tokens: a
partition bursts only while the node can afford it, and only as long as its savings
last. What the request consumed is charged afterwards to all three. A partition's
savings start full (see token_bucket.full_savings): a new table admits a short load.

Adaptive capacity (storage/adaptive.py) runs once a period from `check`: a partition
refused while its table is under its rate gets its buckets' rate raised above its
share, up to the table's rate and the node's capacity; the boosts are cut back when
the table consumes its whole rate.

Sans-I/O: the caller passes the time; `StorageAdmission` keeps the buckets and says
which layer refused, nothing else.
"""

from __future__ import annotations

import enum

from partita.common import config
from partita.common.throughput import Kind
from partita.common.token_bucket import DEFAULT_BURST_SECONDS, TokenBucket, full_savings
from partita.control.model import TableRecord
from partita.storage import adaptive

# DynamoDB's per-partition ceiling, also an on-demand partition's allocation.
PARTITION_MAX_UNITS: dict[Kind, float] = {"read": 3000.0, "write": 1000.0}
# A node's own capacity when not configured: ten partitions at their ceiling.
DEFAULT_NODE_UNITS: dict[Kind, float] = {
    "read": config.DEFAULT_NODE_READ_UNITS,
    "write": config.DEFAULT_NODE_WRITE_UNITS,
}
# The node is "spare" while it holds at least this share of a second's capacity:
# bursts stop before the node's last tokens, which stay for allocated throughput.
NODE_SPARE_FRACTION = 0.1
# The node's capacity is a rate over a few seconds, not one: a spike of one table's
# work within a second is absorbed, as DynamoDB's nodes (thousands of partitions each)
# absorb it. One second refused Alternator's DynamoDB-verified 3 MB transaction on a
# new on-demand table right after its 5 MB ones (about 12,700 WCU on the node leading
# two of its four partitions within the second; DynamoDB takes them).
NODE_BURST_SECONDS = 5.0


class Refusal(enum.Enum):
    PARTITION = "partition"
    NODE = "node"


def partition_rate(record: TableRecord, kind: Kind) -> float:
    if record.billing_mode == "PAY_PER_REQUEST":
        return PARTITION_MAX_UNITS[kind]
    provisioned = record.read_capacity if kind == "read" else record.write_capacity
    share = provisioned / max(1, len(record.partitions))
    return min(share, PARTITION_MAX_UNITS[kind])


def table_rate(record: TableRecord, kind: Kind) -> float:
    """The most one table may use through one node: its provisioned rate, or on demand
    the per-partition ceiling times its partitions."""
    if record.billing_mode == "PAY_PER_REQUEST":
        return PARTITION_MAX_UNITS[kind] * max(1, len(record.partitions))
    return float(record.read_capacity if kind == "read" else record.write_capacity)


def _rates_differ(old: TableRecord, new: TableRecord) -> bool:
    return (
        old.read_capacity != new.read_capacity
        or old.write_capacity != new.write_capacity
        or old.billing_mode != new.billing_mode
        or len(old.partitions) != len(new.partitions)
    )


class PartitionBuckets:
    __slots__ = ("allocated", "last_rate", "record", "saved", "share", "throttled", "used")

    def __init__(
        self, record: TableRecord, rate: float, now: float, burst_seconds: float, savings: float
    ) -> None:
        self.record = record  # the version of the table the rate was computed from
        self.share = rate  # the partition's rate without adaptive capacity's boost
        self.allocated = TokenBucket(rate, now, burst_seconds=1.0, tokens=rate)
        self.saved = TokenBucket(rate, now, burst_seconds=burst_seconds, tokens=savings)
        # Over the current adaptive-capacity period: units charged, and whether refused.
        self.used = 0.0
        self.throttled = False
        # Units per second over the period before: consumption is judged over two
        # periods, because a request is charged after the fact, so one period can see a
        # partition's whole allocation plus a large item's worth (and the table appear
        # over its rate, cutting every boost) while the partition keeps to its rate.
        self.last_rate: float | None = None

    def consumed(self, elapsed: float) -> float:
        """Units per second over this period and the one before, ending the period."""
        rate = self.used / elapsed
        smoothed = rate if self.last_rate is None else (rate + self.last_rate) / 2.0
        self.last_rate = rate
        return smoothed

    def allocate(self, rate: float, now: float) -> None:
        self.allocated.set_rate(rate, now)
        self.saved.set_rate(rate, now)


class StorageAdmission:
    def __init__(
        self,
        now: float,
        *,
        node_units: dict[Kind, float] | None = None,
        burst_seconds: float = DEFAULT_BURST_SECONDS,
        start_full: bool = False,
        adaptive_capacity: bool = True,
    ) -> None:
        units = node_units or DEFAULT_NODE_UNITS
        # True (the nodes): a partition's savings and the node's few seconds start full;
        # False: one second's worth (tests that count the rate alone).
        self.start_full = start_full
        # The node holds a few seconds of its capacity: a ceiling on work, not a saver.
        self.node: dict[Kind, TokenBucket] = {
            kind: TokenBucket(
                rate,
                now,
                burst_seconds=NODE_BURST_SECONDS,
                tokens=rate * (NODE_BURST_SECONDS if start_full else 1.0),
            )
            for kind, rate in units.items()
        }
        self.burst_seconds = burst_seconds
        self.adaptive_capacity = adaptive_capacity
        self.partitions: dict[tuple[int, str, Kind], PartitionBuckets] = {}
        self._period_start = now
        # Boosts granted, by (table name, kind): read by /metrics.
        self.boosts: dict[tuple[str, Kind], int] = {}

    def _buckets(self, record: TableRecord, partition_id: str, kind: Kind, now: float) -> PartitionBuckets:
        key = (record.table_id, partition_id, kind)
        buckets = self.partitions.get(key)
        if buckets is None:
            rate = partition_rate(record, kind)
            savings = full_savings(rate, self.burst_seconds) if self.start_full else rate
            buckets = self.partitions[key] = PartitionBuckets(record, rate, now, self.burst_seconds, savings)
        elif buckets.record is not record:  # another copy, or a new version of the table
            if _rates_differ(buckets.record, record):  # UpdateTable, or a split
                buckets.share = partition_rate(record, kind)
                buckets.allocate(buckets.share, now)
            # (Else the node re-read the same table: an adaptive boost stays.)
            buckets.record = record
        return buckets

    def check(self, record: TableRecord, partition_id: str, kind: Kind, now: float) -> Refusal | None:
        """None to admit; else which layer refuses."""
        if self.adaptive_capacity and now - self._period_start >= adaptive.PERIOD_SECONDS:
            self.adapt(now)
        node = self.node[kind]
        if not node.admits(now):
            return Refusal.NODE
        buckets = self._buckets(record, partition_id, kind, now)
        if buckets.saved.admits(now) and (
            buckets.allocated.admits(now) or node.tokens >= node.rate * NODE_SPARE_FRACTION
        ):
            return None
        buckets.throttled = True
        return Refusal.PARTITION

    def holds_table_rate(self, record: TableRecord, partition_id: str, kind: Kind) -> bool:
        """Whether the partition is allocated its provisioned table's whole rate (the
        table's only partition, or one adaptive capacity raised that far): its refusal
        is then the table's, which more provisioned throughput would lift."""
        if record.billing_mode == "PAY_PER_REQUEST":
            return False
        buckets = self.partitions.get((record.table_id, partition_id, kind))
        return buckets is not None and buckets.allocated.rate >= table_rate(record, kind)

    def adapt(self, now: float) -> None:
        """Ends an adaptive-capacity period: every table's partitions on this node get
        their next allocation from what they used and whether they were refused."""
        elapsed = max(now - self._period_start, 1e-9)
        self._period_start = now
        tables: dict[tuple[int, Kind], dict[str, PartitionBuckets]] = {}
        for (table_id, partition_id, kind), buckets in self.partitions.items():
            tables.setdefault((table_id, kind), {})[partition_id] = buckets
        for (_, kind), partitions in tables.items():
            # The partitions' records may be of different versions (each is brought up
            # to date at its own next request): the latest-used one is the newest.
            record = max(partitions.values(), key=lambda b: b.allocated.stamp).record
            rate = table_rate(record, kind)
            ceiling = min(rate, PARTITION_MAX_UNITS[kind], self.node[kind].rate)
            loads = {
                pid: adaptive.PartitionLoad(b.share, b.allocated.rate, b.consumed(elapsed), b.throttled)
                for pid, b in partitions.items()
            }
            for pid, allocation in adaptive.allocations(rate, ceiling, loads).items():
                buckets = partitions[pid]
                if allocation > buckets.allocated.rate:
                    key = (record.name, kind)
                    self.boosts[key] = self.boosts.get(key, 0) + 1
                if allocation != buckets.allocated.rate:
                    buckets.allocate(allocation, now)
                buckets.used, buckets.throttled = 0.0, False

    def allocations(self) -> list[tuple[str, str, Kind, float]]:
        """(table, partition, kind, allocated units per second) of every partition
        with buckets: what /metrics shows of adaptive capacity."""
        return [(b.record.name, pid, kind, b.allocated.rate) for (_, pid, kind), b in self.partitions.items()]

    def charge(self, record: TableRecord, partition_id: str, kind: Kind, units: float, now: float) -> None:
        # check() refilled every bucket at this request's arrival; charging needs no refill.
        self.node[kind].tokens -= units
        buckets = self._buckets(record, partition_id, kind, now)
        allocated = buckets.allocated
        # At most a second of debt: a long burst must not leave the partition below its
        # rate afterwards (the savings it spent are the burst's price).
        allocated.tokens = max(allocated.tokens - units, -allocated.rate)
        buckets.saved.tokens -= units
        buckets.used += units

    def forget(self, live_tables: set[int]) -> None:
        for key in [k for k in self.partitions if k[0] not in live_tables]:
            del self.partitions[key]
