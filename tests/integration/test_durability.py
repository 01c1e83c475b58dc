"""Acknowledged writes survive a storage node's SIGKILL and a whole-cluster restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-durability")]


@pytest.fixture()
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster this test may kill and restart."""
    with running(tmp_path / "data") as c:
        yield c


def _create(ddb: Any, name: str) -> None:
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    wait_active(ddb, name)


def test_storage_node_sigkill_loses_no_acknowledged_write(own_cluster: Cluster) -> None:
    ddb = own_cluster.client()
    name = f"kill-{uuid.uuid4().hex[:8]}"
    _create(ddb, name)
    acknowledged: list[tuple[str, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(worker: int) -> None:
        client = own_cluster.client()
        for i in range(10_000):
            if stop.is_set():
                return
            key = (f"w{worker}", i)
            try:
                client.put_item(
                    TableName=name, Item={"pk": {"S": key[0]}, "sk": {"N": str(i)}, "v": {"N": str(i)}}
                )
            except Exception:
                continue  # not acknowledged: no promise was made
            with lock:
                acknowledged.append(key)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    victim = own_cluster.pid_of("storage-b")
    # Kill while writes are in flight, after a few hundred have been acknowledged.
    while len(acknowledged) < 300:
        threading.Event().wait(0.01)
    os.kill(victim, signal.SIGKILL)
    with lock:
        acked_at_kill = len(acknowledged)
    threading.Event().wait(0.3)
    stop.set()
    for t in threads:
        t.join(30)
    own_cluster.wait_restarted("storage-b", victim)
    assert "exited with code -9; restarting" in own_cluster.read_log()

    reader = own_cluster.client()
    missing = [
        key
        for key in acknowledged
        if "Item"
        not in reader.get_item(
            TableName=name, Key={"pk": {"S": key[0]}, "sk": {"N": str(key[1])}}, ConsistentRead=True
        )
    ]
    assert acked_at_kill >= 300
    assert missing == []


def test_ctrl_c_and_up_again_keeps_tables_and_items(own_cluster: Cluster) -> None:
    ddb = own_cluster.client()
    names = [f"restart-{uuid.uuid4().hex[:8]}-{i}" for i in range(2)]
    for name in names:
        _create(ddb, name)
        for i in range(50):
            ddb.put_item(
                TableName=name, Item={"pk": {"S": f"k{i % 7}"}, "sk": {"N": str(i)}, "v": {"S": name}}
            )
    assert own_cluster.stop(signal.SIGINT) == 0
    log = own_cluster.read_log()
    assert "all processes stopped" in log and "did not stop" not in log
    for zone in "abc":
        assert "stopped cleanly" in (own_cluster.data_dir / "logs" / f"storage-{zone}.log").read_text()

    own_cluster.start()
    ddb = own_cluster.client()
    listed = ddb.list_tables()["TableNames"]
    for name in names:
        assert name in listed
        assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
        for i in range(50):
            item = ddb.get_item(TableName=name, Key={"pk": {"S": f"k{i % 7}"}, "sk": {"N": str(i)}})["Item"]
            assert item["v"] == {"S": name}


def test_sigterm_stops_every_child(own_cluster: Cluster) -> None:
    pids = [p["pid"] for p in own_cluster.cluster_file()["processes"]]
    assert own_cluster.stop(signal.SIGTERM) == 0
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_status_lists_processes_and_partitions(own_cluster: Cluster) -> None:
    ddb = own_cluster.client()
    name = f"status-{uuid.uuid4().hex[:8]}"
    _create(ddb, name)

    def status_now() -> Any:
        out = subprocess.run(
            [sys.executable, "-m", "partita.cli.main", "status", "--data-dir", str(own_cluster.data_dir)],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return json.loads(out.stdout)

    def led(status: Any) -> bool:
        table = next(t for t in status["tables"] if t["name"] == name)
        return all(any(r["role"] == "leader" for r in p["replicas"]) for p in table["partitions"])

    deadline = time.monotonic() + 20.0  # each new group's election: tens of ms, more under load
    while not led(status := status_now()) and time.monotonic() < deadline:
        time.sleep(0.2)
    roles = sorted((p["role"], p["zone"]) for p in status["processes"])
    assert roles == [
        ("autoadmin", None),
        ("doorman", None),
        ("doorman", None),
        ("etcd", None),
        ("router", None),
        ("storage", "a"),
        ("storage", "b"),
        ("storage", "c"),
    ]
    assert all(p["alive"] and p["pid"] for p in status["processes"])
    table = next(t for t in status["tables"] if t["name"] == name)
    assert table["status"] == "ACTIVE"
    assert len(table["partitions"]) == 4  # on-demand default
    starts = [int(p["hash_range"][0], 16) for p in table["partitions"]]
    assert starts[0] == 0 and starts == sorted(starts)
    assert int(table["partitions"][-1]["hash_range"][1], 16) == 2**64
    # The leader is the member that reports leading (each group elects its own, in the
    # group's stable member order: not necessarily the first replica placed).
    for p in table["partitions"]:
        leading = [r["node"] for r in p["replicas"] if r["role"] == "leader"]
        assert leading == [p["leader"]], p
