"""Many replication groups on a local cluster: creation, idle CPU, restart, failover.

`python -m bench.scale [--tables 1000] [--partitions 4] [--idle-seconds 30] [--kills 3]`
starts `partita up --replication-factor 3` (three storage nodes, zones a/b/c), creates
`--tables` provisioned tables of `--partitions` partitions each (1 RCU and
1000 * partitions - 1 WCU: DynamoDB's rule gives exactly that many), so every node holds a replica of
every group, and then measures, in order:

1. creation: the time to create every table through the API (CreateTable from a few
   client threads) and until every table is ACTIVE and every group has a leader;
2. idle: each storage process's CPU (utime+stime from /proc) over `--idle-seconds`
   once the groups had time to quiesce, as a share of one core;
3. restart of every process: `partita up` stopped (SIGINT) and started again on the same
   data; the time from the start until every group has a leader (each node's Status
   RPC), then until every table answered a strongly consistent Scan (which reads every
   partition from its leader);
4. failover: `--kills` rounds of SIGKILL of the node leading the most groups; the time
   from the kill until every group it led has a leader again (each
   node's Status RPC, polled; the killed node answers once restarted), then until every such table answered a strongly
   consistent Scan. The supervisor restarts the node between rounds.

Leaders per node are printed after the restart and after each kill's recovery, and
before each kill the bench waits (at most `--balance-wait` seconds) until leadership
rebalancing has put all but 0.5% of the groups on their preferred leader
(`storage/leader_balance.py`), printing the counts again: a kill then fails over the
share of groups a balanced node leads, not whatever the restarts left.

Everything on 127.0.0.1; every wait is bounded. Prints each figure as it comes and a
JSON summary at the end (`--out` writes it to a file too).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import grpc
from botocore.config import Config

from bench.failover import _status
from bench.peers import Peer, start_partita, stop_process_group
from bench.proc_cpu import CLOCK_TICKS, read_stat
from partita._proto import storage_pb2, storage_pb2_grpc
from partita.storage.leader_balance import stable_order
from partita.storage.replication.types import Role

STORAGE = ("storage-a", "storage-b", "storage-c")
CREATE_WORKERS = 8
PROBE_WORKERS = 8
# Longer than a group takes to quiesce after its last request (quiesce_after, 2 s).
QUIESCE_WAIT = 5.0
# Bounds on each phase's waits (seconds).
CREATE_TIMEOUT = 3600.0
SETTLE_TIMEOUT = 600.0
RECOVER_TIMEOUT = 600.0
FAILOVER_TIMEOUT = 120.0
# After a phase, let the groups go quiet before the next (quiesce_after is 2 s).
QUIET_SECONDS = 5.0
# Between two polls of the nodes' leaders while timing a failover. A poll of three nodes
# takes 0.1-0.3 s itself on the loaded machine, so this adds little to the resolution;
# at 50 ms the bench kept the nodes busy answering it.
FAILOVER_POLL_PAUSE = 0.1
# Groups that may stay off their preferred leader when the bench calls leadership
# balanced (a group busy with a transfer, or whose target is a moment behind).
BALANCE_SLACK = 0.005

Group = tuple[int, str]  # (table id, partition id)


def _client(peer: Peer) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=peer.endpoint,
        region_name=peer.region,
        aws_access_key_id=peer.access_key,
        aws_secret_access_key=peer.secret_key,
        config=Config(
            retries={"total_max_attempts": 1}, read_timeout=30, connect_timeout=5, max_pool_connections=32
        ),
    )


def _cluster(data_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((data_dir / "cluster.json").read_text())
    return data


def _storage_processes(data_dir: Path) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in _cluster(data_dir)["processes"] if p["name"] in STORAGE}


def _node_status(address: str, leaders_only: bool = False) -> storage_pb2.StatusResponse | None:
    try:
        with grpc.insecure_channel(address) as channel:
            stub = storage_pb2_grpc.StorageStub(channel)  # type: ignore[no-untyped-call]
            request = storage_pb2.StatusRequest(leaders_only=leaders_only)
            status: storage_pb2.StatusResponse = stub.Status(request, timeout=10)
            return status
    except grpc.RpcError:
        return None


def _leaders(data_dir: Path, nodes: Iterable[str] = STORAGE) -> dict[Group, str]:
    """Group -> the node that leads it, from each node's own report. Each node lists only
    the groups it leads (`leaders_only`): the whole Status of 4,000 groups took a node
    0.5 s to build (541 KB) during a failover, and polling it from the bench loaded the
    very nodes whose elections were being timed."""
    out: dict[Group, str] = {}
    processes = _storage_processes(data_dir)
    for name in nodes:
        status = _node_status(f"127.0.0.1:{processes[name]['ports']['grpc']}", leaders_only=True)
        if status is None:
            continue
        for p in status.partitions:
            # A quiesced group's leader holds no lease (leases need heartbeats): the
            # node's own claim is what counts; the consistent Scans prove it serves.
            if p.leader == name:
                out[(p.table_id, p.partition_id)] = name
    return out


def _groups(data_dir: Path) -> set[Group]:
    """Every group some node hosts."""
    processes = _storage_processes(data_dir)
    out: set[Group] = set()
    for name in STORAGE:
        status = _node_status(f"127.0.0.1:{processes[name]['ports']['grpc']}")
        if status is not None:
            out.update((p.table_id, p.partition_id) for p in status.partitions)
    return out


def _until(what: str, predicate: Callable[[], bool], timeout: float, pause: float = 0.2) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(pause)
    raise TimeoutError(f"{what}: not done after {timeout:.0f} s")


def _table_name(i: int) -> str:
    return f"scale-{i:05d}"


def create_tables(peer: Peer, tables: int, partitions: int) -> dict[str, float]:
    ddb = _client(peer)

    def create(i: int) -> None:
        for attempt in range(20):
            try:
                ddb.create_table(
                    TableName=_table_name(i),
                    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                    ProvisionedThroughput={
                        "ReadCapacityUnits": 1,
                        "WriteCapacityUnits": 1000 * partitions - 1,
                    },
                )
                return
            except ddb.exceptions.ResourceInUseException:
                return  # an earlier attempt's answer was lost: it exists
            except Exception:
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"could not create {_table_name(i)}")

    started = time.monotonic()
    with ThreadPoolExecutor(CREATE_WORKERS) as pool:
        list(pool.map(create, range(tables)))
    created = time.monotonic() - started
    print(f"create: {tables} CreateTable calls answered in {created:.1f} s", flush=True)

    pending = {_table_name(i) for i in range(tables)}

    def active(name: str) -> bool:
        try:
            return str(ddb.describe_table(TableName=name)["Table"]["TableStatus"]) == "ACTIVE"
        except Exception:
            return False

    def all_active() -> bool:
        with ThreadPoolExecutor(PROBE_WORKERS) as pool:
            done = {
                name
                for name, ok in zip(sorted(pending), pool.map(active, sorted(pending)), strict=True)
                if ok
            }
        pending.difference_update(done)
        return not pending

    _until("tables ACTIVE", all_active, CREATE_TIMEOUT, pause=1.0)
    activated = time.monotonic() - started
    print(f"create: every table ACTIVE {activated:.1f} s after the first call", flush=True)
    return {"create_calls_seconds": created, "all_active_seconds": activated}


def wait_for_leaders(data_dir: Path, expected: int, pause: float = 2.0) -> float:
    def led() -> bool:
        n = len(_leaders(data_dir))
        print(f"  groups led: {n}/{expected}", flush=True)
        return n >= expected

    return _until("every group led", led, SETTLE_TIMEOUT, pause=pause)


def leaders_per_node(led: dict[Group, str]) -> dict[str, int]:
    counts = Counter(led.values())
    return {name: counts.get(name, 0) for name in STORAGE}


def preferred_leaders(groups: Iterable[Group]) -> dict[Group, str]:
    """Each group's preferred leader with every node alive: the first of its members in
    the group's stable order (every node holds a replica of every group here)."""
    members = {name: Role.FULL for name in STORAGE}
    return {(t, p): stable_order(f"{t}/{p}", members)[0] for t, p in groups}


def wait_for_balance(
    data_dir: Path, preferred: dict[Group, str], timeout: float, when: str
) -> dict[str, Any]:
    """Wait (at most `timeout`) until all but BALANCE_SLACK of the groups are led by
    their preferred leader; returns the leaders per node then and the seconds taken."""
    started = time.monotonic()
    slack = math.floor(len(preferred) * BALANCE_SLACK)
    target = dict(Counter(preferred.values()))
    while True:
        led = _leaders(data_dir)
        misplaced = sum(1 for g, node in preferred.items() if led.get(g) != node)
        waited = time.monotonic() - started
        if misplaced <= slack or waited >= timeout:
            break
        time.sleep(1.0)
    counts = leaders_per_node(led)
    balanced = misplaced <= slack
    print(
        f"{when}: leaders per node {counts} (preferred {target}); {misplaced} groups off their "
        f"preferred leader; {'balanced' if balanced else 'NOT balanced'} after {waited:.1f} s",
        flush=True,
    )
    return {"leaders": counts, "misplaced": misplaced, "balanced": balanced, "seconds": waited}


def idle_cpu(data_dir: Path, seconds: float) -> dict[str, float]:
    """Each storage process's CPU share of one core over `seconds` of idleness."""
    pids = {name: int(p["pid"]) for name, p in _storage_processes(data_dir).items()}
    before = {name: read_stat(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    after = {name: read_stat(pid) for name, pid in pids.items()}
    out: dict[str, float] = {}
    for name in pids:
        b, a = before[name], after[name]
        if a is None or b is None or a.pid != b.pid:
            raise RuntimeError(f"{name} restarted during the idle measurement")
        out[name] = (a.own_ticks - b.own_ticks) / CLOCK_TICKS / seconds
    return out


_last_errors: dict[str, str] = {}
# (seconds, error type or "") of every probe of the current serve_all
_probes: list[tuple[float, str]] = []


def _scan_ok(ddb: Any, name: str) -> bool:
    started = time.monotonic()
    try:
        ddb.scan(TableName=name, ConsistentRead=True, Limit=1)
        _probes.append((time.monotonic() - started, ""))
        return True
    except Exception as exc:
        _last_errors[name] = repr(exc)
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__
        _probes.append((time.monotonic() - started, code))
        return False


def _probe_summary() -> str:
    """How the Scans of one serve_all went: their count, slowest, and failures by type."""
    if not _probes:
        return "no probes"
    took = sorted(t for t, _ in _probes)
    failed = Counter(e for _, e in _probes if e)
    slow = sum(t > 1.0 for t in took)
    return (
        f"{len(took)} Scans, p50 {took[len(took) // 2] * 1000:.0f} ms, p99 {took[int(len(took) * 0.99)] * 1000:.0f} ms, "
        f"max {took[-1]:.2f} s, {slow} over 1 s, failed {dict(failed) or 0}"
    )


def serve_all(peer: Peer, names: Iterable[str], timeout: float) -> float:
    """Seconds until every table in `names` answered a strongly consistent Scan."""
    started = time.monotonic()
    pending = list(names)
    local = threading.local()
    _probes.clear()

    def probe(name: str) -> bool:
        if not hasattr(local, "ddb"):
            local.ddb = _client(peer)
        return _scan_ok(local.ddb, name)

    with ThreadPoolExecutor(PROBE_WORKERS) as pool:
        while pending and time.monotonic() - started < timeout:
            pending = [name for name, ok in zip(pending, pool.map(probe, pending), strict=True) if not ok]
            if pending:
                time.sleep(0.05)
    print(f"  probes: {_probe_summary()}", flush=True)
    if pending:
        _report_stuck(peer, pending)
        raise TimeoutError(
            f"{len(pending)} tables never served a consistent read; e.g. {_last_errors.get(pending[0])}"
        )
    return time.monotonic() - started


def _report_stuck(peer: Peer, names: list[str], most: int = 3) -> None:
    """Each node's view of the groups of a few tables that never served: who they
    think leads, in which term, how far each has committed and applied."""
    data_dir = peer.workdir / "data"
    ids = {name: table_id for table_id, name in _table_ids(data_dir, set(names)).items()}
    processes = _storage_processes(data_dir)
    statuses = {name: _node_status(f"127.0.0.1:{p['ports']['grpc']}") for name, p in processes.items()}
    for name in names[:most]:
        print(f"stuck: {name} (table {ids.get(name)}): {_last_errors.get(name)}", flush=True)
        for node, status in statuses.items():
            if status is None:
                print(f"  {node}: no status", flush=True)
                continue
            for p in status.partitions:
                if p.table_id == ids.get(name):
                    print(
                        f"  {node} {p.partition_id}: {p.role}, leader {p.leader or '-'}, term {p.term}, "
                        f"commit {p.commit_index}, applied {p.applied_index}, lease {p.has_lease}, "
                        f"lag {dict(p.follower_lag)}, members {list(p.members)}",
                        flush=True,
                    )


def restart_everything(
    peer: Peer, workdir: Path, table_names: list[str], groups: int, extra_args: tuple[str, ...] = ()
) -> tuple[Peer, dict[str, float]]:
    stop_process_group(peer.proc)
    started = time.monotonic()
    restarted = start_partita(
        workdir=workdir, table=table_names[0], replication_factor=3, extra_args=extra_args
    )
    up = time.monotonic() - started
    try:
        wait_for_leaders(workdir / "data", groups, pause=0.5)
        led = time.monotonic() - started
        print(f"restart: every group led {led:.1f} s after the start", flush=True)
        print(f"restart: leaders per node {leaders_per_node(_leaders(workdir / 'data'))}", flush=True)
        served = serve_all(restarted, table_names, RECOVER_TIMEOUT)
    except BaseException:
        # The caller stops the cluster it knows, the one stopped above: this one would
        # run on after the bench.
        stop_process_group(restarted.proc)
        raise
    total = time.monotonic() - started
    print(
        f"restart: router up after {up:.1f} s; every group led after {led:.1f} s; "
        f"every table served a consistent read after {total:.1f} s"
    )
    return restarted, {
        "router_up_seconds": up,
        "all_led_seconds": led,
        "all_served_seconds": total,
        "after_router_up_seconds": served,
    }


def failover(peer: Peer, data_dir: Path, names_by_id: dict[int, str], reads: bool = True) -> dict[str, float]:
    led = _leaders(data_dir)
    victim = Counter(led.values()).most_common(1)[0][0]
    victims_groups = {g for g, n in led.items() if n == victim}
    pid = int(_storage_processes(data_dir)[victim]["pid"])
    tables = sorted({names_by_id[t] for t, _ in victims_groups})
    healthy = math.nan
    if reads:
        # The same Scans with nothing wrong: the probe's own pace, against which the
        # time after the kill is read.
        healthy = serve_all(peer, tables, FAILOVER_TIMEOUT)
        print(
            f"failover: {len(tables)} tables of {victim}'s groups answer consistent Scans in {healthy:.2f} s healthy"
        )
        time.sleep(QUIESCE_WAIT)  # the groups quiet again, as idle groups are when a node dies
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    remaining = set(victims_groups)

    def moved() -> bool:
        # The killed node answers nothing until it is restarted, and then speaks for a
        # new incarnation: a group it leads again has failed over too.
        now = _leaders(data_dir)
        remaining.difference_update(g for g in list(remaining) if g in now)
        return not remaining

    _until(f"groups of {victim} led elsewhere", moved, FAILOVER_TIMEOUT, pause=FAILOVER_POLL_PAUSE)
    all_led = time.monotonic() - killed
    print(
        f"failover: {victim} killed leading {len(victims_groups)} groups; all led again after {all_led:.2f} s"
    )
    all_served = math.nan
    if reads:
        serve_all(peer, tables, FAILOVER_TIMEOUT)
        all_served = time.monotonic() - killed
        print(
            f"failover: their {len(tables)} tables served consistent reads after {all_served:.2f} s",
            flush=True,
        )
    _until(
        f"{victim} restarted",
        lambda: int(_storage_processes(data_dir)[victim]["pid"]) != pid,
        FAILOVER_TIMEOUT,
    )
    return {
        "groups": float(len(victims_groups)),
        "all_led_seconds": all_led,
        "all_served_seconds": all_served,
        "healthy_served_seconds": healthy,
    }


def _table_ids(data_dir: Path, names: set[str]) -> dict[int, str]:
    status = _status(data_dir)
    return {t["table_id"]: t["name"] for t in status["tables"] if t["name"] in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--skip-restart", action="store_true")
    parser.add_argument(
        "--balance-wait",
        type=float,
        default=120.0,
        help="before each kill, wait at most this long for leadership to be balanced (0: do not wait)",
    )
    parser.add_argument(
        "--skip-failover-reads",
        action="store_true",
        help="time only the leaders after each kill, not the consistent Scans of the tables "
        "(at 1,000 tables those take minutes a kill: one read-index round per partition)",
    )
    parser.add_argument(
        "--no-leader-rebalance",
        action="store_true",
        help="run the cluster with leadership rebalancing off (the figures before it)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    # A SIGTERM (timeout(1), a CI limit) still stops the cluster in `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    data_dir = workdir / "data"
    names = [_table_name(i) for i in range(args.tables)]
    result: dict[str, Any] = {"tables": args.tables, "partitions": args.partitions, "groups": 0}
    print(f"bench.scale: {args.tables} tables x {args.partitions} partitions, RF=3, in {workdir}", flush=True)
    extra_args = ("--no-leader-rebalance",) if args.no_leader_rebalance else ()
    peer = start_partita(workdir=workdir, table=names[0], replication_factor=3, extra_args=extra_args)
    try:
        result["create"] = create_tables(peer, args.tables, args.partitions)
        hosted = _groups(data_dir)
        result["groups"] = len(hosted)
        preferred = preferred_leaders(hosted)
        print(f"groups hosted: {result['groups']}", flush=True)
        result["create"]["all_led_seconds"] = wait_for_leaders(data_dir, result["groups"])
        time.sleep(QUIET_SECONDS)
        result["idle_cpu_share"] = idle_cpu(data_dir, args.idle_seconds)
        print(f"idle: CPU share of one core per storage node {result['idle_cpu_share']}", flush=True)
        if not args.skip_restart:
            peer, result["restart"] = restart_everything(peer, workdir, names, result["groups"], extra_args)
            time.sleep(QUIET_SECONDS)
        names_by_id = _table_ids(data_dir, set(names))
        rounds = []
        balance = []
        for i in range(args.kills):
            balance.append(wait_for_balance(data_dir, preferred, args.balance_wait, f"before kill {i + 1}"))
            rounds.append(failover(peer, data_dir, names_by_id, reads=not args.skip_failover_reads))
            wait_for_leaders(data_dir, result["groups"])
            print(f"after kill {i + 1}: leaders per node {leaders_per_node(_leaders(data_dir))}", flush=True)
            time.sleep(QUIET_SECONDS)
        result["balance"] = balance
        if rounds:
            result["failover"] = {
                "rounds": rounds,
                "median_all_led_seconds": statistics.median(r["all_led_seconds"] for r in rounds),
                "median_all_served_seconds": statistics.median(r["all_served_seconds"] for r in rounds),
            }
            print(
                f"failover: median over {len(rounds)} kills: all led after "
                f"{result['failover']['median_all_led_seconds']:.2f} s, all served after "
                f"{result['failover']['median_all_served_seconds']:.2f} s",
                flush=True,
            )
    finally:
        stop_process_group(peer.proc)
    print(json.dumps(result, indent=2), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
