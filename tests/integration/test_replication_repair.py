"""Repair of replication groups on a real local cluster (`partita up
--replication-factor 3`): a storage node SIGKILLed and held down gets its groups a
log-only member on a live node outside them within seconds, writes keep succeeding, and
once `partita node add` brings another node a full replica is rebuilt there (a
snapshot streamed from the leader, whose log no longer starts at 0 after a restart, then
log catch-up), the log-only member and the dead one leave, and every acknowledged write is
still read back, strongly consistent, also after a second member of the repaired group
dies. The dead node, released once repaired around, erases the replicas it was removed
from.

Five nodes, not four: a group's members are node ids, so the log-only member needs a
node outside the group (storage-d, added before the failure) and the rebuilt full
member another one (storage-e, added after it).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from partita.common import keys
from partita.storage.engine import Engine
from partita.storage.group_log import group_of
from tests.integration.cluster import Cluster, create_pk_table, running

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-replication-repair")]


def _cli(cluster: Cluster, *args: str, timeout: float = 90) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", *args, "--data-dir", str(cluster.data_dir)],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def _partitions(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    status = _cli(cluster, "status")
    table = next(t for t in status["tables"] if t["name"] == name)
    partitions: list[dict[str, Any]] = table["partitions"]
    return partitions


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _until(what: str, predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout:.0f}s")


class Writer:
    """Puts items with fresh keys in a loop; remembers which were acknowledged."""

    def __init__(self, cluster: Cluster, table: str) -> None:
        self.ddb = cluster.client()
        self.table = table
        self.acked: list[str] = []
        self.failed = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        i = 0
        while not self.stop.is_set() and i < 100_000:
            key = f"k{i}"
            i += 1
            try:
                self.ddb.put_item(TableName=self.table, Item={"pk": {"S": key}, "n": {"N": str(i)}})
            except ClientError:
                self.failed += 1  # an unknown outcome: not counted as acknowledged
                continue
            self.acked.append(key)

    def acked_since(self, mark: int) -> int:
        return len(self.acked) - mark


def table_and_a_fourth_node(cluster: Cluster, prefix: str) -> str:
    """A new on-demand table (its name), then `partita node add`: storage-d, outside
    every group of the three nodes."""
    ddb = cluster.client()
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_pk_table(ddb, name)
    assert _cli(cluster, "node", "add")["node_id"] == "storage-d"
    return name


def test_a_node_down_for_long_gets_a_log_replica_then_a_full_one_rebuilt_on_an_added_node(
    tmp_path: Path,
) -> None:
    with running(tmp_path, "--replication-factor", "3", "--on-demand-partitions", "2") as cluster:
        name = table_and_a_fourth_node(cluster, "repair")
        writer = Writer(cluster, name)
        writer.thread.start()
        try:
            _until("writes flow", lambda: len(writer.acked) >= 50, 30)
            # storage-a and storage-b restart: their logs now begin at what they had
            # applied, so whichever leads later cannot build a new member from its log
            # alone: the rebuild below must go through a snapshot.
            for node in ("storage-a", "storage-b"):
                pid = cluster.pid_of(node)
                os.kill(pid, signal.SIGKILL)
                cluster.wait_restarted(node, pid)
                mark = len(writer.acked)
                _until(f"writes flow after {node} restarted", lambda m=mark: writer.acked_since(m) >= 20, 30)

            # storage-c dies and stays down.
            _cli(cluster, "node", "hold", "storage-c")
            os.kill(cluster.pid_of("storage-c"), signal.SIGKILL)

            def log_replicas_on_d() -> bool:
                return all(p["log_replicas"] == ["storage-d"] for p in _partitions(cluster, name))

            _until("a log-only member on storage-d in every group", log_replicas_on_d, 60)
            mark = len(writer.acked)
            _until("writes succeed with the log replica", lambda: writer.acked_since(mark) >= 50, 30)

            assert _cli(cluster, "node", "add")["node_id"] == "storage-e"

            def rebuilt_on_e() -> bool:
                for p in _partitions(cluster, name):
                    members = [r["node"] for r in p["replicas"]]
                    if sorted(members) != ["storage-a", "storage-b", "storage-e"]:
                        return False
                    if p["log_replicas"] or p["joining"]:
                        return False
                return True

            _until("a full replica rebuilt on storage-e, log and dead members removed", rebuilt_on_e, 120)
            for p in _partitions(cluster, name):
                e = next(r for r in p["replicas"] if r["node"] == "storage-e")
                assert e["role"] in ("leader", "follower")
                assert e["applied_index"] >= 1
            # Built from a snapshot of each partition, then the log.
            installs = (cluster.data_dir / "logs" / "storage-e.log").read_text().count("snapshot at")
            assert installs >= len(_partitions(cluster, name))
            mark = len(writer.acked)
            _until("writes succeed after the repair", lambda: writer.acked_since(mark) >= 50, 30)
        finally:
            writer.stop.set()
            writer.thread.join(30)
        assert len(writer.acked) > 150

        # storage-c comes back: removed from every group while it was down, it erases its
        # replicas (data, positions, logs) on its first pass over the hosting. Killed
        # again once it has, its RocksDB and WAL, read back, hold nothing of them.
        table = next(t for t in _cli(cluster, "status")["tables"] if t["name"] == name)
        c_log = cluster.data_dir / "logs" / "storage-c.log"
        dead_pid = cluster.pid_of("storage-c")
        _cli(cluster, "node", "release", "storage-c")
        c_pid = cluster.wait_restarted("storage-c", dead_pid)
        _until(
            "storage-c erases the replicas it was removed from",
            lambda: c_log.read_text().count("replica was removed; erased") >= len(table["partitions"]),
            60,
        )
        _cli(cluster, "node", "hold", "storage-c")
        os.kill(c_pid, signal.SIGKILL)
        _until("storage-c exits", lambda: not _alive(c_pid), 10)
        engine = Engine.open(cluster.data_dir / "storage-c", sync=False)
        try:
            for p in _partitions(cluster, name):
                group = group_of(table["table_id"], p["id"])
                lo, hi = keys.hash_range_bounds(table["table_id"], *(int(h, 16) for h in p["hash_range"]))
                assert group not in engine.groups() and engine.applied_position(group) == (0, 0)
                assert next(engine.scan(lo, hi), None) is None
        finally:
            asyncio.run(engine.close())

        # Its registration expires before storage-a dies, so the repair does not pick the
        # dead storage-c as a member.
        _until(
            "storage-c's registration expires",
            lambda: "storage-c" not in {n["node_id"] for n in _cli(cluster, "status")["nodes"]},
            30,
        )

        # The rebuilt member holds the data: with storage-a down as well, each group is
        # {storage-b, storage-e}, which must still serve every acknowledged write.
        _cli(cluster, "node", "hold", "storage-a")
        os.kill(cluster.pid_of("storage-a"), signal.SIGKILL)
        reader = cluster.client()

        def read(key: str) -> dict[str, Any] | None:
            try:
                got: dict[str, Any] = reader.get_item(
                    TableName=name, Key={"pk": {"S": key}}, ConsistentRead=True
                )
            except ClientError:
                return None  # the groups storage-a led are still failing over
            return got

        _until(
            "strong reads served by storage-b and storage-e", lambda: read(writer.acked[0]) is not None, 60
        )
        missing = []
        for key in writer.acked:
            got = read(key) or read(key)
            assert got is not None, f"strong read of {key} failed twice after the failover"
            if "Item" not in got:
                missing.append(key)
        assert missing == [], f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
