"""A storage node's metrics (registered in the process registry on import).

Consumed capacity is metered on every request (the response's `capacity_units`) into
per-partition cells the data plane keeps; everything else is read when scraped from
the state that already holds it: the hosted partitions, the WAL's own counters, the
engine's applied LSN, RocksDB's properties and statistics, the last item counts. A
process runs one node; `watch_node` points the snapshot families at it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from partita.common import metrics
from partita.common.metrics import CounterCell

if TYPE_CHECKING:
    from partita.storage.admission import StorageAdmission
    from partita.storage.leader_balance_driver import LeaderBalanceDriver
    from partita.storage.node import NodeState
    from partita.storage.ttl_sweeper import TtlSweeper

CONSUMED_READ = metrics.CounterCells(
    "partita_storage_consumed_read_capacity_units_total",
    "Read capacity units consumed on this node, per table and partition (every request is metered)",
    ("table", "partition"),
)
CONSUMED_WRITE = metrics.CounterCells(
    "partita_storage_consumed_write_capacity_units_total",
    "Write capacity units consumed on this node, per table and partition (failed conditions included)",
    ("table", "partition"),
)
THROTTLED = metrics.CounterCells(
    "partita_storage_throttled_requests_total",
    "Requests this node refused for throughput, by the layer that refused them (partition: "
    "over its rate with no burst left or no spare node capacity; node: the node's own "
    "capacity), table and kind (read, write)",
    ("layer", "table", "kind"),
)
ADAPTIVE_BOOSTS = metrics.Snapshot(
    "partita_storage_adaptive_boosts_total",
    "Times adaptive capacity raised a partition's allocation on this node (a partition "
    "throttled while its table was under its rate), by table and kind",
    ("table", "kind"),
    "counter",
)
PARTITION_ALLOCATION = metrics.Snapshot(
    "partita_storage_partition_allocated_units",
    "Units per second a partition may use on this node: its share of the table's rate, "
    "plus adaptive capacity's boost",
    ("table", "partition", "kind"),
)
HOSTED = metrics.Snapshot(
    "partita_storage_hosted_partitions", "Partition replicas this node hosts, by role", ("node", "role")
)
PARTITION_ITEMS = metrics.Snapshot(
    "partita_storage_partition_items",
    "Items in a partition at the leader's last count (--stats-interval)",
    ("table", "partition"),
)
PARTITION_BYTES = metrics.Snapshot(
    "partita_storage_partition_size_bytes",
    "DynamoDB item bytes in a partition at the leader's last count (--stats-interval)",
    ("table", "partition"),
)
APPLIED_LSN = metrics.Snapshot(
    "partita_storage_applied_lsn", "The last WAL record applied to RocksDB (the applied index)", ("node",)
)
WAL_RECORDS = metrics.Snapshot(
    "partita_storage_wal_appends_total", "WAL records made durable", ("node",), kind="counter"
)
WAL_BYTES = metrics.Snapshot(
    "partita_storage_wal_written_bytes_total",
    "Bytes written to the WAL, headers included",
    ("node",),
    "counter",
)
WAL_FSYNCS = metrics.Snapshot(
    "partita_storage_wal_fsyncs_total", "fdatasyncs of WAL data (one per group commit)", ("node",), "counter"
)
ROCKSDB_SST_BYTES = metrics.Snapshot(
    "partita_storage_rocksdb_sst_bytes", "Total size of RocksDB's SST files", ("node",)
)
ROCKSDB_PENDING_COMPACTION = metrics.Snapshot(
    "partita_storage_rocksdb_pending_compaction_bytes",
    "RocksDB's estimate of the bytes compaction must rewrite",
    ("node",),
)
ROCKSDB_BLOCK_CACHE_HITS = metrics.Snapshot(
    "partita_storage_rocksdb_block_cache_hits_total", "RocksDB block cache hits", ("node",), "counter"
)
ROCKSDB_BLOCK_CACHE_MISSES = metrics.Snapshot(
    "partita_storage_rocksdb_block_cache_misses_total", "RocksDB block cache misses", ("node",), "counter"
)
DISK_FREE = metrics.Snapshot(
    "partita_storage_disk_free_bytes", "Free bytes on the file system holding the node's data", ("node",)
)
DISK_TOTAL = metrics.Snapshot(
    "partita_storage_disk_total_bytes", "Size of the file system holding the node's data", ("node",)
)

REPLICA_GROUPS = metrics.Snapshot(
    "partita_storage_replication_groups",
    "Replication groups this node hosts, by its role in them",
    ("node", "role"),
)
LEADER_CHANGES = metrics.Snapshot(
    "partita_storage_replication_leader_changes_total",
    "Times a replica on this node became its group's leader",
    ("node",),
    "counter",
)
ELECTIONS_STARTED = metrics.Snapshot(
    "partita_storage_replication_elections_started_total",
    "Elections (after a pre-vote) started by replicas on this node",
    ("node",),
    "counter",
)
ELECTIONS_AVOIDED = metrics.Snapshot(
    "partita_storage_replication_elections_avoided_total",
    "Pre-votes abandoned because a peer still heard the leader (the gray-failure check)",
    ("node",),
    "counter",
)
CHECKSUM_FAILURES = metrics.Snapshot(
    "partita_storage_replication_checksum_failures_total",
    "Log entries that failed their CRC32C on send or receive",
    ("node",),
    "counter",
)
LEASE_READS = metrics.Snapshot(
    "partita_storage_replication_lease_reads_total",
    "Strongly consistent reads served under the leader's lease (no round trip)",
    ("node",),
    "counter",
)
FOLLOWER_LAG = metrics.Snapshot(
    "partita_storage_replication_follower_lag_entries",
    "On a group's leader: log entries each follower is behind",
    ("group", "follower"),
)
COMMIT_LATENCY = metrics.HistogramCells(
    "partita_storage_replication_commit_seconds",
    "From a write's proposal on the leader to its commit (durable on a majority) and apply",
    ("node",),
)

LOG_MEMBERS = metrics.Snapshot(
    "partita_storage_replication_log_members",
    "Replication groups in which this node is a log-only member (WAL, no data)",
    ("node",),
)
SNAPSHOTS = metrics.Snapshot(
    "partita_storage_replication_snapshots_total",
    "Partition snapshots this node sent (to a follower behind its log) or installed",
    ("node", "direction"),
    "counter",
)
SNAPSHOT_BYTES = metrics.Snapshot(
    "partita_storage_replication_snapshot_bytes_total",
    "Bytes of partition snapshots sent (chunks) or installed (keys and values)",
    ("node", "direction"),
    "counter",
)
MEMBERSHIP_CHANGES = metrics.Snapshot(
    "partita_storage_replication_membership_changes_total",
    "Membership changes this node proposed as a group's leader (repair), by kind and role",
    ("node", "kind", "role"),
    "counter",
)
LEADER_BALANCE_TRANSFERS = metrics.Snapshot(
    "partita_storage_replication_balance_transfers_total",
    "Leadership transfers this node started to hand a group it led to its preferred leader "
    "(leadership rebalancing)",
    ("node",),
    "counter",
)

WAL_BATCH_NAME = "partita_storage_wal_batch_records"
WAL_SYNC_NAME = "partita_storage_wal_sync_duration_seconds"


class PartitionMeter:
    """The consumption cells of one partition on this node."""

    __slots__ = ("read", "write")

    def __init__(self, table: str, partition: str) -> None:
        self.read: CounterCell = CONSUMED_READ.cell(table, partition)
        self.write: CounterCell = CONSUMED_WRITE.cell(table, partition)


# By (table id, partition id); the data plane reads it directly on every request.
meters: dict[tuple[int, str], PartitionMeter] = {}


def meter_of(table_id: int, table: str, partition: str) -> PartitionMeter:
    """The meter of one hosted partition, made on its first request."""
    meter = meters.get((table_id, partition))
    if meter is None:
        meter = meters[(table_id, partition)] = PartitionMeter(table, partition)
    return meter


def forget_table(table_id: int, name: str) -> None:
    """A table this node dropped leaves the consumption families (and a table hosted
    here again later starts new series)."""
    for key in [k for k in meters if k[0] == table_id]:
        del meters[key]
    CONSUMED_READ.forget(lambda labels: labels[0] == name)
    CONSUMED_WRITE.forget(lambda labels: labels[0] == name)


class _WalHistograms(Collector):
    """The WAL's group-commit batch sizes and sync latencies, from its own counters."""

    def __init__(self) -> None:
        self.state: NodeState | None = None

    def describe(self) -> Iterable[Metric]:
        return [
            HistogramMetricFamily(WAL_BATCH_NAME, "Records per WAL group commit", labels=("node",)),
            HistogramMetricFamily(
                WAL_SYNC_NAME, "Time to write and fdatasync one WAL batch", labels=("node",)
            ),
        ]

    def collect(self) -> Iterable[Metric]:
        batch, sync = self.describe()
        state = self.state
        if state is not None:
            wal = state.engine.wal_metrics
            assert isinstance(batch, HistogramMetricFamily) and isinstance(sync, HistogramMetricFamily)
            batch.add_metric(
                [state.node_id],
                metrics.cumulative_buckets(wal.batch_size_bounds, wal.batch_size_counts),
                float(wal.batch_size_sum),
            )
            cell = wal.sync_seconds
            sync.add_metric([state.node_id], metrics.cumulative_buckets(cell.bounds, cell.counts), cell.sum)
        return [batch, sync]


_wal_histograms = _WalHistograms()
metrics.REGISTRY.register(_wal_histograms)

_STAT_LINE = re.compile(r"^(rocksdb\.[a-z.]+) COUNT : (\d+)$", re.MULTILINE)


def rocksdb_tickers(statistics: str | None) -> dict[str, int]:
    """RocksDB's ticker counters from its statistics dump (`name COUNT : n` lines)."""
    return {m[1]: int(m[2]) for m in _STAT_LINE.finditer(statistics or "")}


TTL_DELETED = metrics.Snapshot(
    "partita_storage_ttl_deleted_items_total",
    "Items deleted because their Time to Live expired (service deletions)",
    ("node",),
    "counter",
)
TTL_SKIPPED = metrics.Snapshot(
    "partita_storage_ttl_skipped_items_total",
    "Expired-looking items the sweeper left: extended or gone by the moment of deletion",
    ("node",),
    "counter",
)
TTL_PASSES = metrics.Snapshot(
    "partita_storage_ttl_sweep_passes_total", "Completed passes of the TTL sweeper", ("node",), "counter"
)


def watch_ttl_sweeper(state: NodeState, sweeper: TtlSweeper) -> None:
    """Read the TTL sweeper's counters when scraped."""
    TTL_DELETED.read = lambda: _one(state, float(sweeper.deleted))
    TTL_SKIPPED.read = lambda: _one(state, float(sweeper.skipped))
    TTL_PASSES.read = lambda: _one(state, float(sweeper.passes))


def _one(state: NodeState, value: float) -> Sequence[tuple[Sequence[str], float]]:
    return [((state.node_id,), value)]


def watch_replication(state: NodeState) -> None:
    """The replication families, read from the node's replica host when scraped."""
    host = state.replicas
    if host is None:
        return
    node = state.node_id
    host.commit_latency = COMMIT_LATENCY.cell(node)

    def total(field: str) -> Sequence[tuple[Sequence[str], float]]:
        return _one(state, float(sum(getattr(r.counters, field) for r in host.multi.replicas.values())))

    def groups() -> list[tuple[Sequence[str], float]]:
        leading = len(host.multi.leading())
        return [
            ((node, "leader"), float(leading)),
            ((node, "follower"), float(len(host.multi.replicas) - leading)),
        ]

    def lag() -> list[tuple[Sequence[str], float]]:
        out: list[tuple[Sequence[str], float]] = []
        for group in host.multi.leading():
            report = host.leadership(group)
            if report is not None:
                out.extend(((group, follower), float(behind)) for follower, behind in report.lag.items())
        return out

    REPLICA_GROUPS.read = groups
    LEADER_CHANGES.read = lambda: total("leader_terms")
    ELECTIONS_STARTED.read = lambda: total("elections_started")
    ELECTIONS_AVOIDED.read = lambda: total("elections_avoided")
    CHECKSUM_FAILURES.read = lambda: total("checksum_failures")
    LEASE_READS.read = lambda: total("lease_reads")
    FOLLOWER_LAG.read = lag
    LOG_MEMBERS.read = lambda: _one(state, float(host.log_member_groups))
    SNAPSHOTS.read = lambda: [
        ((node, "sent"), float(host.snapshots_sent)),
        ((node, "installed"), float(host.snapshots_installed)),
    ]
    SNAPSHOT_BYTES.read = lambda: [
        ((node, "sent"), float(host.snapshot_bytes_sent)),
        ((node, "installed"), float(host.snapshot_bytes_installed)),
    ]
    MEMBERSHIP_CHANGES.read = lambda: [
        ((node, kind, role), float(n))
        for (kind, role), n in (state.repair.changes if state.repair else {}).items()
    ]


def watch_leader_balance(state: NodeState, driver: LeaderBalanceDriver) -> None:
    """Read leadership rebalancing's counter from the node's driver when scraped."""
    LEADER_BALANCE_TRANSFERS.read = lambda: _one(state, float(driver.started))


def watch_admission(admission: StorageAdmission) -> None:
    """Read adaptive capacity's families from this node's buckets when scraped."""
    ADAPTIVE_BOOSTS.read = lambda: [((t, k), float(n)) for (t, k), n in admission.boosts.items()]
    PARTITION_ALLOCATION.read = lambda: [((t, p, k), rate) for t, p, k, rate in admission.allocations()]


def watch_node(state: NodeState) -> None:
    """Read the snapshot families from this node's state when scraped."""
    engine = state.engine
    node = state.node_id
    _wal_histograms.state = state

    def hosted() -> list[tuple[Sequence[str], float]]:
        leading = sum(state.leads(t, p) for t, h in state.hosted.items() for p in h.partitions)
        count = sum(len(h.partitions) for h in state.hosted.values())
        return [((node, "leader"), float(leading)), ((node, "follower"), float(count - leading))]

    def figures(size: bool) -> list[tuple[Sequence[str], float]]:
        names = {table_id: h.record.name for table_id, h in state.hosted.items()}
        return [
            ((names[table_id], partition), float(f.size_bytes if size else f.item_count))
            for (table_id, partition), f in state.partition_figures.items()
            if table_id in names
        ]

    HOSTED.read = hosted
    PARTITION_ITEMS.read = lambda: figures(size=False)
    PARTITION_BYTES.read = lambda: figures(size=True)
    APPLIED_LSN.read = lambda: _one(state, float(engine.applied_lsn))
    WAL_RECORDS.read = lambda: _one(state, float(engine.wal_metrics.records))
    WAL_BYTES.read = lambda: _one(state, float(engine.wal_metrics.bytes_written))
    WAL_FSYNCS.read = lambda: _one(state, float(engine.wal_metrics.fsyncs))
    ROCKSDB_SST_BYTES.read = lambda: _one(
        state, float(engine.rocksdb_property("rocksdb.total-sst-files-size"))
    )
    ROCKSDB_PENDING_COMPACTION.read = lambda: _one(
        state, float(engine.rocksdb_property("rocksdb.estimate-pending-compaction-bytes"))
    )
    ROCKSDB_BLOCK_CACHE_HITS.read = lambda: _one(
        state, float(rocksdb_tickers(engine.rocksdb_statistics()).get("rocksdb.block.cache.hit", 0))
    )
    ROCKSDB_BLOCK_CACHE_MISSES.read = lambda: _one(
        state, float(rocksdb_tickers(engine.rocksdb_statistics()).get("rocksdb.block.cache.miss", 0))
    )
    watch_replication(state)
    DISK_FREE.read = lambda: _one(state, float(engine.disk_usage()[0]))
    DISK_TOTAL.read = lambda: _one(state, float(engine.disk_usage()[1]))
