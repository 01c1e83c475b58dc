"""The request router's metrics (registered in the process registry on import).

Per request the router touches plain-number cells it found once per label set
(`RequestCells`), never a label lookup in prometheus-client. Label sets are bounded:
operations are the dispatch table's names (or "unknown"), tables are only those the
router's cache knows (a flood of made-up names is counted under table=""), outcomes
are "ok" or a DynamoDB error type.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from partita.common import metrics
from partita.common.metrics import CounterCell, HistogramCell

REQUESTS = metrics.CounterCells(
    "partita_router_requests_total",
    "DynamoDB requests answered, by operation, table and outcome (ok or the DynamoDB error type)",
    ("operation", "table", "outcome"),
)
REQUEST_SECONDS = metrics.HistogramCells(
    "partita_router_request_duration_seconds",
    "Time from a request's arrival to its answer, by operation",
    ("operation",),
)
REQUEST_BYTES = metrics.CounterCells(
    "partita_router_request_bytes_total", "Request body bytes received, by operation", ("operation",)
)
RESPONSE_BYTES = metrics.CounterCells(
    "partita_router_response_bytes_total", "Response body bytes sent, by operation", ("operation",)
)
IN_FLIGHT = metrics.Snapshot(
    "partita_router_requests_in_flight", "DynamoDB requests received and not yet answered", ()
)
CONSUMED = metrics.CounterCells(
    "partita_router_consumed_capacity_units_total",
    "Capacity units the storage nodes charged for this router's requests, by table and kind (read, write)",
    ("table", "kind"),
)
THROTTLED = metrics.CounterCells(
    "partita_router_throttled_requests_total",
    "Requests the router refused for throughput, by the layer that refused them (table: its "
    "table bucket, fed by Doorman; control: the control-plane rate), table and kind (read, write; "
    "control for control-plane calls)",
    ("layer", "table", "kind"),
)
ROUTE_REFRESHES = metrics.counter(
    "partita_router_route_refreshes_total",
    "Reads of the control store's tables and nodes, by reason (resync: the periodic or "
    "watch-driven refresh; request: asked for by a request, e.g. after WRONG_PARTITION)",
    ("reason",),
)
TABLES = metrics.Snapshot("partita_router_tables", "Tables in the router's cache, by status", ("status",))
PLACED_REPLICAS = metrics.Snapshot(
    "partita_table_partition_replicas",
    "Partition replicas the partition map places, per table not being deleted: what the "
    "storage nodes should host between them (partita_storage_hosted_partitions)",
    ("table",),
)
PROVISIONED = metrics.Snapshot(
    "partita_table_provisioned_capacity_units",
    "Provisioned read and write capacity units per table (0 for on-demand tables)",
    ("table", "kind"),
)
STORAGE_BATCH_SIZE = metrics.HistogramCells(
    "partita_router_storage_batch_requests",
    "Requests per data-path batch sent to a storage node, by node data address",
    ("node",),
    buckets=metrics.BATCH_SIZE_BUCKETS,
)
STORAGE_BATCH_SECONDS = metrics.HistogramCells(
    "partita_router_storage_batch_duration_seconds",
    "Time from sending a data-path batch to a storage node to its first answer, by node",
    ("node",),
)
STORAGE_UNAVAILABLE = metrics.CounterCells(
    "partita_router_storage_unavailable_total",
    "Data-path requests failed as UNAVAILABLE (lost connection, unreachable node, timeout), by node",
    ("node",),
)
READ_FLOOR_DETOURS = metrics.CounterCells(
    "partita_router_read_floor_detours_total",
    "Eventually consistent reads a replica answered NOT_LEADER because it had not yet applied a "
    "write this router saw acknowledged (the read's floor), and which went to the leader instead",
    (),
)
READ_FLOOR_DETOUR = READ_FLOOR_DETOURS.cell()

# Requests received; those answered are the sum of REQUESTS, so the number in flight is
# read at scrape time and a request costs one increment for it, not two. ABANDONED
# counts requests whose client went away before the answer (their task was cancelled).
RECEIVED = CounterCell()
ABANDONED = CounterCell()
IN_FLIGHT.read = lambda: [((), RECEIVED.value - ABANDONED.value - sum(c.value for c in REQUESTS.cells()))]

NO_TABLE = ""


class RequestCells:
    """The cells one (operation, table, outcome)'s requests feed, found once: the count,
    and the operation's latency and byte counters."""

    __slots__ = ("bytes_in", "bytes_out", "count", "latency")

    def __init__(self, operation: str, table: str, outcome: str) -> None:
        self.count: CounterCell = REQUESTS.cell(operation, table, outcome)
        self.latency: HistogramCell = REQUEST_SECONDS.cell(operation)
        self.bytes_in: CounterCell = REQUEST_BYTES.cell(operation)
        self.bytes_out: CounterCell = RESPONSE_BYTES.cell(operation)


# By (operation, table, outcome); the front door reads it directly on every request.
request_cells: dict[tuple[str, str, str], RequestCells] = {}


def new_request_cells(operation: str, table: str, outcome: str) -> RequestCells:
    cells = request_cells[(operation, table, outcome)] = RequestCells(operation, table, outcome)
    return cells


def consumed_cells(table: str) -> tuple[CounterCell, CounterCell]:
    """(read, write) capacity cells of a table."""
    return CONSUMED.cell(table, "read"), CONSUMED.cell(table, "write")


def provisioned(tables: Sequence[tuple[str, int, int]]) -> Iterator[tuple[tuple[str, str], float]]:
    for name, rcu, wcu in tables:
        yield (name, "read"), float(rcu)
        yield (name, "write"), float(wcu)
