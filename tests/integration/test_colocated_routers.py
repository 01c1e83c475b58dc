"""`partita up --routers colocated`: a router in every storage node's process, the three
sharing the DynamoDB port (SO_REUSEPORT), real processes and boto3 as the client."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config

from tests.integration.cluster import Cluster, running, wait_active
from tests.integration.test_replication import _led_table, _partitions

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


def test_sigterm_of_a_node_finishes_its_connections_and_hands_off_and_no_write_fails(tmp_path: Path) -> None:
    """A rolling restart with routers beside the nodes: the node's router answers what its
    connections asked and closes them (clients reconnect to the other two), then the node
    hands its groups' leadership off; writers on every router see no failure."""
    with running(tmp_path / "cluster", "--routers", "colocated") as cluster:
        table = _led_table(cluster, "rolling", [f"warm{i}" for i in range(8)])
        # The node leading the most of its partitions: it has leadership to hand off.
        victim = Counter(p["leader"] for p in _partitions(cluster, table)).most_common(1)[0][0]
        failures: list[str] = []
        written: list[str] = []
        stop = threading.Event()

        def writer(w: int) -> None:
            client = cluster.client()  # its own connections, on any of the three routers
            deadline = time.monotonic() + 60
            i = 0
            while not stop.is_set() and time.monotonic() < deadline:
                key = f"w{w}-{i}"
                try:
                    client.put_item(TableName=table, Item={"pk": {"S": key}})
                    written.append(key)
                except Exception as exc:
                    failures.append(repr(exc))
                i += 1

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1.0)
            pid = cluster.pid_of(victim)
            os.kill(pid, signal.SIGTERM)
            cluster.wait_restarted(victim, pid, timeout=60)
            time.sleep(0.5)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        log = (cluster.data_dir / "logs" / f"{victim}.log").read_text()
        handed = [line for line in log.splitlines() if "handed off leadership" in line]
        assert "router stopped" in log and handed and "of 0 of" not in handed[-1], handed
        assert failures == []
        assert written
        client = cluster.client()
        for key in written[:: max(1, len(written) // 50)]:
            assert "Item" in client.get_item(TableName=table, Key={"pk": {"S": key}}, ConsistentRead=True)
