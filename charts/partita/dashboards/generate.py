"""Partita's Grafana dashboards, generated as code.

    .venv/bin/python charts/partita/dashboards/generate.py   # rewrites the *.json beside it

One function per dashboard, one small helper per panel kind; the JSON files beside this
script are its output, committed for the chart's Grafana sidecar ConfigMaps (a test
checks they match this script, and that every metric a panel queries is exported by the
code). Dashboard JSON follows Grafana 11's classic model (schemaVersion 39), with a
Prometheus datasource variable and template variables for namespace, table and node;
locally (no Kubernetes) the namespace label is absent and "All" matches that.

Panels exist only for metrics the code exports today. Doorman/admission, replication and
autoadmin dashboards come with the issues that export their metrics (P4, P3, P5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"

# Label filters every query carries, by the variables a dashboard offers.
NS = 'namespace=~"$namespace"'
TABLE = 'table=~"$table"'
NODE = 'node=~"$node"'


def _target(expr: str, legend: str, ref: int) -> dict[str, Any]:
    return {"datasource": DATASOURCE, "expr": expr, "legendFormat": legend, "refId": chr(ord("A") + ref)}


class Layout:
    """Places panels left to right in rows of 24 grid units, and numbers them."""

    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self._x = 0
        self._y = 0
        self._row_height = 0

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(
            {
                "id": len(self.panels) + 1,
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self._y},
                "panels": [],
            }
        )
        self._y += 1

    def _newline(self) -> None:
        if self._x:
            self._y += self._row_height
            self._x = 0
            self._row_height = 0

    def add(self, panel: dict[str, Any], width: int = 12, height: int = 8) -> None:
        if self._x + width > 24:
            self._newline()
        panel["id"] = len(self.panels) + 1
        panel["gridPos"] = {"h": height, "w": width, "x": self._x, "y": self._y}
        self.panels.append(panel)
        self._x += width
        self._row_height = max(self._row_height, height)


def timeseries(title: str, unit: str, *queries: tuple[str, str], description: str = "") -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]}},
        "targets": [_target(expr, legend, i) for i, (expr, legend) in enumerate(queries)],
    }


def table_panel(title: str, unit: str, expr: str, description: str = "") -> dict[str, Any]:
    target = _target(expr, "", 0)
    target.update({"instant": True, "format": "table"})
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"showHeader": True},
        "targets": [target],
        "transformations": [{"id": "organize", "options": {"excludeByName": {"Time": True}}}],
    }


def stat(title: str, unit: str, expr: str) -> dict[str, Any]:
    return {
        "type": "stat",
        "title": title,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value"},
        "targets": [_target(expr, "", 0)],
    }


def variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": name},
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
    }


def dashboard(
    uid: str, title: str, panels: list[dict[str, Any]], variables: list[dict[str, Any]]
) -> dict[str, Any]:
    datasource = {
        "name": "datasource",
        "label": "Prometheus",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
    }
    return {
        "uid": uid,
        "title": title,
        "tags": ["partita"],
        "timezone": "utc",
        "editable": True,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [datasource, *variables]},
        "annotations": {"list": []},
        "links": [{"type": "dashboards", "tags": ["partita"], "title": "Partita", "asDropdown": True}],
        "panels": panels,
    }


def _namespace() -> dict[str, Any]:
    return variable("namespace", "Namespace", "label_values(partita_router_requests_total, namespace)")


def _table() -> dict[str, Any]:
    return variable("table", "Table", "label_values(partita_storage_partition_items, table)")


def _node() -> dict[str, Any]:
    return variable("node", "Node", "label_values(partita_storage_hosted_partitions, node)")


def quantile(q: float, by: str, selector: str) -> str:
    return (
        f"histogram_quantile({q}, sum by (le, {by}) "
        f"(rate(partita_router_request_duration_seconds_bucket{{{selector}}}[{RATE}])))"
    )


def overview() -> dict[str, Any]:
    page = Layout()
    page.row("Requests")
    requests = f"partita_router_requests_total{{{NS}, {TABLE}}}"
    page.add(timeseries(
        "Requests by operation", "reqps",
        (f"sum by (operation) (rate({requests}[{RATE}]))", "{{operation}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Errors by type", "reqps",
        (f'sum by (outcome) (rate(partita_router_requests_total{{{NS}, {TABLE}, outcome!="ok"}}[{RATE}]))',
         "{{outcome}}"),
        description="Answers other than 200, by DynamoDB error type. Throttling errors appear here too.",
    ))  # fmt: skip
    page.add(timeseries(
        "Requests by table", "reqps",
        (f'sum by (table) (rate(partita_router_requests_total{{{NS}, {TABLE}, table!=""}}[{RATE}]))', "{{table}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Error ratio", "percentunit",
        (f'sum(rate(partita_router_requests_total{{{NS}, {TABLE}, outcome!="ok"}}[{RATE}])) / '
         f"sum(rate({requests}[{RATE}]))", "errors / requests"),
    ))  # fmt: skip
    page.row("Latency (router, arrival to answer)")
    page.add(timeseries("p50 latency by operation", "s", (quantile(0.5, "operation", NS), "{{operation}}")))
    page.add(timeseries("p99 latency by operation", "s", (quantile(0.99, "operation", NS), "{{operation}}")))
    page.add(timeseries(
        "In flight", "short",
        (f"sum(partita_router_requests_in_flight{{{NS}}})", "requests in flight"),
    ))  # fmt: skip
    page.add(timeseries(
        "Bytes in and out", "Bps",
        (f"sum(rate(partita_router_request_bytes_total{{{NS}}}[{RATE}]))", "in"),
        (f"sum(rate(partita_router_response_bytes_total{{{NS}}}[{RATE}]))", "out"),
    ))  # fmt: skip
    page.row("Capacity")
    for kind, unit_name in (("read", "RCU"), ("write", "WCU")):
        page.add(timeseries(
            f"Consumed vs provisioned {unit_name} per table", "short",
            (f'sum by (table) (rate(partita_router_consumed_capacity_units_total{{{NS}, {TABLE}, kind="{kind}"}}[{RATE}]))',
             "{{table}} consumed"),
            (f'max by (table) (partita_table_provisioned_capacity_units{{{NS}, {TABLE}, kind="{kind}"}}) > 0',
             "{{table}} provisioned"),
            description="Units per second charged by the storage nodes (metering is always on), against the "
            "table's provisioned throughput (on-demand tables have none).",
        ))  # fmt: skip
    page.add(timeseries(
        "Throttles by layer", "reqps",
        (f"sum by (layer) (rate(partita_router_throttled_requests_total{{{NS}, {TABLE}}}[{RATE}]))", "{{layer}} (router)"),
        (f"sum by (layer) (rate(partita_storage_throttled_requests_total{{{NS}, {TABLE}}}[{RATE}]))", "{{layer}} (storage)"),
        description="Requests refused for throughput, by the layer that refused them: table (the router's "
        "table bucket, fed by Doorman), partition and node (a storage node's buckets).",
    ))  # fmt: skip
    page.add(timeseries(
        "Throttles by table", "reqps",
        (f"sum by (table, kind) (rate(partita_router_throttled_requests_total{{{NS}, {TABLE}}}[{RATE}]))",
         "{{table}} {{kind}} (router)"),
        (f"sum by (table, kind) (rate(partita_storage_throttled_requests_total{{{NS}, {TABLE}}}[{RATE}]))",
         "{{table}} {{kind}} (storage)"),
    ))  # fmt: skip
    page.row("Data path")
    page.add(timeseries(
        "Requests per storage batch (mean)", "short",
        (f"sum by (node) (rate(partita_router_storage_batch_requests_sum{{{NS}}}[{RATE}])) / "
         f"sum by (node) (rate(partita_router_storage_batch_requests_count{{{NS}}}[{RATE}]))", "{{node}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Storage batch p99 round trip", "s",
        (f"histogram_quantile(0.99, sum by (le, node) "
         f"(rate(partita_router_storage_batch_duration_seconds_bucket{{{NS}}}[{RATE}])))", "{{node}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Route refreshes", "ops",
        (f"sum by (reason) (rate(partita_router_route_refreshes_total{{{NS}}}[{RATE}]))", "{{reason}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Storage requests failed as unavailable", "ops",
        (f"sum by (node) (rate(partita_router_storage_unavailable_total{{{NS}}}[{RATE}]))", "{{node}}"),
    ))  # fmt: skip
    return dashboard("partita-overview", "Partita / Overview", page.panels, [_namespace(), _table()])


def tables() -> dict[str, Any]:
    page = Layout()
    items = f"partita_storage_partition_items{{{NS}, {TABLE}}}"
    size = f"partita_storage_partition_size_bytes{{{NS}, {TABLE}}}"
    page.row("Tables")
    # Every router caches every table: the largest count is the cluster's.
    page.add(
        stat("Active tables", "short", f'max(partita_router_tables{{{NS}, status="ACTIVE"}})'),
        width=6,
        height=4,
    )
    page.add(stat("Partitions", "short", f"count({items})"), width=6, height=4)
    page.add(stat("Items", "short", f"sum({items})"), width=6, height=4)
    page.add(stat("Size", "bytes", f"sum({size})"), width=6, height=4)
    page.add(timeseries("Partitions per table", "short", (f"count by (table) ({items})", "{{table}}")))
    page.add(timeseries("Size per table", "bytes", (f"sum by (table) ({size})", "{{table}}"),
                        description="DynamoDB item bytes at the partition leaders' last count (--stats-interval)."))  # fmt: skip
    page.add(timeseries("Items per table", "short", (f"sum by (table) ({items})", "{{table}}")))
    page.add(timeseries(
        "Consumed capacity per table", "short",
        (f"sum by (table) (rate(partita_storage_consumed_read_capacity_units_total{{{NS}, {TABLE}}}[{RATE}]))",
         "{{table}} RCU"),
        (f"sum by (table) (rate(partita_storage_consumed_write_capacity_units_total{{{NS}, {TABLE}}}[{RATE}]))",
         "{{table}} WCU"),
    ))  # fmt: skip
    page.row("Hottest partitions")
    page.add(table_panel(
        "Hottest partitions (read units per second)", "short",
        f"topk(10, sum by (table, partition) "
        f"(rate(partita_storage_consumed_read_capacity_units_total{{{NS}, {TABLE}}}[{RATE}])))",
        description="The heat the autoadmin will split and migrate on (split-for-consumption).",
    ))  # fmt: skip
    page.add(table_panel(
        "Hottest partitions (write units per second)", "short",
        f"topk(10, sum by (table, partition) "
        f"(rate(partita_storage_consumed_write_capacity_units_total{{{NS}, {TABLE}}}[{RATE}])))",
    ))  # fmt: skip
    page.add(
        table_panel("Largest partitions", "bytes", f"topk(10, max by (table, partition) ({size}))"), width=24
    )
    return dashboard("partita-tables", "Partita / Tables", page.panels, [_namespace(), _table()])


def storage() -> dict[str, Any]:
    page = Layout()
    node = f"{{{NS}, {NODE}}}"
    page.row("Partitions")
    page.add(timeseries(
        "Hosted partitions by node and role", "short",
        (f"sum by (node, role) (partita_storage_hosted_partitions{node})", "{{node}} {{role}}"),
        description="With one replica per partition every replica leads itself; with --replication-factor 3 "
        "the nodes report leaders and followers of each group.",
    ))  # fmt: skip
    page.add(timeseries(
        "Replicas placed but not served", "short",
        (f"sum(max by (table) (partita_table_partition_replicas{{{NS}}})) - "
         f"sum(partita_storage_hosted_partitions{{{NS}}})", "not served"),
        description="Replicas the partition maps place minus those the nodes host: above 0 for long, "
        "partitions have lost their replica (alert PartitaReplicasNotServed).",
    ))  # fmt: skip
    page.add(timeseries(
        "Applied LSN growth", "ops",
        (f"sum by (node) (rate(partita_storage_applied_lsn{node}[{RATE}]))", "{{node}}"),
        description="Records applied to RocksDB per second (the applied index's slope).",
    ))  # fmt: skip
    page.row("Replication")
    page.add(timeseries(
        "Replication groups by node and role", "short",
        (f"sum by (node, role) (partita_storage_replication_groups{node})", "{{node}} {{role}}"),
        description="Groups (one per partition replica) each node hosts, by its role in them: leaders "
        "spread evenly over the nodes is the healthy picture.",
    ))  # fmt: skip
    page.add(timeseries(
        "Leader changes and elections", "ops",
        (f"sum by (node) (rate(partita_storage_replication_leader_changes_total{node}[{RATE}]))",
         "{{node}} new leaders"),
        (f"sum by (node) (rate(partita_storage_replication_elections_started_total{node}[{RATE}]))",
         "{{node}} elections started"),
        (f"sum by (node) (rate(partita_storage_replication_elections_avoided_total{node}[{RATE}]))",
         "{{node}} elections avoided (gray-failure check)"),
        description="Elections avoided rising with elections started: followers miss heartbeats their peers "
        "still hear (a lossy link or a slow follower), not a dead leader (alert PartitaLeaderFlapping).",
    ))  # fmt: skip
    page.add(timeseries(
        "Follower lag (entries), worst 10", "short",
        (f"topk(10, max by (group, follower) (partita_storage_replication_follower_lag_entries{{{NS}}}))",
         "{{group}} {{follower}}"),
        description="On each group's leader: log entries each follower is behind (alert PartitaReplicationLag).",
    ))  # fmt: skip
    page.add(timeseries(
        "Commit latency", "s",
        (f"histogram_quantile(0.5, sum by (le, node) (rate(partita_storage_replication_commit_seconds_bucket{node}[{RATE}])))",
         "{{node}} p50"),
        (f"histogram_quantile(0.99, sum by (le, node) (rate(partita_storage_replication_commit_seconds_bucket{node}[{RATE}])))",
         "{{node}} p99"),
        description="From a write's proposal on the leader to its commit on a majority and apply.",
    ))  # fmt: skip
    page.add(timeseries(
        "Lease reads and checksum failures", "ops",
        (f"sum by (node) (rate(partita_storage_replication_lease_reads_total{node}[{RATE}]))", "{{node}} lease reads"),
        (f"sum by (node) (rate(partita_storage_replication_checksum_failures_total{node}[{RATE}]))",
         "{{node}} checksum failures"),
    ))  # fmt: skip
    page.row("Write-ahead log")
    page.add(timeseries(
        "WAL fsync latency", "s",
        (f"histogram_quantile(0.5, sum by (le, node) (rate(partita_storage_wal_sync_duration_seconds_bucket{node}[{RATE}])))",
         "{{node}} p50"),
        (f"histogram_quantile(0.99, sum by (le, node) (rate(partita_storage_wal_sync_duration_seconds_bucket{node}[{RATE}])))",
         "{{node}} p99"),
    ))  # fmt: skip
    page.add(timeseries(
        "WAL appends and fsyncs", "ops",
        (f"sum by (node) (rate(partita_storage_wal_appends_total{node}[{RATE}]))", "{{node}} records"),
        (f"sum by (node) (rate(partita_storage_wal_fsyncs_total{node}[{RATE}]))", "{{node}} fsyncs"),
    ))  # fmt: skip
    page.add(timeseries(
        "Group commit: records per batch (mean)", "short",
        (f"sum by (node) (rate(partita_storage_wal_batch_records_sum{node}[{RATE}])) / "
         f"sum by (node) (rate(partita_storage_wal_batch_records_count{node}[{RATE}]))", "{{node}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "WAL bytes written", "Bps",
        (f"sum by (node) (rate(partita_storage_wal_written_bytes_total{node}[{RATE}]))", "{{node}}"),
    ))  # fmt: skip
    page.row("RocksDB and disk")
    page.add(timeseries(
        "SST bytes and pending compaction", "bytes",
        (f"sum by (node) (partita_storage_rocksdb_sst_bytes{node})", "{{node}} SST"),
        (f"sum by (node) (partita_storage_rocksdb_pending_compaction_bytes{node})", "{{node}} pending compaction"),
    ))  # fmt: skip
    page.add(timeseries(
        "Block cache hit ratio", "percentunit",
        (f"sum by (node) (rate(partita_storage_rocksdb_block_cache_hits_total{node}[{RATE}])) / "
         f"(sum by (node) (rate(partita_storage_rocksdb_block_cache_hits_total{node}[{RATE}])) + "
         f"sum by (node) (rate(partita_storage_rocksdb_block_cache_misses_total{node}[{RATE}])))", "{{node}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Disk free", "percentunit",
        (f"partita_storage_disk_free_bytes{node} / partita_storage_disk_total_bytes{node}", "{{node}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Consumed capacity by node", "short",
        (f"sum by (instance) (rate(partita_storage_consumed_read_capacity_units_total{{{NS}}}[{RATE}]))",
         "{{instance}} RCU"),
        (f"sum by (instance) (rate(partita_storage_consumed_write_capacity_units_total{{{NS}}}[{RATE}]))",
         "{{instance}} WCU"),
    ))  # fmt: skip
    page.row("Processes")
    page.add(timeseries(
        "CPU by process", "percentunit",
        (f'rate(process_cpu_seconds_total{{{NS}, job=~"partita.*"}}[{RATE}])', "{{job}} {{instance}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Resident memory by process", "bytes",
        (f'process_resident_memory_bytes{{{NS}, job=~"partita.*"}}', "{{job}} {{instance}}"),
    ))  # fmt: skip
    return dashboard("partita-storage", "Partita / Storage", page.panels, [_namespace(), _node()])


def _resource() -> dict[str, Any]:
    return variable("resource", "Resource", "label_values(partita_doorman_capacity, resource)")


def admission() -> dict[str, Any]:
    """Doorman (who leases what) and the admission control it feeds."""
    page = Layout()
    resource = 'resource=~"$resource"'
    page.row("Doorman leases")
    page.add(timeseries(
        "Capacity vs leased, per resource", "short",
        (f"max by (resource) (partita_doorman_capacity{{{NS}, {resource}}})", "{{resource}} capacity"),
        (f"max by (resource) (partita_doorman_has{{{NS}, {resource}}})", "{{resource}} leased"),
        description="What the master may lease (a table's provisioned RCU/WCU for table/<name>/rcu|wcu) "
        "against the sum of the leases it granted; leased never exceeds capacity.",
    ))  # fmt: skip
    page.add(timeseries(
        "Wanted, per resource", "short",
        (f"max by (resource) (partita_doorman_wants{{{NS}, {resource}}})", "{{resource}}"),
        description="What the clients (routers) ask for. Above capacity: the resource is contended.",
    ))  # fmt: skip
    page.add(timeseries(
        "Clients, per resource", "short",
        (f"max by (resource) (partita_doorman_clients{{{NS}, {resource}}})", "{{resource}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Learning mode", "short",
        (f"max by (resource) (partita_doorman_learning_mode{{{NS}, {resource}}})", "{{resource}}"),
        description="1 while a new master only echoes existing leases (new clients get nothing).",
    ))  # fmt: skip
    page.row("Doorman servers")
    page.add(timeseries(
        "RPCs by method and result", "ops",
        (f"sum by (method, result) (rate(partita_doorman_requests_total{{{NS}}}[{RATE}]))", "{{method}} {{result}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Master", "short",
        (f"partita_doorman_is_master{{{NS}}}", "{{instance}}"),
        (f"sum(increase(partita_doorman_master_changes_total{{{NS}}}[{RATE}]))", "master changes"),
    ))  # fmt: skip
    page.row("Admission")
    page.add(timeseries(
        "Throttles by layer", "reqps",
        (f"sum by (layer) (rate(partita_router_throttled_requests_total{{{NS}}}[{RATE}]))", "{{layer}} (router)"),
        (f"sum by (layer) (rate(partita_storage_throttled_requests_total{{{NS}}}[{RATE}]))", "{{layer}} (storage)"),
    ))  # fmt: skip
    page.add(timeseries(
        "Consumed vs provisioned WCU per table", "short",
        (f'sum by (table) (rate(partita_router_consumed_capacity_units_total{{{NS}, kind="write"}}[{RATE}]))',
         "{{table}} consumed"),
        (f'max by (table) (partita_table_provisioned_capacity_units{{{NS}, kind="write"}}) > 0', "{{table}} provisioned"),
    ))  # fmt: skip
    return dashboard(
        "partita-admission", "Partita / Admission (Doorman)", page.panels, [_namespace(), _resource()]
    )


def autoadmin() -> dict[str, Any]:
    page = Layout()
    ns = f"{{{NS}}}"
    page.row("Leadership and backlog")
    page.add(stat("Leading autoadmins", "short", f"sum(partita_autoadmin_leader{ns})"), width=6, height=4)
    page.add(
        stat("Unsettled tables", "short", f"max(partita_autoadmin_unsettled_tables{ns})"), width=6, height=4
    )
    page.add(stat(
        "Failed actions (1h)", "short",
        f'sum(increase(partita_autoadmin_action_failures_total{{{NS}, cause="error"}}[1h]))',
    ), width=6, height=4)  # fmt: skip
    page.add(stat(
        "Failed passes (1h)", "short",
        f'sum(increase(partita_autoadmin_passes_total{{{NS}, outcome="failed"}}[1h]))',
    ), width=6, height=4)  # fmt: skip
    page.row("Actions")
    page.add(timeseries(
        "Actions by kind and reason", "short",
        (f"sum by (action, reason) (increase(partita_autoadmin_actions_total{ns}[{RATE}]))",
         "{{action}} ({{reason}})"),
        description="Partitions placed for new tables and split for raised throughput, tables marked "
        "CREATING, activated and deleted, and the control store's scheduled compactions.",
    ))  # fmt: skip
    page.add(timeseries(
        "Failed actions by kind and cause", "short",
        (f"sum by (action, cause) (increase(partita_autoadmin_action_failures_total{ns}[{RATE}]))",
         "{{action}} ({{cause}})"),
        description="conflict: another writer moved the record first and the next pass decides again "
        "(harmless); error: the control store refused or was unreachable (alert PartitaAutoadminActionsFailing).",
    ))  # fmt: skip
    page.add(timeseries(
        "New tables by shuffle-shard bound", "short",
        (f"sum by (shard) (increase(partita_autoadmin_placements_total{ns}[{RATE}]))", "{{shard}}"),
        description="within_bound: the new table's nodes hold at most --shard-max-shared replicas of any "
        "other table's partition; over_bound: the fleet was too small or crowded to keep it apart "
        "(add storage nodes: docs/control-plane.md, Shuffle-sharded placement).",
    ))  # fmt: skip
    page.add(timeseries(
        "Load-based migration", "short",
        (f"max(partita_autoadmin_hot_nodes{ns})", "hot nodes"),
        (f"max(partita_autoadmin_hot_nodes_without_room{ns})", "hot, no room in their zone"),
        (f'sum by (reason) (increase(partita_autoadmin_actions_total{{{NS}, action="move_replica"}}[{RATE}]))',
         "moves started ({{reason}})"),
        description="Storage nodes whose load report is above --migrate-above of their capacity, those "
        "no node of their zone had room for a replica of (add a node to the zone, or split: "
        "docs/control-plane.md, Load-based migration), and replica moves started.",
    ))  # fmt: skip
    page.row("Reconcile passes")
    page.add(timeseries(
        "Passes by outcome", "ops",
        (f"sum by (outcome) (rate(partita_autoadmin_passes_total{ns}[{RATE}]))", "{{outcome}}"),
        description="A pass runs on every control-store change and at least once a second.",
    ))  # fmt: skip
    page.add(timeseries(
        "Pass duration", "s",
        (f"histogram_quantile(0.5, sum by (le) (rate(partita_autoadmin_pass_duration_seconds_bucket{ns}[{RATE}])))",
         "p50"),
        (f"histogram_quantile(0.99, sum by (le) (rate(partita_autoadmin_pass_duration_seconds_bucket{ns}[{RATE}])))",
         "p99"),
    ))  # fmt: skip
    page.add(timeseries(
        "Autoadmin CPU", "percentunit",
        (f'rate(process_cpu_seconds_total{{{NS}, job=~"partita-autoadmin.*"}}[{RATE}])', "{{instance}}"),
    ))  # fmt: skip
    page.add(timeseries(
        "Autoadmin resident memory", "bytes",
        (f'process_resident_memory_bytes{{{NS}, job=~"partita-autoadmin.*"}}', "{{instance}}"),
    ))  # fmt: skip
    return dashboard("partita-autoadmin", "Partita / Autoadmin", page.panels, [_namespace()])


DASHBOARDS = {
    "overview.json": overview,
    "tables.json": tables,
    "storage.json": storage,
    "admission.json": admission,
    "autoadmin.json": autoadmin,
}


def render(build: Any) -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    for name, build in DASHBOARDS.items():
        (HERE / name).write_text(render(build))


if __name__ == "__main__":
    main()
