"""What write sharding costs readers, and how fast it absorbs a hot key (partita.client.sharding).

Run from the repository root (about a minute against a fresh local cluster):

    .venv/bin/python -m bench.bench_sharding
    .venv/bin/python -m bench.bench_sharding --shards 1,4,16 --items 1000 --grow-seconds 10

1. Read fan-out. For each shard count S: one partition key of table `audit` (file_path
   S, ts N, on-demand) holds `--items` items of ~200 bytes spread over S shards with a
   fixed random suffix (loaded, not measured). Measured: reading the whole key, as one
   stream (`ShardedTable.query_all(page=--page)`) and page by page through cursors
   (`query(limit=--page, cursor=...)`), `--reps` times each: median time per full read,
   Query requests and items read (ScannedCount, what DynamoDB charges) per full read,
   items/s; and a single-item read: computed
   suffix (1 GetItem) against random suffix (S concurrent GetItems), median of 200.
2. Growth under a partition limit. Partita does not throttle partitions yet (P4), so a
   botocore `before-call` hook limits each physical partition key to `--key-limit`
   PutItems per second and answers the rest as DynamoDB does
   (ProvisionedThroughputExceededException, reason TableWriteKeyRangeThroughputExceeded).
   `--writers` threads write one hot key through `DynamicShardedTable` for
   `--grow-seconds` (cooldown 2 s, back-off 0-1 s); reported per second: accepted
   writes, throttles, and the shard count. This measures the library's reaction, not
   Partita's admission control.

Results go to bench/results/sharding-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from bench import peers
from bench.ycsb import RESULTS_DIR, machine_info
from partita.client.sharding import DynamicShardedTable, GrowthPolicy, ShardedTable, Suffix

TABLE = "audit"
META_TABLE = "audit-shards"


def _client(peer: peers.Peer) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=peer.endpoint,
        region_name=peer.region,
        aws_access_key_id=peer.access_key,
        aws_secret_access_key=peer.secret_key,
        config=Config(retries={"total_max_attempts": 1}, max_pool_connections=32),
    )


def _create(ddb: Any, name: str, keys: list[tuple[str, str]]) -> None:
    kinds = ["HASH", "RANGE"]
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": a, "KeyType": kinds[i]} for i, (a, _) in enumerate(keys)],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in keys],
        BillingMode="PAY_PER_REQUEST",
    )
    for _ in range(300):
        if ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE":
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} never became ACTIVE")


def _entry(path: str, ts: int) -> dict[str, Any]:
    return {"file_path": {"S": path}, "ts": {"N": str(ts)}, "user": {"S": "u" * 160}}


class QueryCounter:
    """Queries sent and items they read (ScannedCount), from botocore's after-call event."""

    def __init__(self) -> None:
        self.count = 0
        self.scanned = 0
        self.lock = threading.Lock()

    def __call__(self, parsed: dict[str, Any], **_: Any) -> None:
        with self.lock:
            self.count += 1
            self.scanned += int(parsed.get("ScannedCount", 0))


def _by_cursor(table: ShardedTable, path: str, page: int) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    while True:
        got = table.query(path, limit=page, cursor=cursor)
        yield from got.items
        if got.cursor is None:
            return
        cursor = got.cursor


def _measure(
    queries: QueryCounter, reps: int, items: int, read: Callable[[], Iterator[Any]]
) -> dict[str, Any]:
    """Median time of a full read of the key, and the Queries and items read per full read."""
    times = []
    for _ in range(reps):
        before, scanned_before = queries.count, queries.scanned
        start = time.perf_counter()
        got = sum(1 for _ in read())
        times.append(time.perf_counter() - start)
        if got != items:
            raise AssertionError(f"read {got} items of {items}")
        per_read, read_per_read = queries.count - before, queries.scanned - scanned_before
    median = statistics.median(times)
    return {
        "read_ms_median": round(median * 1000, 1),
        "queries_per_read": per_read,
        "items_read_per_read": read_per_read,
        "items_per_s": round(items / median),
    }


def read_fanout(ddb: Any, shard_counts: list[int], items: int, page: int, reps: int) -> list[dict[str, Any]]:
    queries = QueryCounter()
    ddb.meta.events.register("after-call.dynamodb.Query", queries)
    rows = []
    for shards in shard_counts:
        path = f"/shared/{uuid.uuid4().hex[:8]}/firetvGen2.txt"
        with ShardedTable(ddb, TABLE, partition_key="file_path", sort_key="ts", shards=shards) as table:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(table.put_item, (_entry(path, ts) for ts in range(items))))
            stream = _measure(queries, reps, items, functools.partial(table.query_all, path, page=page))
            pages = _measure(queries, reps, items, functools.partial(_by_cursor, table, path, page))
        get_times: dict[str, float] = {}
        for suffix in (Suffix.COMPUTED, Suffix.RANDOM):
            with ShardedTable(ddb, TABLE, partition_key="file_path", sort_key="ts", shards=shards,
                              suffix=suffix) as table:  # fmt: skip
                point = f"{path}-get-{suffix.value}"
                table.put_item(_entry(point, 7))
                samples = []
                for _ in range(200):
                    start = time.perf_counter()
                    table.get_item(point, {"N": "7"})
                    samples.append(time.perf_counter() - start)
                get_times[suffix.value] = statistics.median(samples) * 1000
        rows.append(
            {
                "shards": shards,
                "items": items,
                "page": page,
                "stream": stream,
                "pages": pages,
                "get_ms_computed": round(get_times["computed"], 2),
                "get_ms_random": round(get_times["random"], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


class KeyLimit:
    """At most `per_second` PutItems per second reach each physical key of the table."""

    def __init__(self, per_second: int) -> None:
        self.per_second = per_second
        self.lock = threading.Lock()
        self.windows: dict[str, tuple[int, int]] = {}
        self.throttled: Counter[int] = Counter()

    def __call__(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        body = json.loads(params["body"])
        if body.get("TableName") != TABLE:
            return None
        key = body["Item"]["file_path"]["S"]
        second = int(time.monotonic())
        with self.lock:
            window, used = self.windows.get(key, (second, 0))
            if window != second:
                window, used = second, 0
            if used < self.per_second:
                self.windows[key] = (window, used + 1)
                return None
            self.throttled[second] += 1
        error = {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"},
            "ThrottlingReasons": [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": TABLE}],
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return AWSResponse("http://127.0.0.1/", 400, {}, None), error


def growth(peer: peers.Peer, key_limit: int, writers: int, seconds: float) -> list[dict[str, Any]]:
    limit = KeyLimit(key_limit)
    path = f"/shared/{uuid.uuid4().hex[:8]}/hot.txt"
    policy = GrowthPolicy(cooldown=2.0, backoff_min=0.0, backoff_max=1.0, max_shards=64)
    accepted: Counter[int] = Counter()
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    origin = int(time.monotonic())
    observer = _client(peer)
    counts: dict[int, int] = {}
    tables = []
    for _ in range(writers):
        client = _client(peer)
        client.meta.events.register("before-call.dynamodb.PutItem", limit)
        tables.append(DynamicShardedTable(client, TABLE, META_TABLE, partition_key="file_path", sort_key="ts",
                                          policy=policy, cache_ttl=0.5, write_timeout=30))  # fmt: skip

    def write(index: int, table: DynamicShardedTable) -> None:
        ts = index
        while time.monotonic() < stop_at:
            table.put_item(_entry(path, ts))
            with lock:
                accepted[int(time.monotonic())] += 1
            ts += writers

    threads = [threading.Thread(target=write, args=(i, t)) for i, t in enumerate(tables)]
    for t in threads:
        t.start()
    while time.monotonic() < stop_at:
        item = observer.get_item(TableName=META_TABLE, Key={"file_path": {"S": path}}).get("Item")
        counts[int(time.monotonic())] = int(item["number_of_shards"]["N"]) if item else 0
        time.sleep(0.25)
    for t in threads:
        t.join(timeout=60)
    for table in tables:
        table.close()
    rows = []
    for second in range(origin, int(stop_at)):
        rows.append(
            {
                "second": second - origin,
                "accepted": accepted[second],
                "throttled": limit.throttled[second],
                "shards": counts.get(second, 0),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shards", default="1,2,4,8,16", help="shard counts of the read fan-out")
    parser.add_argument("--items", type=int, default=2000, help="items of the one partition key read")
    parser.add_argument("--page", type=int, default=100, help="page size (limit) of the sharded read")
    parser.add_argument("--reps", type=int, default=5, help="full reads per shard count")
    parser.add_argument("--key-limit", type=int, default=50, help="PutItems per second per physical key")
    parser.add_argument("--writers", type=int, default=8, help="writer threads on the hot key")
    parser.add_argument("--grow-seconds", type=float, default=20.0, help="length of the growth run")
    args = parser.parse_args(argv)
    with peers.running("partita", table=TABLE) as peer:
        ddb = _client(peer)
        _create(ddb, TABLE, [("file_path", "S"), ("ts", "N")])
        _create(ddb, META_TABLE, [("file_path", "S")])
        started = dt.datetime.now(dt.UTC)
        fanout = read_fanout(ddb, [int(s) for s in args.shards.split(",")], args.items, args.page, args.reps)
        grown = growth(peer, args.key_limit, args.writers, args.grow_seconds)
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"sharding-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    out.write_text(
        json.dumps(
            {"args": vars(args), "machine": machine_info(), "read_fanout": fanout, "growth": grown},
            indent=2,
        )
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
