"""Metrics and logs of a real local cluster: every process serves /metrics, the
figures follow real requests made with boto3, `partita status` and `partita up` say
where the endpoints are, and the processes write JSON log lines with request ids."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.cluster import Cluster, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-metrics")]

TABLE = "Metered"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(Path(tmp_path_factory.mktemp("metrics-cluster")), "--stats-interval", "0.3") as c:
        ddb = c.client()
        ddb.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        wait_active(ddb, TABLE)
        for i in range(20):
            ddb.put_item(TableName=TABLE, Item={"pk": {"S": f"k{i}"}, "v": {"S": "x" * 100}})
        for i in range(20):
            ddb.get_item(TableName=TABLE, Key={"pk": {"S": f"k{i}"}})  # eventually consistent: 0.5 RCU
        yield c


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def endpoints(cluster: Cluster) -> dict[str, str]:
    found: dict[str, str] = cluster.cluster_file()["metrics"]
    return found


def storage_total(cluster: Cluster, name: str, **labels: str) -> float:
    return sum(
        total(scrape(url), name, **labels) for n, url in endpoints(cluster).items() if n.startswith("storage")
    )


def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.2)


def test_up_and_status_print_every_metrics_endpoint(cluster: Cluster) -> None:
    urls = endpoints(cluster)
    # Processes added later (metadata, Doorman) join this list.
    assert set(urls) >= {"etcd", "storage-a", "storage-b", "storage-c", "router", "autoadmin"}
    assert urls["router"] == f"{cluster.endpoint}/metrics"
    log = cluster.read_log()
    assert "Metrics (Prometheus text format):" in log
    for url in urls.values():
        assert url in log
    status = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", "status", "--data-dir", str(cluster.data_dir)],
        capture_output=True,
        check=True,
        timeout=30,
    )
    assert json.loads(status.stdout)["metrics"] == urls


def test_every_endpoint_answers_a_scrape(cluster: Cluster) -> None:
    for name, url in endpoints(cluster).items():
        samples = scrape(url)
        assert samples, name
        if name != "etcd":
            assert total(samples, "process_cpu_seconds_total") > 0


def test_the_router_counts_requests_latency_and_consumed_capacity_by_table(cluster: Cluster) -> None:
    samples = scrape(endpoints(cluster)["router"])
    ok = total(samples, "partita_router_requests_total", operation="GetItem", table=TABLE, outcome="ok")
    assert ok == 20
    assert (
        total(samples, "partita_router_requests_total", operation="PutItem", table=TABLE, outcome="ok") == 20
    )
    assert total(samples, "partita_router_request_duration_seconds_count", operation="GetItem") == 20
    assert total(samples, "partita_router_consumed_capacity_units_total", table=TABLE, kind="read") == 10
    assert total(samples, "partita_router_consumed_capacity_units_total", table=TABLE, kind="write") == 20
    assert total(samples, "partita_router_storage_batch_requests_count") >= 1
    assert total(samples, "partita_router_route_refreshes_total", reason="resync") >= 1
    assert total(samples, "partita_router_tables", status="ACTIVE") >= 1
    # The replicas the map places are the replicas the nodes host: 4 partitions, each on
    # the three nodes (replication factor 3, the default).
    placed = total(samples, "partita_table_partition_replicas", table=TABLE)
    assert placed == 4 * 3 == storage_total(cluster, "partita_storage_hosted_partitions")


def test_storage_nodes_meter_every_request_per_partition(cluster: Cluster) -> None:
    # The client never asked for ReturnConsumedCapacity: metering is always on.
    assert storage_total(cluster, "partita_storage_consumed_read_capacity_units_total", table=TABLE) == 10
    assert storage_total(cluster, "partita_storage_consumed_write_capacity_units_total", table=TABLE) == 20
    assert storage_total(cluster, "partita_storage_hosted_partitions") >= 4  # 4 on-demand partitions
    assert storage_total(cluster, "partita_storage_wal_appends_total") >= 20
    assert storage_total(cluster, "partita_storage_wal_fsyncs_total") >= 1
    assert storage_total(cluster, "partita_storage_wal_sync_duration_seconds_count") >= 1
    assert storage_total(cluster, "partita_storage_wal_batch_records_count") >= 1
    assert storage_total(cluster, "partita_storage_applied_lsn") >= 20
    assert storage_total(cluster, "partita_storage_disk_total_bytes") > 0
    eventually(lambda: storage_total(cluster, "partita_storage_partition_items", table=TABLE) == 20)


def test_the_autoadmin_counts_the_actions_that_brought_the_table_up(cluster: Cluster) -> None:
    samples = scrape(endpoints(cluster)["autoadmin"])
    assert total(samples, "partita_autoadmin_leader") == 1
    # The one table: its partitions placed, then CREATING, then ACTIVE once served.
    for action, reason in (
        ("place_partitions", "new_table"),
        ("mark_creating", "partitions_placed"),
        ("activate_table", "replicas_ready"),
    ):
        assert total(samples, "partita_autoadmin_actions_total", action=action, reason=reason) == 1
    assert total(samples, "partita_autoadmin_action_failures_total", cause="error") == 0
    assert total(samples, "partita_autoadmin_passes_total", outcome="ok") >= 1
    assert total(samples, "partita_autoadmin_unsettled_tables") == 0
    lines = (cluster.data_dir / "logs" / "autoadmin.log").read_text().splitlines()
    assert any(json.loads(raw)["process"] == "autoadmin" for raw in lines if raw.startswith("{"))


def test_processes_log_json_lines_and_a_rejected_request_with_its_request_id(cluster: Cluster) -> None:
    ddb = cluster.client()
    with pytest.raises(ddb.exceptions.ResourceNotFoundException) as caught:
        ddb.describe_table(TableName="NoSuchTable")
    request_id = caught.value.response["ResponseMetadata"]["RequestId"]
    router_log = cluster.data_dir / "logs" / "router.log"

    def logged() -> bool:
        return any(
            line.get("request_id") == request_id
            for line in (
                json.loads(raw) for raw in router_log.read_text().splitlines() if raw.startswith("{")
            )
        )

    eventually(logged, timeout=5)
    lines = [json.loads(raw) for raw in router_log.read_text().splitlines() if raw.startswith("{")]
    line = next(entry for entry in lines if entry.get("request_id") == request_id)
    assert line["level"] == "info" and line["process"] == "router"
    assert line["operation"] == "DescribeTable"
    assert line["error_type"] == "ResourceNotFoundException"
    storage_lines = (cluster.data_dir / "logs" / "storage-a.log").read_text().splitlines()
    assert any(json.loads(raw)["process"] == "storage-a" for raw in storage_lines if raw.startswith("{"))


def exported_families(url: str) -> set[str]:
    """Every series name a real process declares on /metrics (families without samples
    yet included: their HELP and TYPE lines are there)."""
    from partita.common.metrics import series_names

    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        n for family in text_string_to_metric_families(text) for n in series_names(family.name, family.type)
    }


def test_every_metric_the_dashboards_and_alerts_use_is_served_by_the_running_cluster(
    cluster: Cluster,
) -> None:
    from tests import observability_queries as q

    served = set().union(*(exported_families(url) for url in endpoints(cluster).values())) | q.SYNTHETIC
    missing = {name: where for name, where in q.used_metrics().items() if name not in served}
    assert not missing, f"queried but not served: {missing}"


def test_top_once_prints_a_frame_with_the_tables_traffic(cluster: Cluster) -> None:
    ddb = cluster.client()
    top = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "partita.cli.main",
            "top",
            "--data-dir",
            str(cluster.data_dir),
            "--once",
            "--interval",
            "2",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    i = 0
    while top.poll() is None and time.monotonic() < deadline:  # traffic while it measures
        ddb.get_item(TableName=TABLE, Key={"pk": {"S": f"k{i % 20}"}})
        i += 1
    out, _ = top.communicate(timeout=30)
    assert top.returncode == 0
    row = next(line for line in out.splitlines() if line.startswith(TABLE))
    assert float(row.split()[1]) > 0  # requests per second
    assert any(line.startswith("GetItem") for line in out.splitlines())
    assert sum(1 for line in out.splitlines() if line.startswith("storage-")) == 3


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_top_refreshes_in_a_terminal_and_quits_on_q(cluster: Cluster) -> None:
    session = f"partita-top-{cluster.ports['router']}"
    command = f"{sys.executable} -m partita.cli.main top --data-dir {cluster.data_dir} --interval 0.5"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", command], check=True, timeout=10
    )
    try:

        def screen() -> str:
            return subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True, timeout=10
            ).stdout

        eventually(lambda: "OPERATION" in screen() and "storage-a" in screen(), timeout=15)
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True, timeout=10)

        def gone() -> bool:
            return (
                subprocess.run(
                    ["tmux", "has-session", "-t", session], capture_output=True, timeout=10
                ).returncode
                != 0
            )

        eventually(gone, timeout=10)  # the only window's program exited: the session ended
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=10)
