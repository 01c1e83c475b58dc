"""Defaults shared by the processes of a cluster; each is documented where it is defined."""

from __future__ import annotations

DEFAULT_DATA_DIR = "./.partita"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_ROUTER_PORT = 8000  # the DynamoDB endpoint
DEFAULT_ETCD_PORT = 2379  # etcd client port; the peer port is this + 1
# Storage node i (zones a, b, c): admin gRPC on base + i, data path on base + 100 + i.
DEFAULT_STORAGE_BASE_PORT = 7101
# Storage node i serves /metrics on base + this + i (7301, 7302, 7303 by default).
STORAGE_METRICS_PORT_OFFSET = 200
# Doorman servers of `partita up`: gRPC on base + i, /metrics on base + 100 + i.
DEFAULT_DOORMAN_PORT = 5101
# The autoadmin of `partita up` serves /metrics on the storage base port + this (7400).
AUTOADMIN_METRICS_PORT_OFFSET = 299
DEFAULT_ZONES = ("a", "b", "c")
DEFAULT_REGION = "us-east-1"
DEFAULT_REPLICATION_FACTOR = 3  # replicas of each new partition, in distinct zones where possible
# Seconds a group member may go unheard (or unregistered) before its leader repairs
# around it with a log-only member (docs/replication.md, "Repair").
DEFAULT_REPLICA_DOWN_AFTER_SECONDS = 3.0
# Partitions of a new PAY_PER_REQUEST table (DynamoDB does not publish its figure).
DEFAULT_ON_DEMAND_PARTITIONS = 4
# How often storage nodes recount ItemCount/TableSizeBytes (DynamoDB: about every six
# hours; a pass never takes more than 5% of a node's time however long this is).
DEFAULT_STATS_INTERVAL_SECONDS = 60.0
# How often each partition's leader starts a pass deleting items whose Time to Live has
# expired (DynamoDB: typically within two days; a pass never takes more than 5% of a
# node's time, so a large partition's pass simply takes longer).
DEFAULT_TTL_SWEEP_INTERVAL_SECONDS = 60.0
# How often the autoadmin compacts etcd's history and defragments its database (etcd
# compacts on its own too, but never gives the freed space back without a defrag).
DEFAULT_DEFRAG_INTERVAL_SECONDS = 600.0
# Revisions of etcd history kept when compacting: the database holds at most about this
# many old versions of records (a watcher lagging further behind re-reads, as on resync).
DEFAULT_KEEP_REVISIONS = 1000
# A partition whose items pass this many bytes is split in two by the autoadmin
# (DynamoDB's 10 GB per partition); `--split-size-bytes` lowers it for tests and demos.
DEFAULT_SPLIT_SIZE_BYTES = 10 * 2**30
# A partition whose consumed throughput stayed at or above 80% of its allocation this
# long is split at its load's median key hash (split for consumption).
DEFAULT_SPLIT_HOT_SECONDS = 300.0
# A new table's shuffle shard (a node per replica of each partition) holds at most this
# many replicas of any other table's partition, where the fleet allows: with one, a
# table that takes its nodes down takes at most one replica of any other partition,
# whose group keeps its quorum.
DEFAULT_SHARD_MAX_SHARED = 1


def is_host_port(text: str) -> bool:
    """Whether `text` is host:port with both parts given (an address a peer can dial)."""
    host, sep, port = text.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


def parse_endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or DEFAULT_HOST, int(port)


# Load-based migration (DESIGN.md section 6): a storage node whose load report shows it
# above this share of its capacity (the busier of reads and writes) has a replica moved
# to a node of its zone that stays at or below the second share with it.
DEFAULT_MIGRATE_ABOVE = 0.8
DEFAULT_MIGRATE_ROOM_BELOW = 0.6
# Seconds between a storage node's load reports (each over the interval before it).
DEFAULT_LOAD_REPORT_SECONDS = 10.0
# An idle node (no replica consumed anything) writes its empty report again only every
# this many intervals: every write to etcd moves its revision, and each process then
# reads its listings again (at a thousand tables that is what an idle node costs). Its
# report is current that long (and lives no longer than its registration).
IDLE_LOAD_REPORT_INTERVALS = 30
# A load report stays current for this many of its node's intervals (the lease it is
# written on, and what the autoadmin acts on): a node that stops reporting stops counting.
LOAD_REPORT_LIFETIME_INTERVALS = 3
# A storage node's capacity when not configured: ten partitions at DynamoDB's
# per-partition ceilings (3,000 RCU, 1,000 WCU). Its node buckets' rates, and what its
# load reports are measured against.
DEFAULT_NODE_READ_UNITS = 30000.0
DEFAULT_NODE_WRITE_UNITS = 10000.0
# How long a router's claim on a backup's, restore's or import's copy holds between
# renewals: a dead router's copies wait this long for another router to take them over.
DEFAULT_COPY_CLAIM_SECONDS = 30.0
