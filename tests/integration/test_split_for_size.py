"""Splits on a real local cluster.

For size: a table whose partition grows past the split size (100 KB here; DynamoDB's is
10 GB) gets more partitions from the autoadmin, cut at the data's median key hash,
while it stays ACTIVE, writes keep succeeding and every item stays readable exactly
once (GetItem, Query, Scan, and a Scan paging across the split).

For consumption: a partition read at more than 80% of its allocation for 20 s (here;
300 s by default) is split at its load's median key hash; one hot key is left whole.

Each test runs on a cluster of single-replica partitions (cut in place) and on one of
three-replica groups (the default: split at a log index, docs/replication.md).

The storage nodes recount every 0.3 s, and the autoadmin looks at settled tables' sizes
and heat every 10 s, so a split round takes about 10 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config

from partita.common import config
from partita.common.keys import KEY_HASH_DYNAMODB, key_hash
from tests.integration.cluster import Cluster, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-split-size")]

SPLIT_SIZE = 100_000
HOT_SECONDS = 10
# The size tests' throughput: far above what they consume, so they never run hot.
ROOMY = {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 500}
NO_RETRIES = Config(retries={"total_max_attempts": 1}, read_timeout=30)
KEYS = 40  # partition keys; each holds an item collection of several sort keys


@pytest.fixture(scope="module", params=["1", "3"], ids=["rf1", "rf3"])
def split_cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    with running(
        Path(tmp_path_factory.mktemp("split-cluster")),
        "--split-size-bytes", str(SPLIT_SIZE),
        "--split-hot-seconds", str(HOT_SECONDS),
        "--stats-interval", "0.3",
        # Single-replica partitions split in place; replicated ones (RF=3, the default)
        # at a log index (test_split_replicated.py has the fault cases).
        "--replication-factor", request.param,
        # The hot tests read a 5 RCU table far above its rate on purpose, to make it hot;
        # admission (on by default) would refuse those reads before they are measured.
        "--admission", "off",
    ) as c:  # fmt: skip
        yield c


def _item(i: int) -> dict[str, Any]:
    return {"pk": {"S": f"user-{i % KEYS}"}, "sk": {"N": str(i)}, "payload": {"S": f"{i:06d}" * 170}}


def keys_hash(pk: str) -> int:
    # The table is made by CreateTable, so it hashes its keys as DynamoDB does.
    return key_hash("S", pk.encode(), KEY_HASH_DYNAMODB)


def _partitions(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", "status", "--data-dir", str(cluster.data_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    [table] = [t for t in json.loads(out.stdout)["tables"] if t["name"] == name]
    parts: list[dict[str, Any]] = table["partitions"]
    return parts


def _metric(cluster: Cluster, line_start: str) -> float:
    port = cluster.ports["storage"] + config.AUTOADMIN_METRICS_PORT_OFFSET
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def _splits(cluster: Cluster, reason: str) -> float:
    """Splits made for `reason`: in place (one replica) or asked of a replication group."""
    return sum(
        _metric(cluster, f'partita_autoadmin_actions_total{{action="{action}",reason="{reason}"}}')
        for action in ("split_partitions", "request_split")
    )


def _scan_all(
    ddb: Any, name: str, start: dict[str, Any] | None = None, limit: int = 37
) -> list[tuple[str, str]]:
    keys: list[tuple[str, str]] = []
    kwargs: dict[str, Any] = {"TableName": name, "Limit": limit, "ConsistentRead": True}
    if start is not None:
        kwargs["ExclusiveStartKey"] = start
    for _ in range(10_000):
        page = ddb.scan(**kwargs)
        keys += [(i["pk"]["S"], i["sk"]["N"]) for i in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return keys
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    raise AssertionError("scan did not end")


class Traffic:
    """Writes new items and describes the table while the split happens, recording every
    acknowledged write, every failure and every status seen."""

    def __init__(self, cluster: Cluster, name: str, first: int) -> None:
        self.ddb = cluster.client(config=NO_RETRIES)
        self.name, self.next = name, first
        self.acknowledged: list[int] = []
        self.failures: list[str] = []
        self.statuses: Counter[str] = Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        deadline = time.monotonic() + 120
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                self.ddb.put_item(TableName=self.name, Item=_item(self.next))
                self.acknowledged.append(self.next)
                self.statuses[self.ddb.describe_table(TableName=self.name)["Table"]["TableStatus"]] += 1
            except Exception as exc:  # recorded: the test asserts there are none
                self.failures.append(repr(exc))
            self.next += 1
            time.sleep(0.02)

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(30)


def test_a_partition_past_the_split_size_is_split_while_the_table_serves(split_cluster: Cluster) -> None:
    ddb = split_cluster.client()
    name = f"split-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
        ProvisionedThroughput=ROOMY,
    )  # fmt: skip
    wait_active(ddb, name, timeout=30)
    assert len(_partitions(split_cluster, name)) == 1  # ceil(1000/3000 + 500/1000): one partition
    splits_before = _splits(split_cluster, "size_exceeded")

    # A Scan that pages across the split: its first page while the table is below the
    # split size (about 80 KB), the rest after it split.
    for i in range(80):
        ddb.put_item(TableName=name, Item=_item(i))
    page = ddb.scan(TableName=name, Limit=30, ConsistentRead=True)
    scanned_first = [(i["pk"]["S"], i["sk"]["N"]) for i in page["Items"]]
    assert len(_partitions(split_cluster, name)) == 1
    # About 250 KB in all: past the split size twice over, so the partition splits, and
    # its halves (about 125 KB each) split again.
    first = 240
    for i in range(80, first):
        ddb.put_item(TableName=name, Item=_item(i))

    with Traffic(split_cluster, name, first) as traffic:
        deadline = time.monotonic() + 90
        while len(parts := _partitions(split_cluster, name)) < 4:
            assert time.monotonic() < deadline, f"still {len(parts)} partitions"
            assert not traffic.failures, traffic.failures[:3]
            time.sleep(0.5)
        time.sleep(1.0)  # writes keep going on the new layout for a moment

    assert traffic.failures == []
    assert len(traffic.acknowledged) > 20
    assert set(traffic.statuses) == {"ACTIVE"}, traffic.statuses  # never UPDATING or CREATING
    written = list(range(first)) + traffic.acknowledged
    expected = {(f"user-{i % KEYS}", str(i)) for i in written}

    # The layout: complete, and on the node the table was on (no item moved).
    starts = sorted(int(p["hash_range"][0], 16) for p in parts)
    assert starts[0] == 0 and len(set(starts)) == len(starts)
    assert len({tuple(r["node"] for r in p["replicas"]) for p in parts}) == 1  # no item moved

    # Every item readable exactly once, by each read path.
    rest = _scan_all(ddb, name, start=page["LastEvaluatedKey"])
    paged = scanned_first + rest
    # A Scan is no snapshot: items written behind its cursor while it paged may be
    # missed, as in DynamoDB; every item that was there when it began must come, once.
    before_scan = {(f"user-{i % KEYS}", str(i)) for i in range(80)}
    assert len(paged) == len(set(paged))
    assert before_scan <= set(paged) <= expected
    full = _scan_all(ddb, name)
    assert len(full) == len(expected) and set(full) == expected
    for i in written[::7]:
        got = ddb.get_item(
            TableName=name, Key={"pk": {"S": f"user-{i % KEYS}"}, "sk": {"N": str(i)}}, ConsistentRead=True
        )
        assert got["Item"] == _item(i)
    for k in range(KEYS):
        items = ddb.query(
            TableName=name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"user-{k}"}},
            ConsistentRead=True,
        )["Items"]
        assert sorted(int(i["sk"]["N"]) for i in items) == sorted(i for i in written if i % KEYS == k)

    # DescribeTable: still ACTIVE, and its figures are the children's counts once the
    # leaders recount them (estimates until then).
    deadline = time.monotonic() + 30
    while (table := ddb.describe_table(TableName=name)["Table"])["ItemCount"] != len(expected):
        assert time.monotonic() < deadline, table["ItemCount"]
        time.sleep(0.2)
    assert table["TableStatus"] == "ACTIVE"
    # The autoadmin counted each split by its reason.
    after = _splits(split_cluster, "size_exceeded")
    assert after >= splits_before + 2  # the first cut, then at least one of its halves


def test_a_single_key_partition_past_the_split_size_is_kept_whole(split_cluster: Cluster) -> None:
    """One partition key's item collection cannot be divided by a cut on key hashes:
    the autoadmin leaves it whole and says so (a metric and a log line), and the table
    keeps serving."""
    ddb = split_cluster.client()
    name = f"onekey-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
        ProvisionedThroughput=ROOMY,
    )  # fmt: skip
    wait_active(ddb, name, timeout=30)
    kept = 'partita_autoadmin_actions_total{action="keep_partition_whole",reason="single_key"}'
    before = _metric(split_cluster, kept)
    for i in range(150):  # about 150 KB under one partition key
        ddb.put_item(
            TableName=name, Item={"pk": {"S": "hot"}, "sk": {"N": str(i)}, "payload": {"S": "z" * 1000}}
        )
    deadline = time.monotonic() + 60
    while _metric(split_cluster, kept) < before + 1:
        assert time.monotonic() < deadline, "the autoadmin never reported the partition"
        time.sleep(0.5)
    assert len(_partitions(split_cluster, name)) == 1
    assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
    assert "kept whole" in (split_cluster.data_dir / "logs" / "autoadmin.log").read_text()


def _hot_table(cluster: Cluster) -> tuple[Any, str]:
    ddb = cluster.client()
    name = f"hot-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )
    wait_active(ddb, name, timeout=30)
    return ddb, name


def _read_hot(ddb: Any, name: str, keys: list[str], until: Any, timeout: float = 90.0) -> None:
    """Strongly consistent reads (1 RCU each) as fast as one client goes, far above the
    table's 5 RCU/s, until `until()` holds."""
    deadline = time.monotonic() + timeout
    i = 0
    while not until():
        assert time.monotonic() < deadline, "the autoadmin did not act on the hot partition"
        for _ in range(100):
            ddb.get_item(TableName=name, Key={"pk": {"S": keys[i % len(keys)]}}, ConsistentRead=True)
            i += 1


def test_a_partition_read_hot_for_the_sustained_window_is_split_at_its_load_median(
    split_cluster: Cluster,
) -> None:
    ddb, name = _hot_table(split_cluster)
    keys = [f"user-{i}" for i in range(40)]
    for k in keys:
        ddb.put_item(TableName=name, Item={"pk": {"S": k}, "v": {"S": "x"}})
    before = _splits(split_cluster, "consumption_hot")
    started = time.monotonic()
    _read_hot(ddb, name, keys, lambda: len(_partitions(split_cluster, name)) > 1)
    assert time.monotonic() - started >= HOT_SECONDS  # sustained, not at the first hot window
    parts = _partitions(split_cluster, name)
    assert len(parts) == 2
    assert _splits(split_cluster, "consumption_hot") == before + 1
    # Cut at the load's median: each side holds a share of the 40 evenly read keys (the
    # sampled median: between a quarter and three quarters of them on each side).
    cut = max(int(p["hash_range"][0], 16) for p in parts)
    below = sum(1 for k in keys if keys_hash(k) < cut)
    assert 10 <= below <= 30, below
    assert {tuple(r["node"] for r in p["replicas"]) for p in parts} == {
        tuple(r["node"] for r in parts[0]["replicas"])
    }
    for k in keys:  # every item still there
        assert ddb.get_item(TableName=name, Key={"pk": {"S": k}}, ConsistentRead=True)["Item"]["v"] == {
            "S": "x"
        }
    assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"


def test_one_hot_key_is_not_split_for(split_cluster: Cluster) -> None:
    ddb, name = _hot_table(split_cluster)
    ddb.put_item(TableName=name, Item={"pk": {"S": "celebrity"}, "v": {"S": "x"}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "someone"}, "v": {"S": "y"}})
    kept = 'partita_autoadmin_actions_total{action="keep_partition_whole",reason="single_hot_key"}'
    before = _metric(split_cluster, kept)
    # Nine reads in ten on one key.
    _read_hot(ddb, name, ["celebrity"] * 9 + ["someone"], lambda: _metric(split_cluster, kept) > before)
    assert len(_partitions(split_cluster, name)) == 1
    assert (
        "one key carries most of its load" in (split_cluster.data_dir / "logs" / "autoadmin.log").read_text()
    )
