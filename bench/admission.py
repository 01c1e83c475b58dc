"""Admission control on a real cluster: the rate a PROVISIONED table admits when driven
far above it (docs/benchmarks.md, P4).

    .venv/bin/python -m bench.admission [--wcu 50] [--seconds 30] [--threads 8] [--mode doorman]

Starts `partita up --admission MODE` on free ports (the integration tests' helper),
waits until the Doorman master's learning mode is over, creates a table with the given
WCU, lets it idle `--idle` seconds (unused throughput saved for a burst), then drives
PutItems of one WCU from `--threads` boto3 clients without retries for `--seconds`.
Prints the admitted rate per second and the total against rate x time + saved burst.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from tests.integration.cluster import running, wait_active
from tests.integration.test_admission import create, wait_for_leases

NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30, max_pool_connections=64)


def drive(cluster: Any, table: str, seconds: float, threads: int) -> tuple[list[int], Counter[str]]:
    per_second = [0] * (int(seconds) + 1)
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    start = time.monotonic()
    deadline = start + seconds

    def run(worker: int) -> None:
        ddb = cluster.client(config=NO_RETRIES)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            try:
                ddb.put_item(TableName=table, Item={"pk": {"S": f"{worker}-{i}"}})
                with lock:
                    per_second[min(int(time.monotonic() - start), len(per_second) - 1)] += 1
            except ClientError as exc:
                with lock:
                    errors[exc.response["Error"]["Code"]] += 1

    workers = [threading.Thread(target=run, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return per_second, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wcu", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--idle", type=float, default=0.0, help="seconds the table idles first (burst savings)"
    )
    parser.add_argument("--mode", choices=("local", "doorman"), default="doorman")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="partita-admission-"))
    # No fsync: the bench measures admission, not the disk (offered load must exceed the rate).
    with running(directory, "--admission", args.mode, "--unsafe-no-fsync") as cluster:
        if args.mode == "doorman":
            wait_for_leases(cluster)
        ddb = cluster.client()
        table = create(
            ddb,
            BillingMode="PROVISIONED",
            ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": args.wcu},
        )
        wait_active(ddb, table)
        time.sleep(args.idle)
        per_second, errors = drive(cluster, table, args.seconds, args.threads)
    total = sum(per_second)
    offered = total + sum(errors.values())
    expected = args.wcu * args.seconds + args.wcu * max(1.0, min(args.idle, 300.0))
    print(f"mode={args.mode} wcu={args.wcu} seconds={args.seconds} threads={args.threads} idle={args.idle}")
    print(f"offered {offered / args.seconds:.0f}/s; admitted {total} ({total / args.seconds:.1f}/s)")
    print(f"rate x time + saved burst (at most 300 s; one second when idle < 1 s): {expected:.0f}")
    print(f"admitted / that: {total / expected:.3f}")
    print(f"per second: {per_second}")
    print(f"errors: {dict(errors)}")


if __name__ == "__main__":
    main()
