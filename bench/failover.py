"""Unavailability after SIGKILL of a leader's storage node, replication factor 3.

`python -m bench.failover [--kills N]`: starts `partita up --replication-factor 3`,
creates a one-partition table, and has one client write to it back to back (boto3, no
client retries). Each round SIGKILLs the node that `partita status` names as the
partition's leader and measures the time from the kill to the first write that
succeeds afterwards; the supervisor restarts the node before the next round. Prints
every figure and the median.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from bench.peers import partita_command, start_partita

TABLE = "failover"


def _status(data_dir: Path) -> dict[str, Any]:
    out = subprocess.run(
        [*partita_command(), "status", "--data-dir", str(data_dir)],
        capture_output=True,
        timeout=30,
        check=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def _leader(data_dir: Path) -> str | None:
    for table in _status(data_dir)["tables"]:
        if table["name"] == TABLE:
            leader: str | None = table["partitions"][0]["leader"]
            return leader
    return None


def _pid(data_dir: Path, name: str) -> int:
    cluster = json.loads((data_dir / "cluster.json").read_text())
    return int(next(p["pid"] for p in cluster["processes"] if p["name"] == name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-failover-"))
    peer = start_partita(workdir=workdir, table=TABLE, replication_factor=3)
    data_dir = workdir / "data"
    try:
        ddb = boto3.client(
            "dynamodb",
            endpoint_url=peer.endpoint,
            region_name=peer.region,
            aws_access_key_id=peer.access_key,
            aws_secret_access_key=peer.secret_key,
            config=Config(retries={"total_max_attempts": 1}, read_timeout=10, connect_timeout=5),
        )
        ddb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            # One partition (RCU/3000 + WCU/1000 <= 1), with room for the writer.
            ProvisionedThroughput={"ReadCapacityUnits": 300, "WriteCapacityUnits": 600},
        )
        for _ in range(200):
            if ddb.describe_table(TableName=TABLE)["Table"]["TableStatus"] == "ACTIVE":
                break
            time.sleep(0.1)
        partitions = next(t for t in _status(data_dir)["tables"] if t["name"] == TABLE)["partitions"]
        assert len(partitions) == 1, f"{len(partitions)} partitions: the kill would not stop every write"
        successes: list[tuple[float, float]] = []  # (sent, answered) of each acknowledged write
        stop = threading.Event()

        def writer() -> None:
            i = 0
            while not stop.is_set():
                i += 1
                sent = time.monotonic()
                try:
                    ddb.put_item(TableName=TABLE, Item={"pk": {"S": f"k{i % 100}"}})
                    successes.append((sent, time.monotonic()))
                except Exception:
                    time.sleep(0.01)

        thread = threading.Thread(target=writer)
        thread.start()
        gaps: list[float] = []
        try:
            for round_ in range(args.kills):
                deadline = time.monotonic() + 30
                leader = _leader(data_dir)
                while leader is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                    leader = _leader(data_dir)
                assert leader is not None, "no leader reported"
                pid = _pid(data_dir, leader)
                killed = time.monotonic()
                os.kill(pid, signal.SIGKILL)
                # A write sent before the kill may still be answered after it (its reply
                # was on the way): only writes sent after the kill count.
                while time.monotonic() < killed + 30 and not any(s > killed for s, _ in successes[-50:]):
                    time.sleep(0.005)
                after = [t for s, t in successes[-200:] if s > killed]
                gap = (after[0] - killed) if after else float("inf")
                gaps.append(gap)
                print(
                    f"kill {round_ + 1}: {leader} (pid {pid}); writes resumed after {gap:.3f} s", flush=True
                )
                for _ in range(300):  # the supervisor restarts it; let it rejoin
                    if _pid(data_dir, leader) != pid:
                        break
                    time.sleep(0.1)
                time.sleep(3)
        finally:
            stop.set()
            thread.join(30)
        print(f"median unavailability over {len(gaps)} kills: {statistics.median(gaps):.3f} s", flush=True)
    finally:
        peer.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
