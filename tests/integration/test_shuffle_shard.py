"""Shuffle-sharded placement on a real local cluster: `partita up` (three storage nodes,
zones a/b/c) grown to six with `partita node add` (each in a zone of its own), then
one-partition tables of three replicas. The autoadmin puts the second table on a shard
of three nodes holding at most one replica of the first table's partition, so their
groups never share two members; both serve reads and writes, and the first table's
whole shard SIGKILLed leaves the second its quorum."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest

from tests.integration.cluster import create_small_table, running
from tests.integration.test_replication_repair import _cli, _partitions, _until

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-shuffle-shard")]


def test_small_tables_on_a_wider_fleet_get_shards_apart(tmp_path: Path) -> None:
    with running(tmp_path, "--replication-factor", "3") as cluster:
        added = [_cli(cluster, "node", "add")["node_id"] for _ in range(3)]
        assert added == ["storage-d", "storage-e", "storage-f"]
        _until("six nodes registered", lambda: len(_cli(cluster, "status")["nodes"]) == 6, 60)
        ddb = cluster.client()
        names = [f"shard-{i}-{uuid.uuid4().hex[:6]}" for i in range(2)]
        for name in names:
            create_small_table(ddb, name)
        members = {}
        for name in names:
            [partition] = _partitions(cluster, name)
            members[name] = {r["node"] for r in partition["replicas"]}
            assert len(members[name]) == 3
        # At most one member in common (round-robin from the tables' random offsets gave
        # two or three half the time).
        assert len(members[names[0]] & members[names[1]]) <= 1, members
        for name in names:
            ddb.put_item(TableName=name, Item={"pk": {"S": "k"}, "v": {"S": name}})
            got = ddb.get_item(TableName=name, Key={"pk": {"S": "k"}}, ConsistentRead=True)
            assert got["Item"]["v"]["S"] == name

        # The first table's whole shard dies (as a poison request or a hot key could
        # take it down): the second had at most one member there, so it keeps two of
        # three, elects a leader and takes writes.
        for victim in sorted(members[names[0]]):
            _cli(cluster, "node", "hold", victim)
            os.kill(cluster.pid_of(victim), signal.SIGKILL)
        for name in names[1:]:

            def writes(table: str = name) -> bool:
                try:
                    ddb.put_item(TableName=table, Item={"pk": {"S": "after"}, "v": {"S": table}})
                except Exception:
                    return False
                return True

            _until(f"{name} takes writes with {sorted(members[names[0]])} down", writes, 30)
            got = ddb.get_item(TableName=name, Key={"pk": {"S": "after"}}, ConsistentRead=True)
            assert got["Item"]["v"]["S"] == name
