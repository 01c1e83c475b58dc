"""Admission control on a real cluster: the rate a PROVISIONED table admits when driven
far above it through several routers (docs/benchmarks.md, P4; the issue's figure:
100 WCU, two routers, 5x the rate, 60 s, within 10% of rate x time plus the burst).

    .venv/bin/python -m bench.admission [--wcu 100] [--seconds 60] [--threads 16] [--routers 2] [--mode doorman]

Starts `partita up --admission MODE` on free ports (the integration tests' helper) and
`--routers - 1` more `partita router` processes on the same etcd and Doorman servers,
waits until the Doorman master's learning mode is over, creates a table with the given
WCU, lets it idle `--idle` seconds (unused throughput saved for a burst), then drives
PutItems of one WCU from `--threads` boto3 clients (spread over the routers) without
retries for `--seconds`. Prints the offered and admitted rates, per router too, and the
total against rate x time + saved burst (each router keeps its own burst savings, at
most 300 s of its share; a table younger than a second saves one second's worth).
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

NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30, max_pool_connections=64)


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


def drive(
    cluster: Any, endpoints: list[str], table: str, seconds: float, threads: int
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
        while time.monotonic() < deadline:
            i += 1
            try:
                ddb.put_item(TableName=table, Item={"pk": {"S": f"{worker}-{i}"}})
                with lock:
                    per_second[min(int(time.monotonic() - start), len(per_second) - 1)] += 1
                    per_router[endpoint] += 1
            except ClientError as exc:
                with lock:
                    errors[exc.response["Error"]["Code"]] += 1

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
        time.sleep(args.idle)
        endpoints = [cluster.endpoint, *(endpoint for _, endpoint in extra)]
        per_second, errors, per_router = drive(cluster, endpoints, table, args.seconds, args.threads)
    finally:
        for process, _ in extra:
            process.terminate()
            process.wait(30)
        cluster.stop()
    total = sum(per_second)
    offered = total + sum(errors.values())
    expected = args.wcu * args.seconds + args.wcu * max(1.0, min(args.idle, 300.0))
    print(
        f"mode={args.mode} wcu={args.wcu} seconds={args.seconds} threads={args.threads} "
        f"routers={args.routers} idle={args.idle}"
    )
    print(f"offered {offered / args.seconds:.0f}/s; admitted {total} ({total / args.seconds:.1f}/s)")
    print(f"admitted per router: {[per_router[e] for e in endpoints]}")
    print(f"rate x time + saved burst (at most 300 s; one second when idle < 1 s): {expected:.0f}")
    print(f"admitted / that: {total / expected:.3f}")
    print(f"per second: {per_second}")
    print(f"errors: {dict(errors)}")


if __name__ == "__main__":
    main()
