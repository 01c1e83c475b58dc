"""Admission control on a real cluster: the rate a PROVISIONED table admits when driven
far above it through several routers (docs/benchmarks.md, P4; the issue's figure:
100 WCU, two routers, 5x the rate, 60 s, within 10% of rate x time plus the burst).

    .venv/bin/python -m bench.admission [--wcu 100] [--seconds 60] [--threads 16] [--routers 2] [--mode doorman]

Starts `partita up --admission MODE` on free ports (the integration tests' helper) and
`--routers - 1` more `partita router` processes on the same etcd and Doorman servers,
waits until the Doorman master's learning mode is over, creates a table with the given
WCU, lets it idle `--idle` seconds (unused throughput saved for a burst), then drives
PutItems of `--item-kb` WCU each (an item of N KB costs N WCU: large items offer many
times the rate with few requests, which a 2-core machine can send) from `--threads`
boto3 clients (spread over the routers) without retries for `--seconds`. Prints the
offered and admitted WCU, per router too, and the total against rate x time + the
burst savings. A new table's savings start full (300 s x its rate, at every router and
partition, as DynamoDB admits a short load on a new table at once); `--clip` first
lowers the table to 1 WCU and writes through every router, which clips each bucket's
savings to 300 WCU, then restores the rate: what follows measures the rate itself.

    .venv/bin/python -m bench.admission --wcu 100 --routers 2 --item-kb 10 --clip
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, free_port_layout, wait_active
from tests.integration.test_admission import create, wait_for_leases
from tests.unit.control.conftest import free_port

NO_RETRIES = Config(
    retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=30, max_pool_connections=64
)


def start_router(cluster: Cluster, mode: str) -> tuple[subprocess.Popen[bytes], str]:
    """Another router of the cluster (as `partita up` starts its own) on a free port."""
    port = free_port()
    doorman = ",".join(f"127.0.0.1:{cluster.ports['doorman'] + i}" for i in range(2))
    argv = [
        sys.executable, "-m", "partita.cli.main", "router",
        "--port", str(port),
        "--etcd", f"127.0.0.1:{cluster.ports['etcd']}",
        "--data-dir", str(cluster.data_dir),
        "--admission", mode,
        *(["--doorman", doorman] if mode == "doorman" else []),
    ]  # fmt: skip
    log = open(cluster.data_dir / f"router-{port}.log", "wb")  # noqa: SIM115 - owned by the child
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, (cluster.data_dir / f"router-{port}.log").read_text()
        try:
            cluster.client(endpoint_url=endpoint).list_tables()
            return process, endpoint
        except Exception:
            assert time.monotonic() < deadline, "the extra router never answered"
            time.sleep(0.2)


def clip_savings(cluster: Any, endpoints: list[str], table: str, wcu: int) -> None:
    """Every router's and partition's savings down to 300 s of 1 WCU (see --clip)."""
    ddb = cluster.client()
    ddb.update_table(TableName=table, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 1})
    wait_active(ddb, table)
    time.sleep(1.0)  # every storage node sees the new rate
    for endpoint in endpoints:
        client = cluster.client(endpoint_url=endpoint)
        for i in range(20):
            client.put_item(TableName=table, Item={"pk": {"S": f"clip-{i}"}})
    ddb.update_table(
        TableName=table, ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": wcu}
    )
    wait_active(ddb, table)


def drive(
    cluster: Any, endpoints: list[str], table: str, seconds: float, threads: int, item_kb: int
) -> tuple[list[int], Counter[str], Counter[str]]:
    per_second = [0] * (int(seconds) + 1)
    errors: Counter[str] = Counter()
    per_router: Counter[str] = Counter()
    lock = threading.Lock()
    start = time.monotonic()
    deadline = start + seconds

    def run(worker: int) -> None:
        endpoint = endpoints[worker % len(endpoints)]
        ddb = cluster.client(config=NO_RETRIES, endpoint_url=endpoint)
        i = 0
        # An item of item_kb KB, key and names included: item_kb WCU per PutItem.
        filler = "x" * (item_kb * 1024 - 40)
        while time.monotonic() < deadline:
            i += 1
            try:
                ddb.put_item(TableName=table, Item={"pk": {"S": f"{worker}-{i}"}, "v": {"S": filler}})
                with lock:
                    per_second[min(int(time.monotonic() - start), len(per_second) - 1)] += item_kb
                    per_router[endpoint] += item_kb
            except ClientError as exc:
                with lock:
                    errors[exc.response["Error"]["Code"]] += item_kb

    workers = [threading.Thread(target=run, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return per_second, errors, per_router


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wcu", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--routers", type=int, default=2, help="routers the clients are spread over")
    parser.add_argument(
        "--idle", type=float, default=0.0, help="seconds the table idles first (burst savings)"
    )
    parser.add_argument("--mode", choices=("local", "doorman"), default="doorman")
    parser.add_argument("--item-kb", type=int, default=1, help="KB per item, so WCU per PutItem")
    parser.add_argument(
        "--clip", action="store_true", help="clip the burst savings first (see the docstring)"
    )
    parser.add_argument(
        "--start-timeout", type=float, default=300.0, help="seconds `partita up` may take (a shared machine)"
    )
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="partita-admission-"))
    # No fsync: the bench measures admission, not the disk (offered load must exceed the rate).
    cluster = Cluster(
        directory, free_port_layout(), extra_args=("--admission", args.mode, "--unsafe-no-fsync")
    )
    cluster.start(timeout=args.start_timeout)
    extra: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        extra += [start_router(cluster, args.mode) for _ in range(args.routers - 1)]
        if args.mode == "doorman":
            wait_for_leases(cluster)
        ddb = cluster.client()
        table = create(
            ddb,
            BillingMode="PROVISIONED",
            ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": args.wcu},
        )
        wait_active(ddb, table)
        endpoints = [cluster.endpoint, *(endpoint for _, endpoint in extra)]
        if args.clip:
            clip_savings(cluster, endpoints, table, args.wcu)
        time.sleep(args.idle)
        per_second, errors, per_router = drive(
            cluster, endpoints, table, args.seconds, args.threads, args.item_kb
        )
    finally:
        for process, _ in extra:
            process.terminate()
            process.wait(30)
        cluster.stop()
    total = sum(per_second)
    offered = total + sum(errors.values())
    # Savings at the start: clipped, 300 WCU per router plus what the routers saved while
    # idle; else full, 300 s of the rate at each router.
    savings = (
        len(endpoints) * 300.0 + args.wcu * args.idle  # the refill is the table's rate in all
        if args.clip
        else len(endpoints) * 300.0 * args.wcu
    )
    expected = args.wcu * args.seconds + savings
    tail = per_second[len(per_second) // 2 : -1]
    print(
        f"mode={args.mode} wcu={args.wcu} seconds={args.seconds} threads={args.threads} "
        f"routers={args.routers} idle={args.idle} item_kb={args.item_kb} clip={args.clip}"
    )
    print(
        f"offered {offered / args.seconds:.0f} WCU/s ({offered / args.seconds / args.wcu:.2f}x the rate); "
        f"admitted {total} WCU ({total / args.seconds:.1f}/s)"
    )
    print(f"admitted WCU per router: {[per_router[e] for e in endpoints]}")
    print(f"rate x time + burst savings at the start ({savings:.0f}): {expected:.0f}")
    print(f"admitted / that: {total / expected:.3f}")
    if tail:
        print(f"admitted WCU/s over the second half: {sum(tail) / len(tail):.1f} (rate {args.wcu})")
    print(f"per second: {per_second}")
    print(f"errors: {dict(errors)}")


if __name__ == "__main__":
    main()
