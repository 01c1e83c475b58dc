"""Load-based migration on a real local cluster: two one-partition tables on the three
storage nodes, a fourth node added to zone a (`partita node add --zone a`: storage-a2),
then reads of both tables at a steady pace. Each node's capacity is set low
(`--node-read-units 100`), so storage-a, holding a replica of each table, reports
itself above the migration share; the autoadmin asks for one replica to move to
storage-a2 (the only other node of zone a, empty), the group's leader builds the new
member there and removes storage-a's, and the autoadmin forgets the move. Only one
moves: with one replica left, storage-a is no longer hot. No read fails meanwhile and
the moved table's item is intact."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from partita.control.model import ReplicaMove
from tests.integration.cluster import Cluster, create_small_table, running, with_store
from tests.integration.test_replication_repair import _cli, _partitions, _until

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-migration")]

ITEM_BYTES = 100_000  # 25 RCU a strongly consistent read, 12.5 an eventual one
READS_PER_SECOND = 24  # both tables: about 50 RCU/s on each replica, 100 on storage-a


def _moves(cluster: Cluster) -> list[ReplicaMove]:
    return with_store(cluster, lambda store: store.list_moves())


def _members(cluster: Cluster, table: str) -> set[str]:
    [partition] = _partitions(cluster, table)
    return {r["node"] for r in partition["replicas"]}


class PacedReader:
    """Eventually consistent GetItems of the tables in turn at a steady rate (the router
    rotates them over each partition's replicas), until stopped; keeps what failed."""

    def __init__(self, ddb: Any, tables: list[str]) -> None:
        self.ddb, self.tables = ddb, tables
        self.failures: list[str] = []
        self.reads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PacedReader:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        start = time.monotonic()
        deadline = start + 240  # bounded however the test goes
        while not self._stop.is_set() and time.monotonic() < deadline:
            table = self.tables[self.reads % len(self.tables)]
            try:
                got = self.ddb.get_item(TableName=table, Key={"pk": {"S": "big"}})
                if "Item" not in got:
                    self.failures.append(f"{table}: item missing")
            except Exception as exc:
                self.failures.append(f"{table}: {exc!r}")
            self.reads += 1
            pause = start + self.reads / READS_PER_SECOND - time.monotonic()
            if pause > 0:
                self._stop.wait(pause)


def test_a_replica_moves_off_a_hot_node_to_an_empty_node_of_its_zone(tmp_path: Path) -> None:
    with running(
        tmp_path,
        "--replication-factor",
        "3",
        "--admission",
        "off",
        "--node-read-units",
        "100",
        "--load-report-interval",
        "1",
        "--migrate-above",
        "0.75",
        "--migrate-room-below",
        "0.7",
    ) as cluster:
        ddb = cluster.client()
        tables = [f"migrate-{i}-{uuid.uuid4().hex[:6]}" for i in range(2)]
        for name in tables:
            create_small_table(ddb, name)
            ddb.put_item(TableName=name, Item={"pk": {"S": "big"}, "v": {"S": "x" * ITEM_BYTES}})
            assert _members(cluster, name) == {"storage-a", "storage-b", "storage-c"}
        added = _cli(cluster, "node", "add", "--zone", "a")
        assert (added["node_id"], added["zone"]) == ("storage-a2", "a")

        with PacedReader(ddb, tables) as reader:

            def one_moved() -> bool:
                return any(_members(cluster, t) == {"storage-a2", "storage-b", "storage-c"} for t in tables)

            _until("a replica moved from storage-a to storage-a2", one_moved, 120)
            _until("the move is forgotten once done", lambda: _moves(cluster) == [], 30)
            # Reads go on a while: storage-a, one replica left, is no longer hot.
            time.sleep(5)
        # The autoadmin asked for it, for the load, and saw it done.
        autoadmin_log = (cluster.data_dir / "logs" / "autoadmin.log").read_text()
        assert "replica on storage-a (hot) moves to storage-a2" in autoadmin_log
        assert "storage-a -> storage-a2 over (done)" in autoadmin_log
        assert reader.failures == [], reader.failures[:5]
        assert reader.reads > 100
        moved = [t for t in tables if "storage-a2" in _members(cluster, t)]
        assert len(moved) == 1, {t: _members(cluster, t) for t in tables}
        [stayed] = [t for t in tables if t not in moved]
        assert _members(cluster, stayed) == {"storage-a", "storage-b", "storage-c"}
        for name in tables:
            got = ddb.get_item(TableName=name, Key={"pk": {"S": "big"}}, ConsistentRead=True)
            assert got["Item"]["v"]["S"] == "x" * ITEM_BYTES
