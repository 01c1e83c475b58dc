"""Table-level admission on a real cluster (`partita up --admission doorman`): the
autoadmin publishes each PROVISIONED table's throughput as Doorman resources, the
router leases its share and holds the table to it (plus the burst it saved), throttled
requests get DynamoDB's ProvisionedThroughputExceededException with ThrottlingReasons,
an UpdateTable moves the rate within a refresh interval, and an on-demand table is not
throttled at the rates a local cluster can offer. Bounds are loose on purpose (a
shared 2-core machine); bench/admission.py measures precisely."""

from __future__ import annotations

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
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, clip_burst_savings, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-admission")]

NO_RETRIES = Config(
    retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=30, max_pool_connections=16
)
# A Doorman master gives new clients nothing during its learning mode (after the
# election at cluster start: the default configuration's 20 s); the tests start after.
LEARNING_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(Path(tmp_path_factory.mktemp("admission")), "--admission", "doorman") as c:
        wait_for_leases(c)
        yield c


def wait_for_leases(cluster: Cluster) -> None:
    ddb = cluster.client(config=NO_RETRIES)
    table = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    )
    deadline = time.monotonic() + LEARNING_TIMEOUT
    while time.monotonic() < deadline:
        try:
            ddb.put_item(TableName=table, Item={"pk": {"S": "warm"}})
            ddb.put_item(TableName=table, Item={"pk": {"S": "warm"}})
            return  # two in a row: a lease, not the provisional first second
        except ClientError:
            time.sleep(0.5)
    raise TimeoutError("no Doorman lease within the learning mode")


def wait_for_table_lease(
    cluster: Cluster, table: str, timeout: float = 40.0, at_least: float = 0.0, ask: str = "ask"
) -> None:
    """Until a Doorman server has granted the table's write resource: a new resource
    starts in learning mode once the autoadmin's entry for it is loaded, and grants a
    router new to it nothing meanwhile (its savings carry it; a test that drains them
    first must wait for the lease, or it measures the learning mode)."""
    # The router asks for a table's lease (for its current rate) when a request comes.
    cluster.client(config=NO_RETRIES).put_item(TableName=table, Item={"pk": {"S": ask}})
    series = f'partita_doorman_has{{resource="table/{table}/wcu"}}'
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in cluster.cluster_file()["processes"]:
            if proc["role"] != "doorman":
                continue
            url = f"http://127.0.0.1:{proc['ports']['metrics']}/metrics"
            with urllib.request.urlopen(url, timeout=10) as response:
                for line in response.read().decode().splitlines():
                    if line.startswith(series) and float(line.rsplit(" ", 1)[1]) > at_least:
                        return
        time.sleep(0.5)
    raise TimeoutError(f"no Doorman lease for {table}")


def sized(key: str, wcu: int) -> dict[str, Any]:
    """An item whose PutItem costs `wcu` WCU (1 KB each, the key and names included)."""
    return {"pk": {"S": key}, "v": {"S": "x" * (wcu * 1024 - 100)}}


def drain_writes(ddb: Any, table: str, wcu: int) -> None:
    """Spends the burst savings a new table starts with (300 s x its rate, at the
    router and at its partition) so what follows meets the rate itself: a test of
    throttling must first drain the burst DynamoDB grants. Large writes take the bulk
    (380 WCU each); then writes of one second's worth until the first throttle, so the
    debt left behind is at most a second of the rate (a request is charged after it ran)."""
    left = wcu * 300
    for i in range(left // 380 + 2):
        if left <= wcu:
            break
        cost = min(380, left - wcu)
        ddb.put_item(TableName=table, Item=sized(f"drain-{i}", cost))
        left -= cost
    for i in range(200):
        try:
            ddb.put_item(TableName=table, Item=sized(f"tail-{i}", wcu))
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            return
    raise AssertionError("the savings outlasted the drain")


def create(ddb: Any, **mode: Any) -> str:
    name = f"adm-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        **mode,
    )
    wait_active(ddb, name, timeout=30)
    return name


def hammer(
    cluster: Cluster, table: str, seconds: float, threads: int = 4
) -> tuple[int, Counter[str], list[Any]]:
    """PutItems of one WCU each from `threads` clients without retries, as fast as they
    go: (accepted, errors by code, the first throttled error responses)."""
    accepted = 0
    errors: Counter[str] = Counter()
    samples: list[Any] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def run(worker: int) -> None:
        nonlocal accepted
        ddb = cluster.client(config=NO_RETRIES)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            try:
                ddb.put_item(TableName=table, Item={"pk": {"S": f"{worker}-{i}"}})
                with lock:
                    accepted += 1
            except ClientError as exc:
                with lock:
                    errors[exc.response["Error"]["Code"]] += 1
                    if len(samples) < 3:
                        samples.append(exc.response)

    workers = [threading.Thread(target=run, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + 60)
    return accepted, errors, samples


def test_a_provisioned_table_is_held_near_its_rate(cluster: Cluster) -> None:
    ddb = cluster.client()
    created = time.monotonic()
    table = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 10},
    )
    wait_for_table_lease(cluster, table)
    drain_writes(cluster.client(config=NO_RETRIES), table, 10)
    created = time.monotonic()  # the rate counts from the drain on
    seconds = 8.0
    refused_before = router_throttled(cluster, table) + storage_throttled(cluster, table)
    accepted, errors, samples = hammer(cluster, table, seconds)
    lifetime = time.monotonic() - created
    # At most the rate over the table's life since its savings were drained, with slack
    # for requests in flight; at least half the rate over the run (the lease arrived).
    assert accepted <= 10 * (lifetime + 1) + 15, (accepted, errors, lifetime)
    assert accepted >= 10 * seconds * 0.5, (accepted, errors)
    assert set(errors) == {"ProvisionedThroughputExceededException"}
    # Either the router or the partition's leader refuses, whichever runs out first: the
    # partition holds the table's whole rate, so both name the table's limit.
    assert samples[0]["ThrottlingReasons"] == [
        {
            "reason": "TableWriteProvisionedThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:000000000000:table/{table}",
        }
    ]
    assert samples[0]["Error"]["Message"].startswith("The level of configured provisioned throughput")
    # Every refusal is counted once, by the layer that made it.
    refused = router_throttled(cluster, table) + storage_throttled(cluster, table) - refused_before
    assert refused == sum(errors.values()), (refused, errors)


def test_boto3_retries_a_throttled_write_until_it_succeeds(cluster: Cluster) -> None:
    ddb = cluster.client()
    table = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )
    wait_for_table_lease(cluster, table)
    drain_writes(cluster.client(config=NO_RETRIES), table, 5)  # else 30 writes fit in the burst
    patient = cluster.client(config=Config(retries={"max_attempts": 10, "mode": "standard"}, read_timeout=30))
    for i in range(30):  # 30 writes at 5 WCU: throttled along the way, all land
        patient.put_item(TableName=table, Item={"pk": {"S": f"k{i}"}})
    count = sum(1 for i in range(30) if "Item" in ddb.get_item(TableName=table, Key={"pk": {"S": f"k{i}"}}))
    assert count == 30


def test_update_table_raises_the_rate_within_a_refresh_interval(cluster: Cluster) -> None:
    ddb = cluster.client()
    created = time.monotonic()
    table = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )
    wait_for_table_lease(cluster, table)
    drain_writes(cluster.client(config=NO_RETRIES), table, 5)
    created = time.monotonic()  # the rate counts from the drain on
    before, _, _ = hammer(cluster, table, 4.0)
    lifetime = time.monotonic() - created
    ddb.update_table(
        TableName=table, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 100}
    )
    wait_active(ddb, table, timeout=30)
    time.sleep(8)  # the Doorman reload (2 s) plus the table resources' refresh interval (5 s)
    after, _, _ = hammer(cluster, table, 4.0)
    assert before <= 5 * (lifetime + 1) + 15, (before, lifetime)
    assert after >= 3 * before, (before, after)


def test_an_on_demand_table_is_not_throttled_at_local_rates(cluster: Cluster) -> None:
    ddb = cluster.client()
    table = create(ddb, BillingMode="PAY_PER_REQUEST")
    accepted, errors, _ = hammer(cluster, table, 3.0)
    assert accepted > 0 and not errors, errors


def test_an_on_demand_tables_maximum_holds_it_and_is_named_when_it_throttles(cluster: Cluster) -> None:
    ddb = cluster.client()
    created = time.monotonic()
    table = create(ddb, BillingMode="PAY_PER_REQUEST", OnDemandThroughput={"MaxWriteRequestUnits": 10})
    wait_for_table_lease(cluster, table)
    seconds = 6.0
    accepted, errors, samples = hammer(cluster, table, seconds)
    lifetime = time.monotonic() - created
    # At most its maximum over its life, with the 30 s of it an on-demand table may save,
    # and slack for requests in flight.
    assert accepted <= 10 * (lifetime + 30) + 15, (accepted, errors, lifetime)
    assert set(errors) == {"ProvisionedThroughputExceededException"}, errors
    assert samples[0]["ThrottlingReasons"] == [
        {
            "reason": "TableWriteMaxOnDemandThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:000000000000:table/{table}",
        }
    ]


def storage_throttled(cluster: Cluster, table: str) -> float:
    """partita_storage_throttled_requests_total for the table's writes at the partition
    layer, summed over the storage nodes' /metrics."""
    total = 0.0
    series = f'partita_storage_throttled_requests_total{{kind="write",layer="partition",table="{table}"}}'
    for proc in cluster.cluster_file()["processes"]:
        if proc["role"] != "storage":
            continue
        url = f"http://127.0.0.1:{proc['ports']['metrics']}/metrics"
        total += series_value(url, series)
    return total


def router_throttled(cluster: Cluster, table: str) -> float:
    """partita_router_throttled_requests_total for the table's writes at the table layer
    (the default layout's one router serves /metrics beside the API); 0 before its first."""
    series = f'partita_router_throttled_requests_total{{kind="write",layer="table",table="{table}"}}'
    return series_value(cluster.endpoint + "/metrics", series)


def series_value(url: str, series: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(series):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def partition_allocations(cluster: Cluster, table: str) -> float:
    """The highest write allocation the storage nodes give the table's partitions, once
    each of its four partitions has a bucket; else inf."""
    series = "partita_storage_partition_allocated_units{"
    values: list[float] = []
    for proc in cluster.cluster_file()["processes"]:
        if proc["role"] != "storage":
            continue
        url = f"http://127.0.0.1:{proc['ports']['metrics']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(series) and f'table="{table}"' in line and 'kind="write"' in line:
                    values.append(float(line.rsplit(" ", 1)[1]))
    return max(values) if len(values) >= 4 else float("inf")


def storage_boosts(cluster: Cluster, table: str) -> float:
    """partita_storage_adaptive_boosts_total of the table's writes, over the nodes."""
    total = 0.0
    series = f'partita_storage_adaptive_boosts_total{{kind="write",table="{table}"}}'
    for proc in cluster.cluster_file()["processes"]:
        if proc["role"] != "storage":
            continue
        url = f"http://127.0.0.1:{proc['ports']['metrics']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(series):
                    total += float(line.rsplit(" ", 1)[1])
    return total


def test_a_hot_partition_under_its_tables_rate_is_throttled_then_boosted(cluster: Cluster) -> None:
    # 9,000 RCU + 200 WCU: four partitions, each 50 WCU. ~50 KB items cost 49 WCU: one
    # key written 3 times a second (~150 WCU/s) is three times its partition's share and
    # under the table's rate. Its partition is throttled at the storage layer once its
    # savings are spent, then adaptive capacity raises its allocation (towards the table's
    # unused rate) and the throttling stops. The demand is small on purpose: a client
    # slowed by a loaded machine (CI runs tests two at a time on two cores) still offers
    # more than the partition's share; at 9 writes of 100 KB a second it did not.
    ddb = cluster.client(config=NO_RETRIES)
    table = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 9000, "WriteCapacityUnits": 200},
    )
    # The savings start full (15,000 WCU per partition): clipped to 300 WCU first.
    clip_burst_savings(
        ddb,
        table,
        lambda i: {"pk": {"S": f"touch-{i}"}},
        9000,
        200,
        clipped=lambda: partition_allocations(cluster, table) <= 1.0,
    )
    # The router's lease comes back from the clipping's 1 WCU (its next request asks, then
    # a Doorman reload and a refresh interval) to what an idle router wants: its floor,
    # 5% of the table's rate (the wants follow use, partita.doorman.wants). The hot load
    # below raises them; the hot partition saves 50 WCU/s meanwhile.
    wait_for_table_lease(cluster, table, timeout=60.0, at_least=0.05 * 200 - 1, ask="hot")
    boosts_before = storage_boosts(cluster, table)
    payload = "x" * 50_000
    # The load runs until the behaviour shows, not for a fixed time: the hot partition's
    # savings at the start depend on how long the lease above took (50 WCU/s saved
    # meanwhile) and on how long the router's lease takes to follow the jump in demand
    # (a refresh interval, 5 s), so when the partition is first throttled varies. Bounds:
    # 90 s for the first refusal at the partition layer, then 40 s for the boosts to
    # catch up, shown by `calm` seconds in a row without a refusal.
    per_second, calm = 3.0, 6.0
    first_deadline, settle_deadline = 90.0, 40.0
    start = time.monotonic()
    outcomes: list[tuple[float, str]] = []  # (seconds since start, "ok" or the throttling reason)
    lock = threading.Lock()

    def settled(t: float) -> bool:
        first = next((s for s, o in outcomes if o == "TableWriteKeyRangeThroughputExceeded"), None)
        if first is None:
            return t >= first_deadline
        last_refusal = max(s for s, o in outcomes if o != "ok")
        return t - last_refusal >= calm or t - first >= settle_deadline

    def run(worker: int) -> None:
        client = cluster.client(config=NO_RETRIES)
        due = time.monotonic()
        while True:
            t = time.monotonic() - start
            with lock:
                if settled(t):
                    return
            try:
                client.put_item(TableName=table, Item={"pk": {"S": "hot"}, "v": {"S": payload}})
                outcome = "ok"
            except ClientError as exc:
                reasons = exc.response.get("ThrottlingReasons") or [{"reason": exc.response["Error"]["Code"]}]
                outcome = reasons[0]["reason"]
            with lock:
                outcomes.append((t, outcome))
            # Two workers share the pace. A worker held up by a slow answer does not
            # catch up in a burst: that would offer more than the table's rate, and
            # be throttled for it.
            due = max(due + 2 / per_second, time.monotonic())
            time.sleep(max(0.0, due - time.monotonic()))

    workers = [threading.Thread(target=run, args=(w,)) for w in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(first_deadline + settle_deadline + 60)
    ended = time.monotonic() - start
    by_second = Counter((int(t), o) for t, o in outcomes if o != "ok")
    partition_refusals = [t for t, o in outcomes if o == "TableWriteKeyRangeThroughputExceeded"]
    assert partition_refusals, (ended, sorted(by_second.items()))  # the partition, once its savings ran out
    reasons = {o for _, o in outcomes if o != "ok"}
    # The router may refuse too at first, while its lease climbs back from the clipping's
    # 1 WCU (a refresh interval): the table, never anything else.
    assert reasons <= {"TableWriteKeyRangeThroughputExceeded", "TableWriteProvisionedThroughputExceeded"}
    assert storage_boosts(cluster, table) > boosts_before
    # Then the boosts caught up: the last `calm` seconds took the whole pace, unrefused.
    late = [o for t, o in outcomes if t >= ended - calm]
    assert all(o == "ok" for o in late), (ended - partition_refusals[0], sorted(by_second.items()))
    assert len(late) >= calm * per_second * 0.5, len(late)  # the pace held: the demand was there


def test_a_new_tables_short_load_is_admitted_at_once_without_retries(cluster: Cluster) -> None:
    # What DynamoDB test suites do right after CreateTable: their tables have 1-10
    # RCU/WCU and take tens to hundreds of requests at once. The savings start full
    # (300 s of the rate), so none of it is throttled (the client retries nothing).
    ddb = cluster.client(config=NO_RETRIES)
    small = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    )
    ddb.batch_write_item(
        RequestItems={small: [{"PutRequest": {"Item": {"pk": {"S": f"k{i}"}}}} for i in range(25)]}
    )
    scanned = ddb.scan(TableName=small, ConsistentRead=True)["Items"]
    assert len(scanned) == 25
    for i in range(25):
        key = {":k": {"S": f"k{i}"}}
        ddb.query(TableName=small, KeyConditionExpression="pk = :k", ExpressionAttributeValues=key)
    five = create(
        ddb,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )
    for i in range(200):
        ddb.put_item(TableName=five, Item={"pk": {"S": f"k{i}"}})
    assert ddb.scan(TableName=five, Select="COUNT")["Count"] == 200


def test_a_global_index_out_of_its_write_capacity_throttles_the_tables_writes(cluster: Cluster) -> None:
    """A global index has its own throughput, as DynamoDB's: a write that spends more of
    the index's write capacity than it has (its 300 s of savings, at 1 WCU) leaves the
    table's next writes refused, though the table itself has 1,000 WCU to spare; the
    index's reads are its own and still admitted."""
    ddb = cluster.client(config=NO_RETRIES)
    name = f"adm-gsi-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 100, "WriteCapacityUnits": 1000},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 1},
            }
        ],
    )
    wait_active(ddb, name, timeout=30)
    # 380 KB, projected whole into the index: 380 of the index's write units at once.
    ddb.put_item(TableName=name, Item={"pk": {"S": "big"}, "g": {"S": "x"}, "v": {"S": "x" * 380 * 1024}})
    with pytest.raises(ClientError) as caught:
        ddb.put_item(TableName=name, Item={"pk": {"S": "next"}, "g": {"S": "y"}})
    error = caught.value.response
    assert error["Error"]["Code"] == "ProvisionedThroughputExceededException"
    arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    assert error["ThrottlingReasons"] == [
        {"reason": "IndexWriteProvisionedThroughputExceeded", "resource": f"{arn}/index/by-g"}
    ]
    found = ddb.query(
        TableName=name,
        IndexName="by-g",
        KeyConditionExpression="g = :g",
        ExpressionAttributeValues={":g": {"S": "x"}},
        Select="COUNT",
    )
    assert found["Count"] == 1
