"""The autoadmin as its own process in the local cluster: tables created, updated and
deleted through the DynamoDB API reach ACTIVE (or go away) only through it, and killing
it or a router at any moment leaves no table stuck: the restarted process resumes."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, kill_router, running, wait_active, wait_gone, with_store

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-autoadmin")]

# Generous: a killed autoadmin is restarted by the supervisor after a backoff of up to
# a few seconds when it is killed again soon after starting.
SETTLE_SECONDS = 40.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    flags = ["--defrag-interval", "2", "--etcd-keep-revisions", "100", "--stats-interval", "0.5"]
    with running(Path(tmp_path_factory.mktemp("autoadmin")), *flags) as c:
        yield c


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(ddb: Any, name: str, wcu: int = 5) -> dict[str, Any]:
    out: dict[str, Any] = ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": wcu},
    )["TableDescription"]
    return out


def _partitions(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    from partita.cli.main import _status  # the same JSON `partita status` prints

    status = asyncio.run(_status(cluster.data_dir))
    table = next(t for t in status["tables"] if t["name"] == name)
    parts: list[dict[str, Any]] = table["partitions"]
    return parts


def _autoadmin_log(cluster: Cluster) -> str:
    return (cluster.data_dir / "logs" / "autoadmin.log").read_text(errors="replace")


def test_a_paused_autoadmin_holds_tables_in_creating_and_resuming_it_activates_them(cluster: Cluster) -> None:
    ddb = cluster.client()
    pid = cluster.pid_of("autoadmin")
    name = _name("paused")
    os.kill(pid, signal.SIGSTOP)
    try:
        assert _create(ddb, name)["TableStatus"] == "CREATING"
        time.sleep(1.5)  # routers and storage nodes alone never activate a table
        assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "CREATING"
        assert _partitions(cluster, name) == []  # the router placed nothing
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)
    assert f"table {name}: ACTIVE" in _autoadmin_log(cluster)


def _item_count(ddb: Any, name: str) -> int:
    return int(ddb.describe_table(TableName=name)["Table"]["ItemCount"])


def _eventually(check: Any, what: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_update_table_passes_through_updating_and_splits_partitions(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("upd")
    _create(ddb, name, wcu=3200)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)
    assert len(_partitions(cluster, name)) == 4  # the seed's example: 800 WCU each
    keys = [f"item-{i}" for i in range(40)]
    for k in keys:
        ddb.put_item(TableName=name, Item={"pk": {"S": k}})
    _eventually(lambda: _item_count(ddb, name) == 40, "the leaders never counted 40 items")
    answer = ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 6000}
    )["TableDescription"]
    assert answer["TableStatus"] == "UPDATING"
    # As DynamoDB: the answer still shows the old throughput, the table the new once ACTIVE.
    assert answer["ProvisionedThroughput"]["WriteCapacityUnits"] == 3200
    table = wait_active(ddb, name, timeout=SETTLE_SECONDS)
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 6000
    # Each replicated partition split in two at a log index (750 WCU each).
    assert len(_partitions(cluster, name)) == 8
    # Until the children are counted they carry their share of their parent's count,
    # and one counted before its sibling leaves the sibling the rest of it: never zero,
    # never more than the items there are, whichever child its leader counts first.
    assert table["ItemCount"] == 40

    def counted() -> bool:
        return all(p["estimated"] is False for p in _partitions(cluster, name))

    _eventually(counted, "the children's leaders never recounted")
    assert sum(p["items"] for p in _partitions(cluster, name)) == _item_count(ddb, name) == 40
    # Children keep their parent's replicas, so every item is still where it is looked for.
    for k in keys:
        assert ddb.get_item(TableName=name, Key={"pk": {"S": k}})["Item"] == {"pk": {"S": k}}


def test_killing_the_autoadmin_at_any_moment_leaves_no_table_stuck(cluster: Cluster) -> None:
    # One kill per phase (the supervisor backs off restarts of a process that dies
    # young), landing at a random point among three tables' changes.
    ddb = cluster.client()
    rng = random.Random(7)
    names = [_name("kill") for _ in range(3)]

    def around_a_kill(change: Any) -> None:
        victim = rng.randrange(len(names) + 1)
        for i, name in enumerate(names):
            if i == victim:
                _kill_autoadmin()
            change(name)
            time.sleep(rng.uniform(0, 0.15))
        if victim == len(names):
            _kill_autoadmin()

    def _kill_autoadmin() -> None:
        pid = cluster.pid_of("autoadmin")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + SETTLE_SECONDS
        while cluster.pid_of("autoadmin") == pid:  # restarted by the supervisor
            assert time.monotonic() < deadline, "the supervisor did not restart the autoadmin"
            time.sleep(0.05)

    around_a_kill(lambda name: _create(ddb, name, wcu=1000))
    for name in names:
        wait_active(ddb, name, timeout=SETTLE_SECONDS)
    around_a_kill(
        lambda name: ddb.update_table(
            TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 2500}
        )
    )
    for name in names:
        wait_active(ddb, name, timeout=SETTLE_SECONDS)
        # Applied, not stuck: the new rate is the table's, its replicated partition
        # split at a log index one level per round (1, 2, then 4 for 2,500 WCU).
        described = ddb.describe_table(TableName=name)["Table"]
        assert described["ProvisionedThroughput"]["WriteCapacityUnits"] == 2500
        assert len(_partitions(cluster, name)) == 4
    around_a_kill(lambda name: ddb.delete_table(TableName=name))
    for name in names:
        wait_gone(ddb, name, timeout=SETTLE_SECONDS)


def test_killing_the_router_right_after_a_table_change_leaves_no_table_stuck(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("router")
    _create(ddb, name)
    kill_router(cluster, timeout=SETTLE_SECONDS)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)
    ddb.update_table(TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 6})
    kill_router(cluster, timeout=SETTLE_SECONDS)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)
    ddb.delete_table(TableName=name)
    kill_router(cluster, timeout=SETTLE_SECONDS)
    wait_gone(ddb, name, timeout=SETTLE_SECONDS)


def test_a_second_change_while_updating_is_refused_like_dynamodb(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("busy")
    _create(ddb, name)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)
    pid = cluster.pid_of("autoadmin")
    os.kill(pid, signal.SIGSTOP)  # hold the table in UPDATING
    try:
        ddb.update_table(
            TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 6, "WriteCapacityUnits": 6}
        )
        assert ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "UPDATING"
        for call in (
            lambda: ddb.update_table(
                TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 7, "WriteCapacityUnits": 7}
            ),
            lambda: ddb.delete_table(TableName=name),
        ):
            with pytest.raises(ClientError) as err:
                call()
            assert err.value.response["Error"]["Code"] == "ResourceInUseException"
            assert err.value.response["Error"]["Message"] == (
                f"Attempt to change a resource which is still in use: Table is being updated: {name}"
            )
        # The table stays fully usable while UPDATING, as DynamoDB's does.
        ddb.put_item(TableName=name, Item={"pk": {"S": "during"}})
        assert "Item" in ddb.get_item(TableName=name, Key={"pk": {"S": "during"}})
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)


def test_a_second_autoadmin_stays_passive_and_takes_over_from_a_stalled_leader(
    cluster: Cluster, tmp_path: Path
) -> None:
    ddb = cluster.client()
    log_path = tmp_path / "second-autoadmin.log"

    def second_log() -> str:
        return log_path.read_text(errors="replace") if log_path.exists() else ""

    with open(log_path, "wb") as log:
        second = subprocess.Popen(
            [sys.executable, "-m", "partita.autoadmin.main", "--etcd", f"127.0.0.1:{cluster.ports['etcd']}"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _eventually(lambda: "waiting to lead" in second_log(), "the second autoadmin did not start")
        time.sleep(1.0)
        assert " leads" not in second_log()  # the supervisor's autoadmin holds the role
        leader = cluster.pid_of("autoadmin")
        os.kill(leader, signal.SIGSTOP)  # stalled: it stops refreshing its lease
        try:
            name = _name("failover")
            _create(ddb, name)
            wait_active(ddb, name, timeout=SETTLE_SECONDS)  # by the second, once the TTL ran out
            assert " leads" in second_log() and f"table {name}: ACTIVE" in second_log()
        finally:
            os.kill(leader, signal.SIGCONT)
        # The old leader finds its lease gone and exits; its restarted successor waits.
        _eventually(lambda: cluster.pid_of("autoadmin") != leader, "the stalled leader did not step down")
        assert "lost the leadership" in _autoadmin_log(cluster)
    finally:
        second.terminate()
        assert second.wait(30) == 0  # a clean stop resigns the role
    name = _name("back")
    _create(ddb, name)
    wait_active(ddb, name, timeout=SETTLE_SECONDS)  # the supervisor's autoadmin leads again


def _etcd_db_size(cluster: Cluster) -> int:
    return with_store(cluster, lambda store: store.database_size())


def test_etcd_stays_small_under_a_churn_of_table_updates_and_tags(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("churn")
    _create(ddb, name)
    arn = wait_active(ddb, name, timeout=SETTLE_SECONDS)["TableArn"]
    # Forty 250-byte tags (DynamoDB allows 50 of up to 256): every change rewrites an
    # ~10 KB spec, so history never compacted (or never defragmented) shows plainly.
    padding = "x" * 240
    updates = itertools.count(6)
    spec_bytes = 40 * (len(padding) + 10)
    written = 0

    def churn(rounds: int) -> None:
        nonlocal written
        for i in range(rounds):
            ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": f"k{i % 40:02d}", "Value": f"{padding}{i:08d}"}])
            if i % 100 == 0:
                ddb.update_table(
                    TableName=name,
                    ProvisionedThroughput={"ReadCapacityUnits": next(updates), "WriteCapacityUnits": 5},
                )
                wait_active(ddb, name, timeout=SETTLE_SECONDS)
        written += rounds * spec_bytes

    def settled_size() -> int:
        time.sleep(5)  # the autoadmin compacts and defragments every 2 s here
        return _etcd_db_size(cluster)

    sizes = []
    for _ in range(3):
        churn(300)
        sizes.append(settled_size())
    # The file stays where the first round left it (about 100 kept revisions of the
    # spec), far below what the churn wrote.
    assert max(sizes[1:]) <= sizes[0] * 1.25 + 256 * 1024, sizes
    assert sizes[-1] < written / 3, (sizes, written)
