"""A real Prometheus server (Debian's `prometheus`) scrapes a real local cluster with the
configuration `partita up` wrote, loads the alert rules, and answers a query for the
router's request rate of a table under load through its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster, running, wait_active
from tests.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-prometheus")]

TABLE = "Scraped"
QUERY_TIMEOUT = 60.0
LOAD_SECONDS_MAX = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("prometheus") is None:
        pytest.skip(
            "prometheus not found: `make test` installs it (Debian package prometheus) where apt-get can"
        )
    with running(Path(tmp_path_factory.mktemp("prom-cluster"))) as c:
        yield c


@pytest.fixture(scope="module")
def prometheus(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = open(tmp_path_factory.mktemp("prom") / "prometheus.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            "prometheus",
            "--config.file",
            str(cluster.data_dir / "prometheus.yml"),
            "--storage.tsdb.path",
            str(tmp_path_factory.mktemp("tsdb")),
            "--web.listen-address",
            f"127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + QUERY_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None, "prometheus exited"
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def api(url: str, path: str, **params: str) -> Any:
    with urllib.request.urlopen(
        f"{url}/api/v1/{path}?{urllib.parse.urlencode(params)}", timeout=10
    ) as answer:
        body = json.loads(answer.read())
    assert body["status"] == "success", body
    return body["data"]


def test_the_written_config_scrapes_every_process_and_loads_the_rules(
    cluster: Cluster, prometheus: str
) -> None:
    deadline = time.monotonic() + QUERY_TIMEOUT
    while True:
        targets = api(prometheus, "targets")["activeTargets"]
        if len(targets) >= 5 and all(t["health"] == "up" for t in targets):
            break
        assert time.monotonic() < deadline, [(t["scrapeUrl"], t["health"], t["lastError"]) for t in targets]
        time.sleep(0.5)
    assert {t["labels"]["job"] for t in targets} >= {"partita-router", "partita-storage", "partita-etcd"}
    groups = api(prometheus, "rules")["groups"]
    assert {g["name"] for g in groups} >= {"partita.availability", "partita.storage", "partita.capacity"}

    def evaluated() -> list[dict[str, Any]]:
        return [rule for group in api(prometheus, "rules")["groups"] for rule in group["rules"]]

    # Every rule evaluates against the real series without an error (a label mismatch in
    # a ratio, say, would show here), and none fires on a healthy idle cluster.
    while any(rule["health"] == "unknown" for rule in evaluated()):
        assert time.monotonic() < deadline, "rules were not evaluated"
        time.sleep(0.5)
    for rule in evaluated():
        assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))
        assert rule["state"] == "inactive", rule["name"]


def test_a_query_returns_the_routers_request_rate_for_a_table_under_load(
    cluster: Cluster, prometheus: str
) -> None:
    ddb = cluster.client()
    ddb.create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    wait_active(ddb, TABLE)
    query = f'sum(rate(partita_router_requests_total{{job="partita-router", table="{TABLE}", operation="PutItem"}}[5s]))'
    started = time.monotonic()
    sent = 0
    rate = 0.0
    while time.monotonic() - started < LOAD_SECONDS_MAX:
        for _ in range(20):
            ddb.put_item(TableName=TABLE, Item={"pk": {"S": f"k{sent}"}})
            sent += 1
        result = api(prometheus, "query", query=query)["result"]
        rate = float(result[0]["value"][1]) if result else 0.0
        if rate > 0 and time.monotonic() - started > 3:
            break
    assert rate > 0, f"no rate after {sent} PutItems"
    # The rate Prometheus computes is of the order the client sent (not exact: windows).
    elapsed = time.monotonic() - started
    assert rate < 10 * sent / elapsed
