"""Splits of replicated partitions (RF=3) at a log index, on a real local cluster.

The parent's leader seals its group and commits a SPLIT entry; each member starts the
children's groups only once it has applied the parent up to that entry, and a member
that missed it gets a snapshot of each child (docs/replication.md, "Splits at a log
index"). These tests drive it with real processes and boto3 with client retries off:

- a partition that grows past the split size under unique puts and conditional
  increments splits, DescribeTable says ACTIVE throughout, and every acknowledged write
  is there exactly once;
- a follower SIGSTOPped through a split (UpdateTable raising throughput), resumed, then
  the old leader's node SIGKILLed: every acknowledged write is read back strongly from
  the children, which the resumed follower and the other survivor now serve;
- UpdateTable raising throughput splits a replicated table and completes ACTIVE.

The storage nodes recount every 0.3 s and the autoadmin looks at settled tables' sizes
every 10 s.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, create_pk_table, running, shard_records, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-split-replicated")]

SPLIT_SIZE = 100_000
ROOMY = {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 500}
# ceil(1000 / 3000 + 1500 / 1000): two partitions where ROOMY needs one.
RAISED = {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 1500}
NO_RETRIES = Config(retries={"total_max_attempts": 1}, read_timeout=30)
PAYLOAD = "x" * 1000  # the size test's items: about 1 KB each
SMALL = "x" * 20  # the throughput tests': the table stays far below the split size
PUTTERS, INCREMENTERS = 3, 2


@pytest.fixture(scope="module")
def rf3_split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(
        Path(tmp_path_factory.mktemp("split-replicated")),
        "--replication-factor", "3",  # splits replicated groups (on by default)
        "--split-size-bytes", str(SPLIT_SIZE),
        "--stats-interval", "0.3",
    ) as c:  # fmt: skip
        yield c


def _status(cluster: Cluster) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", "status", "--data-dir", str(cluster.data_dir)],
        capture_output=True,
        timeout=90,
        check=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def _partitions(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    table = next(t for t in _status(cluster)["tables"] if t["name"] == name)
    partitions: list[dict[str, Any]] = table["partitions"]
    return partitions


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _create(ddb: Any, name: str, **extra: Any) -> None:
    create_pk_table(ddb, name, timeout=30, ProvisionedThroughput=ROOMY, **extra)


def _led(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    """The table's partitions once each has a leader and two followers."""
    parts: list[dict[str, Any]] = []

    def settled() -> bool:
        nonlocal parts
        parts = _partitions(cluster, name)
        return all(
            p["leader"] is not None
            and sorted(str(r["role"]) for r in p["replicas"]) == ["follower", "follower", "leader"]
            for p in parts
        )

    _until(settled, 60, f"{name}: every partition led")
    return parts


class Load:
    """Unique puts and conditional increments from several clients (retries off) while
    a split happens, recording what was acknowledged and what failed (a failed write may
    or may not have been applied: the checks allow for exactly those)."""

    def __init__(self, cluster: Cluster, name: str, payload: str = PAYLOAD) -> None:
        self.cluster, self.name, self.payload = cluster, name, payload
        self.acked_puts: list[str] = []
        self.failed_puts: list[str] = []
        self.acked_increments: Counter[str] = Counter()
        self.failed_increments: Counter[str] = Counter()
        self.errors: list[str] = []
        self.statuses: Counter[str] = Counter()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.put, args=(t,), daemon=True) for t in range(PUTTERS)]
        self.threads += [
            threading.Thread(target=self.increment, args=(f"ctr-{t}",), daemon=True)
            for t in range(INCREMENTERS)
        ]
        setup = cluster.client()
        for t in range(INCREMENTERS):
            setup.put_item(TableName=name, Item={"pk": {"S": f"ctr-{t}"}, "n": {"N": "0"}})

    def put(self, thread: int) -> None:
        ddb = self.cluster.client(config=NO_RETRIES)
        deadline = time.monotonic() + 180
        for i in range(100_000):
            if self.stop.is_set() or time.monotonic() > deadline:
                return
            key = f"put-{thread}-{i}"
            try:
                ddb.put_item(TableName=self.name, Item={"pk": {"S": key}, "payload": {"S": self.payload}})
            except Exception as exc:  # recorded: it may or may not have been applied
                with self.lock:
                    self.failed_puts.append(key)
                    self.errors.append(repr(exc))
                time.sleep(0.1)
                continue
            with self.lock:
                self.acked_puts.append(key)

    def increment(self, key: str) -> None:
        """n from k to k + 1 only if it is still k: a write applied twice would fail its
        condition, so the counter counts each applied increment exactly once."""
        ddb = self.cluster.client(config=NO_RETRIES)
        deadline = time.monotonic() + 180
        known: int | None = 0
        for _ in range(100_000):
            if self.stop.is_set() or time.monotonic() > deadline:
                return
            try:
                if known is None:  # after a failure: what is there now
                    got = ddb.get_item(TableName=self.name, Key={"pk": {"S": key}}, ConsistentRead=True)
                    known = int(got["Item"]["n"]["N"])
                ddb.update_item(
                    TableName=self.name,
                    Key={"pk": {"S": key}},
                    UpdateExpression="SET n = :new",
                    ConditionExpression="n = :old",
                    ExpressionAttributeValues={":new": {"N": str(known + 1)}, ":old": {"N": str(known)}},
                )
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    self._failed_increment(key, exc)
                known = None
                continue
            except Exception as exc:
                self._failed_increment(key, exc)
                known = None
                continue
            known += 1
            with self.lock:
                self.acked_increments[key] += 1

    def _failed_increment(self, key: str, exc: Exception) -> None:
        with self.lock:
            self.failed_increments[key] += 1
            self.errors.append(repr(exc))
        time.sleep(0.1)

    def watch_status(self, ddb: Any) -> None:
        self.statuses[ddb.describe_table(TableName=self.name)["Table"]["TableStatus"]] += 1

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def check_all_there(self, ddb: Any) -> None:
        """Every acknowledged put readable strongly, each key once; every counter at
        its acknowledged increments, plus at most its failed ones."""
        assert self.acked_puts, "no write was acknowledged"
        items: list[str] = []
        kwargs: dict[str, Any] = {"TableName": self.name, "ConsistentRead": True}
        for _ in range(10_000):
            page = ddb.scan(**kwargs)
            items += [i["pk"]["S"] for i in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        assert len(items) == len(set(items)), "a key came back twice"
        puts = {k for k in items if k.startswith("put-")}
        missing = set(self.acked_puts) - puts
        assert not missing, f"{len(missing)} acknowledged puts lost, e.g. {sorted(missing)[:5]}"
        assert puts <= set(self.acked_puts) | set(self.failed_puts)
        for key in self.acked_puts[::5]:
            got = ddb.get_item(TableName=self.name, Key={"pk": {"S": key}}, ConsistentRead=True)
            assert got["Item"]["payload"]["S"] == self.payload, key
        for t in range(INCREMENTERS):
            key = f"ctr-{t}"
            got = ddb.get_item(TableName=self.name, Key={"pk": {"S": key}}, ConsistentRead=True)
            n = int(got["Item"]["n"]["N"])
            acked, failed = self.acked_increments[key], self.failed_increments[key]
            assert acked <= n <= acked + failed, (key, n, acked, failed)


def _preload(ddb: Any, name: str, count: int) -> list[str]:
    keys = [f"pre-{i}" for i in range(count)]
    for key in keys:
        ddb.put_item(TableName=name, Item={"pk": {"S": key}, "payload": {"S": PAYLOAD}})
    return keys


def _check_preloaded(ddb: Any, name: str, keys: list[str]) -> None:
    for key in keys:
        got = ddb.get_item(TableName=name, Key={"pk": {"S": key}}, ConsistentRead=True)
        assert "Item" in got, key


def _children_layout(parts: list[dict[str, Any]], original: str) -> None:
    """The parent gone, its range covered by children on the same three nodes."""
    assert original not in {p["id"] for p in parts}
    starts = sorted(int(p["hash_range"][0], 16) for p in parts)
    assert starts[0] == 0 and len(set(starts)) == len(starts)
    for p in parts:
        assert sorted(r["node"] for r in p["replicas"]) == ["storage-a", "storage-b", "storage-c"]


def test_a_replicated_partition_past_the_split_size_splits_under_writes_losing_none(
    rf3_split: Cluster,
) -> None:
    ddb = rf3_split.client()
    name = f"rsplit-{uuid.uuid4().hex[:8]}"
    _create(ddb, name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    [original] = _led(rf3_split, name)
    preloaded = _preload(ddb, name, 60)  # about 60 KB: the load takes it past 100 KB

    with Load(rf3_split, name) as load:
        deadline = time.monotonic() + 120
        while len(parts := _partitions(rf3_split, name)) < 2:
            assert time.monotonic() < deadline, f"still {len(parts)} partition(s)"
            load.watch_status(ddb)
            time.sleep(0.3)
        for _ in range(10):  # writes go on for a while on the children
            load.watch_status(ddb)
            time.sleep(0.3)

    assert set(load.statuses) == {"ACTIVE"}, load.statuses  # never UPDATING or CREATING
    assert len(load.acked_puts) > 50 and sum(load.acked_increments.values()) > 10
    parts = _led(rf3_split, name)
    _children_layout(parts, original["id"])
    load.check_all_there(ddb)
    _check_preloaded(ddb, name, preloaded)
    # Failed writes are allowed for (a retry-less client meets a child electing its
    # first leader); they stay few.
    assert len(load.errors) <= 10, load.errors[:5]
    _check_stream_across_the_split(rf3_split, ddb, name, original["id"], load)


def _check_stream_across_the_split(cluster: Cluster, ddb: Any, name: str, parent: str, load: Load) -> None:
    """The parent's shard is closed and its children name it; read parent first, the
    stream holds every write exactly once and in order: each counter's values 0, 1, ...
    up to what is stored, and one INSERT per put item there."""
    streams = cluster.client("dynamodbstreams")
    arn = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    shards = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    closed = [s for s in shards if "EndingSequenceNumber" in s["SequenceNumberRange"]]
    assert len(closed) == 1 and len(shards) >= 3, shards
    children = [s for s in shards if s.get("ParentShardId") == closed[0]["ShardId"]]
    assert len(children) == len(shards) - 1
    values: dict[str, list[int]] = {}
    inserted: list[str] = []
    for shard in closed + children:  # a key's records in the parent come before its child's
        for record in shard_records(streams, arn, shard["ShardId"]):
            image = record["dynamodb"]["NewImage"]
            if "n" in image:
                values.setdefault(image["pk"]["S"], []).append(int(image["n"]["N"]))
            else:
                assert record["eventName"] == "INSERT", record
                inserted.append(image["pk"]["S"])
    for t in range(INCREMENTERS):
        key = f"ctr-{t}"
        stored = int(
            ddb.get_item(TableName=name, Key={"pk": {"S": key}}, ConsistentRead=True)["Item"]["n"]["N"]
        )
        assert values[key] == list(range(stored + 1)), key
    assert len(inserted) == len(set(inserted))
    assert (
        set(load.acked_puts)
        <= set(inserted)
        <= set(load.acked_puts) | set(load.failed_puts) | {f"pre-{i}" for i in range(60)}
    )


def test_a_follower_stopped_through_a_split_then_the_old_leader_killed_loses_no_acknowledged_write(
    rf3_split: Cluster,
) -> None:
    ddb = rf3_split.client()
    name = f"rstop-{uuid.uuid4().hex[:8]}"
    _create(ddb, name)
    [original] = _led(rf3_split, name)
    leader = original["leader"]
    follower = next(r["node"] for r in original["replicas"] if r["node"] != leader)
    preloaded = _preload(ddb, name, 40)

    stopped = rf3_split.pid_of(follower)
    os.kill(stopped, signal.SIGSTOP)
    try:
        with Load(rf3_split, name, SMALL) as load:
            time.sleep(1.0)
            ddb.update_table(TableName=name, ProvisionedThroughput=RAISED)
            _until(lambda: len(_partitions(rf3_split, name)) == 2, 90, "the children")
            # The children take writes with the follower still stopped (their groups
            # elect a leader among the two others first).
            acked_before = len(load.acked_puts)
            _until(
                lambda: len(load.acked_puts) > acked_before + 20,
                30,
                f"writes on the children: {load.errors[-3:]}",
            )
            time.sleep(1.0)
    finally:
        os.kill(stopped, signal.SIGCONT)

    # Resumed: it catches up on the children (from the parent, or by snapshot) before
    # the old leader's node goes.
    def caught_up() -> bool:
        for p in _partitions(rf3_split, name):
            views = {r["node"]: r for r in p["replicas"]}
            lead = views.get(p["leader"] or "", {})
            if views[follower].get("role") != "follower" or "applied_index" not in lead:
                return False
            if views[follower].get("applied_index") != lead["applied_index"]:
                return False
        return True

    _until(caught_up, 60, f"{follower} caught up on the children")
    wait_active(ddb, name, timeout=30)
    killed = rf3_split.pid_of(leader)
    os.kill(killed, signal.SIGKILL)

    # The survivors elect leaders for the children; reads go on once they have.
    reader = rf3_split.client(
        config=Config(retries={"max_attempts": 10, "mode": "standard"}, read_timeout=30)
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            load.check_all_there(reader)
            _check_preloaded(reader, name, preloaded)
            break
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("ConditionalCheckFailedException", "ValidationException"):
                raise
            assert time.monotonic() < deadline, f"reads still fail: {exc!r}"
            time.sleep(1.0)
    _children_layout(_partitions(rf3_split, name), original["id"])
    rf3_split.wait_restarted(leader, killed)


def test_update_table_raising_throughput_splits_a_replicated_table(rf3_split: Cluster) -> None:
    ddb = rf3_split.client()
    name = f"rthru-{uuid.uuid4().hex[:8]}"
    _create(ddb, name)
    [original] = _led(rf3_split, name)
    preloaded = _preload(ddb, name, 40)

    with Load(rf3_split, name, SMALL) as load:
        time.sleep(1.0)
        ddb.update_table(TableName=name, ProvisionedThroughput=RAISED)
        table = wait_active(ddb, name, timeout=90)
        time.sleep(2.0)

    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 1500
    parts = _led(rf3_split, name)
    assert len(parts) == 2
    _children_layout(parts, original["id"])
    load.check_all_there(ddb)
    _check_preloaded(ddb, name, preloaded)
    assert len(load.errors) <= 10, load.errors[:5]
