"""Table-level admission at the router (seed 000 section 4; DESIGN.md section 5).

One token bucket per (table, read|write), refilled at the rate this router may use:
its Doorman lease on `table/<name>/rcu` or `table/<name>/wcu` (the autoadmin sets those
resources' capacity to the provisioned throughput, or an on-demand table's allowance
across the cluster, and Doorman shares it among the routers), or, with no Doorman,
the table's whole provisioned rate or on-demand allowance (twice the previous peak
this router saw; one router).

A request is admitted while the bucket is not empty and charged afterwards what the
storage nodes metered for it: the charge is read from the metering counters
(partita_router_consumed_capacity_units_total) at the table's next admission, so the
data path needs no hook of its own and the hot path pays a dict lookup, a clock read
and a few float operations, never a Doorman round trip (leases refresh in the
background).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from partita.common import errors, throughput
from partita.common.errors import DynamoError
from partita.common.metrics import CounterCell
from partita.common.throughput import Kind, PeakTracker
from partita.common.token_bucket import DEFAULT_BURST_SECONDS, TokenBucket, full_savings
from partita.control.model import TableRecord
from partita.router import metrics
from partita.router.index_capacity import is_index

# Operations whose table is charged, and for which kind of capacity.
KIND_OF: dict[str, Kind] = {
    "GetItem": "read",
    "Query": "read",
    "Scan": "read",
    "BatchGetItem": "read",
    "PutItem": "write",
    "UpdateItem": "write",
    "DeleteItem": "write",
    "BatchWriteItem": "write",
    "TransactGetItems": "read",
    "TransactWriteItems": "write",
}
# Unused provisioned throughput kept for bursts (DynamoDB: five minutes).
BURST_SECONDS = DEFAULT_BURST_SECONDS
# An on-demand table's burst: thirty seconds of its allowance, not 300 (its allowance
# grows with its peak instead, and a long load is held to the Doorman lease). DynamoDB
# takes 8,000 WCU within half a second on a new on-demand table, twice its 4,000 WCU
# allowance (Alternator's DynamoDB-verified test_scan_paging_missing_limit), and about
# 21,000 within a second (test_transact.py: a 5 MB batch, then 5 MB and 3 MB
# transactions, each item written costing two units), after which the file's next
# requests still succeed: five seconds' worth (20,000) left the table in debt and them
# throttled.
ON_DEMAND_BURST_SECONDS = 30.0
# Control-plane operations share one bucket per router: DynamoDB answers their excess with
# ThrottlingException ("Rate of requests exceeds the allowed throughput.").
CONTROL_PLANE = frozenset(
    {
        "CreateTable",
        "UpdateTable",
        "DeleteTable",
        "DescribeTable",
        "ListTables",
        "UpdateTimeToLive",
        "DescribeTimeToLive",
        "TagResource",
        "UntagResource",
        "ListTagsOfResource",
        "DescribeLimits",
        "PutResourcePolicy",
        "GetResourcePolicy",
        "DeleteResourcePolicy",
        "DescribeContinuousBackups",
        "UpdateContinuousBackups",
        "RestoreTableToPointInTime",
        "DescribeContributorInsights",
        "UpdateContributorInsights",
        "ListContributorInsights",
        "DescribeKinesisStreamingDestination",
        "EnableKinesisStreamingDestination",
        "UpdateKinesisStreamingDestination",
        "DisableKinesisStreamingDestination",
        "CreateBackup",
        "DescribeBackup",
        "ListBackups",
        "DeleteBackup",
        "RestoreTableFromBackup",
        "ImportTable",
        "DescribeImport",
        "ListImports",
        "ExportTableToPointInTime",
        "DescribeExport",
        "ListExports",
    }
)
# Per router, per second; a second's worth may come at once.
CONTROL_PLANE_RATE = 100.0
# Requests over which a table's cost per request is averaged (then halved, so it follows).
COST_WINDOW = 8
_RESOURCE_SUFFIX: dict[Kind, str] = {"read": "rcu", "write": "wcu"}


def resource_id(table: str, kind: Kind) -> str:
    return f"table/{table}/{_RESOURCE_SUFFIX[kind]}"


class RateSource(Protocol):
    """The rate (units per second) this router may admit for a table."""

    def rate(self, record: TableRecord, kind: Kind) -> float:
        """A provisioned table's."""
        ...

    def on_demand_rate(self, record: TableRecord, kind: Kind, allowance: float) -> float:
        """An on-demand table's, given the allowance of the traffic this router saw."""
        ...

    def used(self, record: TableRecord, kind: Kind, units: float, throttled: bool) -> None:
        """The table's demand since the last call, so the source can ask for it: what it
        consumed, plus, when `throttled`, what the refused request would have cost."""
        ...


def provisioned_rate(record: TableRecord, kind: Kind) -> float:
    return float(record.read_capacity if kind == "read" else record.write_capacity)


class ProvisionedRate:
    """No Doorman: this router alone admits the table's provisioned throughput."""

    def rate(self, record: TableRecord, kind: Kind) -> float:
        return provisioned_rate(record, kind)

    def on_demand_rate(self, record: TableRecord, kind: Kind, allowance: float) -> float:
        return allowance

    def used(self, record: TableRecord, kind: Kind, units: float, throttled: bool) -> None:
        return None


class TableBucket:
    """One table's bucket for one kind, and the metering cell it is charged from."""

    __slots__ = ("admitted", "bucket", "consumed", "peak", "seen", "table_id", "units")

    def __init__(
        self, record: TableRecord, kind: Kind, consumed: CounterCell, rate: float, now: float, tokens: float
    ) -> None:
        # A table deleted and created again under its name is a new table: new savings.
        self.table_id = record.table_id
        self.consumed = consumed
        self.seen = consumed.value
        # A fresh table (or a router just started) can serve at once: the bucket starts
        # with the table's savings (full; see full_savings), or one second's worth.
        self.bucket = TokenBucket(rate, now, tokens=tokens)
        self.peak = PeakTracker(now, consumed.value)
        # Units consumed per admitted request, recent ones weighing most: a refused
        # request's cost is not known (DynamoDB charges after the work), and counting it
        # as one unit would hide the demand of a table of large items from Doorman.
        self.units = 0.0
        self.admitted = 0

    def per_request(self) -> float:
        return max(1.0, self.units / self.admitted) if self.admitted else 1.0

    def count(self, used: float, admitted: bool) -> None:
        """`used`: consumed since the last call (by requests admitted before it)."""
        self.units += used
        self.admitted += admitted
        if self.admitted >= COST_WINDOW:
            self.units /= 2
            self.admitted //= 2


class Admission:
    def __init__(
        self,
        source: RateSource,
        *,
        clock: Callable[[], float] = time.monotonic,
        table_arn: Callable[[str], str] = lambda name: name,
        control_plane_rate: float = CONTROL_PLANE_RATE,
        start_full: bool = False,
    ) -> None:
        self.source = source
        self.clock = clock
        # True (the routers): a table's first bucket holds its whole burst, as DynamoDB
        # admits a short load on a new or idle table at once; False: one second's worth
        # (tests that count the rate alone).
        self.start_full = start_full
        now = clock()
        self._control = TokenBucket(control_plane_rate, now, burst_seconds=1.0, tokens=control_plane_rate)
        self.table_arn = table_arn
        self._buckets: dict[tuple[str, Kind], TableBucket] = {}
        self._throttled: dict[tuple[str, Kind], CounterCell] = {}

    def admit(self, record: TableRecord, kind: Kind) -> None:
        """Raises ProvisionedThroughputExceededException when the table is over its rate."""
        now = self.clock()
        key = (record.name, kind)
        state = self._buckets.get(key)
        if state is None or state.table_id != record.table_id:
            consumed = metrics.consumed_cells(record.name)[0 if kind == "read" else 1]
            first = self._rate(record, kind, None)
            state = self._buckets[key] = TableBucket(
                record, kind, consumed, first, now, self._savings(record, kind, first)
            )
        used = state.consumed.value - state.seen
        state.seen = state.consumed.value
        bucket = state.bucket
        # On-demand tables save a few seconds, not 300: their allowance grows with their peak.
        bucket.burst_seconds = (
            ON_DEMAND_BURST_SECONDS if record.billing_mode == "PAY_PER_REQUEST" else BURST_SECONDS
        )
        rate = self._rate(record, kind, state)
        bucket.set_rate(rate, now, self._cap(record, kind, rate))
        if used:
            bucket.charge(used, now)
        admitted = bucket.tokens > 0
        state.count(used, admitted)
        self.source.used(record, kind, used if admitted else used + state.per_request(), not admitted)
        if not admitted:
            self._count_throttle(record.name, kind)
            raise self.exceeded(record, kind)

    def _cap(self, record: TableRecord, kind: Kind, rate: float) -> float:
        """A provisioned table's savings are capped at its whole rate's burst, whatever
        this router's share: a Doorman lease of zero (learning mode after a master
        change, or the other routers hold the rate) stops the refill but keeps what
        was saved. On-demand: ON_DEMAND_BURST_SECONDS of the allowance, and never less
        than that of a new table's (4,000 WCU / 12,000 RCU), which DynamoDB admits at
        once even while this router's lease is only its share of it."""
        if record.billing_mode == "PAY_PER_REQUEST":
            initial = throughput.on_demand_allowance(0.0, kind, record.warm_throughput)
            ceiling = throughput.on_demand_ceiling(record.on_demand_max, kind)
            return min(max(rate, initial), ceiling) * ON_DEMAND_BURST_SECONDS
        return provisioned_rate(record, kind) * BURST_SECONDS

    def _savings(self, record: TableRecord, kind: Kind, rate: float) -> float:
        if not self.start_full:
            return rate
        if record.billing_mode == "PAY_PER_REQUEST":
            return self._cap(record, kind, rate)
        return full_savings(provisioned_rate(record, kind), BURST_SECONDS)

    def admit_control(self) -> None:
        """Raises ThrottlingException when control-plane calls come faster than the rate."""
        if not self._control.take(1.0, self.clock()):
            metrics.THROTTLED.inc(("control", metrics.NO_TABLE, "control"))
            raise errors.throttling()

    def _rate(self, record: TableRecord, kind: Kind, state: TableBucket | None) -> float:
        if record.billing_mode == "PAY_PER_REQUEST":
            allowance = min(
                self._allowance(record, kind, state), throughput.on_demand_ceiling(record.on_demand_max, kind)
            )
            return self.source.on_demand_rate(record, kind, allowance)
        return self.source.rate(record, kind)

    def _allowance(self, record: TableRecord, kind: Kind, state: TableBucket | None) -> float:
        """What an on-demand table's peak (and warm throughput) lets it take now."""
        peak = 0.0 if state is None else state.peak.peak(self.clock(), state.consumed.value)
        return throughput.on_demand_allowance(peak, kind, record.warm_throughput)

    def exceeded(self, record: TableRecord, kind: Kind) -> DynamoError:
        operation = "Read" if kind == "read" else "Write"
        # A global index admitted as a table of its own (router/index_capacity.py): its
        # name is "<table>/index/<index>", so its ARN is the index's.
        resource = "Index" if is_index(record.name) else "Table"
        limit = "ProvisionedThroughputExceeded"
        if record.billing_mode == "PAY_PER_REQUEST":
            # The table's own maximum, when that is what held it back; else its allowance.
            ceiling = throughput.on_demand_ceiling(record.on_demand_max, kind)
            at_ceiling = ceiling <= self._allowance(record, kind, self._buckets.get((record.name, kind)))
            limit = "MaxOnDemandThroughputExceeded" if at_ceiling else "AccountLimitExceeded"
        reasons = [(f"{resource}{operation}{limit}", self.table_arn(record.name))]
        if resource == "Index":
            return errors.index_throughput_exceeded(reasons)
        return errors.provisioned_throughput_exceeded(reasons)

    def _count_throttle(self, table: str, kind: Kind) -> None:
        cell = self._throttled.get((table, kind))
        if cell is None:
            cell = self._throttled[(table, kind)] = metrics.THROTTLED.cell("table", table, kind)
        cell.value += 1

    def forget(self, live: set[str]) -> None:
        """Drops the buckets of tables that no longer exist."""
        for key in [k for k in self._buckets if k[0] not in live]:
            del self._buckets[key]
