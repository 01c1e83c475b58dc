"""`partita up --routers colocated`: a router in every storage node's process, the three
sharing the DynamoDB port (SO_REUSEPORT), real processes and boto3 as the client."""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config

from tests.integration.cluster import Cluster, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-colocated")]

NODES = ("storage-a", "storage-b", "storage-c")
_ANSWERED = re.compile(r'^partita_router_requests_total\{[^}]*outcome="ok"[^}]*\} (\S+)$', re.M)


def _answered_by(cluster: Cluster) -> dict[str, float]:
    """Requests each storage node's router answered, from that node's /metrics."""
    out = {}
    for proc in cluster.cluster_file()["processes"]:
        if proc["role"] == "storage":
            url = f"http://127.0.0.1:{proc['ports']['metrics']}/metrics"
            with urllib.request.urlopen(url, timeout=10) as response:
                text = response.read().decode()
            out[proc["name"]] = sum(float(v) for v in _ANSWERED.findall(text))
    return out


def _patient(cluster: Cluster) -> Any:
    """A client that rides out a node's restart: its connections to the killed process
    are reset, and the groups that node led fail over."""
    return cluster.client(config=Config(retries={"max_attempts": 12, "mode": "standard"}, read_timeout=30))


def test_every_storage_node_serves_the_endpoint_and_a_sigkilled_one_loses_no_write(tmp_path: Path) -> None:
    with running(tmp_path / "cluster", "--routers", "colocated") as cluster:
        assert "router" not in [p["role"] for p in cluster.cluster_file()["processes"]]
        ddb = cluster.client()
        ddb.create_table(
            TableName="beside",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        wait_active(ddb, "beside", timeout=30)
        before = _answered_by(cluster)
        # A fresh client each time: a new connection, which the kernel gives to any of the
        # three listeners.
        for i in range(45):
            client = cluster.client()
            client.put_item(TableName="beside", Item={"pk": {"S": f"k{i}"}, "n": {"N": str(i)}})
            assert client.get_item(TableName="beside", Key={"pk": {"S": f"k{i}"}})["Item"]["n"] == {
                "N": str(i)
            }
        after = _answered_by(cluster)
        serving = [n for n in NODES if after[n] - before[n] >= 2]
        assert len(serving) >= 2, f"connections were not spread over the nodes' routers: {before} -> {after}"

        victim = "storage-b"
        pid = cluster.pid_of(victim)
        os.kill(pid, signal.SIGKILL)
        client = _patient(cluster)
        for i in range(45, 90):  # while the node is down and restarting
            client.put_item(TableName="beside", Item={"pk": {"S": f"k{i}"}, "n": {"N": str(i)}})
        cluster.wait_restarted(victim, pid, timeout=60)
        deadline = time.monotonic() + 60
        for i in range(90):
            key = {"pk": {"S": f"k{i}"}}
            assert client.get_item(TableName="beside", Key=key, ConsistentRead=True)["Item"]["n"] == {
                "N": str(i)
            }
        while time.monotonic() < deadline:  # the restarted node's router serves again
            fresh = cluster.client()
            fresh.get_item(TableName="beside", Key={"pk": {"S": "k0"}})
            if _answered_by(cluster)[victim] > 0:
                break
        else:
            raise AssertionError(f"{victim}'s router never answered after its restart")
        assert client.scan(TableName="beside", Select="COUNT", ConsistentRead=True)["Count"] == 90
