"""Draining a storage node of a real local cluster (`partita up --replication-factor 3`):
`partita node drain storage-a --wait` returns once no partition names storage-a; each
group's leader built a full member on the node added for it (storage-d) and removed
storage-a's, a group led by storage-a handing its leadership over first; writes go on
throughout. storage-a is then SIGKILLed and held down, and every acknowledged write still
reads back, strongly consistent: nothing lived only there."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.integration.cluster import running
from tests.integration.test_replication_repair import (
    Writer,
    _cli,
    _partitions,
    _until,
    table_and_a_fourth_node,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-replication-drain")]
# Seconds a drain may take: per group a snapshot to storage-d, its catch-up, a removal
# (and for storage-a's own groups a leadership hand-over first); generous for a shared
# two-core machine.
DRAIN_SECONDS = 120


def test_a_drained_node_holds_no_replica_and_losing_it_loses_nothing(tmp_path: Path) -> None:
    with running(tmp_path, "--replication-factor", "3", "--on-demand-partitions", "2") as cluster:
        ddb = cluster.client()
        name = table_and_a_fourth_node(cluster, "drain")
        led_by_a = [p["id"] for p in _partitions(cluster, name) if p["leader"] == "storage-a"]
        writer = Writer(cluster, name)
        writer.thread.start()
        try:
            _until("writes flow", lambda: len(writer.acked) >= 50, 30)
            mark = len(writer.acked)
            result = _cli(
                cluster,
                "node",
                "drain",
                "storage-a",
                "--wait",
                str(DRAIN_SECONDS),
                timeout=DRAIN_SECONDS + 30,
            )
            assert result == {"node": "storage-a", "draining": True, "replicas": 0}
            parts = _partitions(cluster, name)
            for p in parts:
                assert sorted(r["node"] for r in p["replicas"]) == ["storage-b", "storage-c", "storage-d"], p
                assert p["joining"] == [] and p["log_replicas"] == [] and p["leader"] != "storage-a", p
            status = _cli(cluster, "status")
            assert {n["node_id"]: n["draining"] for n in status["nodes"]}["storage-a"] is True
            _until("writes flow after the drain", lambda: writer.acked_since(mark) >= 50, 30)
        finally:
            writer.stop.set()
            writer.thread.join(timeout=30)

        _cli(cluster, "node", "hold", "storage-a")
        os.kill(cluster.pid_of("storage-a"), signal.SIGKILL)
        for key in writer.acked:
            got = ddb.get_item(TableName=name, Key={"pk": {"S": key}}, ConsistentRead=True)
            assert "Item" in got, f"lost {key}"
        print(
            f"{len(writer.acked)} writes acknowledged ({writer.failed} unknown outcomes), "
            f"{len(led_by_a)} of {len(parts)} partitions led by storage-a before the drain"
        )
