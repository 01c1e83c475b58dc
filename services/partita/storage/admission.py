"""Partition and node admission at a storage node (seed 000 section 4.1.1).

Each partition a node serves has, per kind (read, write), two buckets refilled at its
share of the table's rate (the provisioned rate over the partition count; on-demand:
DynamoDB's per-partition ceiling, 3,000 RCU / 1,000 WCU): `allocated`, holding one
second's worth, says whether the partition is within its rate; `saved` keeps up to
300 s of unused throughput. The node has one bucket per kind at its own capacity, the
last line of defence.

A request is admitted when the node is not in debt, the partition has saved tokens,
and either it is within its rate (allocated tokens) or the node has spare tokens: a
partition bursts only while the node can afford it, and only as long as its savings
last. What the request consumed is charged afterwards to all three.

Sans-I/O: the caller passes the time; `StorageAdmission` keeps the buckets and says
which layer refused, nothing else.
"""

from __future__ import annotations

import enum

from partita.common.throughput import Kind
from partita.common.token_bucket import DEFAULT_BURST_SECONDS, TokenBucket, saved_since_creation
from partita.control.model import TableRecord

# DynamoDB's per-partition ceiling, also an on-demand partition's allocation.
PARTITION_MAX_UNITS: dict[Kind, float] = {"read": 3000.0, "write": 1000.0}
# A node's own capacity when not configured: ten partitions at their ceiling.
DEFAULT_NODE_UNITS: dict[Kind, float] = {"read": 30000.0, "write": 10000.0}
# The node is "spare" while it holds at least this share of a second's capacity:
# bursts stop before the node's last tokens, which stay for allocated throughput.
NODE_SPARE_FRACTION = 0.1


class Refusal(enum.Enum):
    PARTITION = "partition"
    NODE = "node"


def partition_rate(record: TableRecord, kind: Kind) -> float:
    if record.billing_mode == "PAY_PER_REQUEST":
        return PARTITION_MAX_UNITS[kind]
    provisioned = record.read_capacity if kind == "read" else record.write_capacity
    share = provisioned / max(1, len(record.partitions))
    return min(share, PARTITION_MAX_UNITS[kind])


class PartitionBuckets:
    __slots__ = ("allocated", "record", "saved")

    def __init__(
        self, record: TableRecord, rate: float, now: float, burst_seconds: float, savings: float
    ) -> None:
        self.record = record  # the version of the table the rate was computed from
        self.allocated = TokenBucket(rate, now, burst_seconds=1.0, tokens=rate)
        self.saved = TokenBucket(rate, now, burst_seconds=burst_seconds, tokens=savings)


class StorageAdmission:
    def __init__(
        self,
        now: float,
        *,
        node_units: dict[Kind, float] | None = None,
        burst_seconds: float = DEFAULT_BURST_SECONDS,
        wall_offset: float | None = None,
    ) -> None:
        units = node_units or DEFAULT_NODE_UNITS
        # The node holds one second of its capacity: it is a ceiling on work, not a saver.
        self.node: dict[Kind, TokenBucket] = {
            kind: TokenBucket(rate, now, burst_seconds=1.0, tokens=rate) for kind, rate in units.items()
        }
        self.burst_seconds = burst_seconds
        # Wall-clock time minus `now`'s clock: a partition's savings start from its
        # table's creation (a wall-clock stamp). None: they start at one second's worth.
        self.wall_offset = wall_offset
        self.partitions: dict[tuple[int, str, Kind], PartitionBuckets] = {}

    def _buckets(self, record: TableRecord, partition_id: str, kind: Kind, now: float) -> PartitionBuckets:
        key = (record.table_id, partition_id, kind)
        buckets = self.partitions.get(key)
        if buckets is None:
            rate = partition_rate(record, kind)
            savings = rate
            if self.wall_offset is not None:
                savings = saved_since_creation(
                    rate, record.created_at, now + self.wall_offset, self.burst_seconds
                )
            buckets = self.partitions[key] = PartitionBuckets(record, rate, now, self.burst_seconds, savings)
        elif buckets.record is not record:  # a new version: UpdateTable, or a split
            buckets.record = record
            rate = partition_rate(record, kind)
            buckets.allocated.set_rate(rate, now)
            buckets.saved.set_rate(rate, now)
        return buckets

    def check(self, record: TableRecord, partition_id: str, kind: Kind, now: float) -> Refusal | None:
        """None to admit; else which layer refuses."""
        node = self.node[kind]
        if not node.admits(now):
            return Refusal.NODE
        buckets = self._buckets(record, partition_id, kind, now)
        if not buckets.saved.admits(now):
            return Refusal.PARTITION
        if buckets.allocated.admits(now) or node.tokens >= node.rate * NODE_SPARE_FRACTION:
            return None
        return Refusal.PARTITION

    def charge(self, record: TableRecord, partition_id: str, kind: Kind, units: float, now: float) -> None:
        # check() refilled every bucket at this request's arrival; charging needs no refill.
        self.node[kind].tokens -= units
        buckets = self._buckets(record, partition_id, kind, now)
        allocated = buckets.allocated
        # At most a second of debt: a long burst must not leave the partition below its
        # rate afterwards (the savings it spent are the burst's price).
        allocated.tokens = max(allocated.tokens - units, -allocated.rate)
        buckets.saved.tokens -= units

    def forget(self, live_tables: set[int]) -> None:
        for key in [k for k in self.partitions if k[0] not in live_tables]:
            del self.partitions[key]
