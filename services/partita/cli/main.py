"""`partita`: one console script, one sub-command per process role and tool."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partita.common import arg_types, config, gc_policy, logs

if TYPE_CHECKING:
    from partita.router.main import RunningRouter
    from partita.router.storage_client import DataChannel
    from partita.router.tls import TlsFiles
    from partita.storage.node import Attach

_STATS_INTERVAL: dict[str, Any] = {
    "type": arg_types.positive_seconds,
    "default": config.DEFAULT_STATS_INTERVAL_SECONDS,
    "help": "seconds between recounts of ItemCount/TableSizeBytes (%(default)s)",
}
_TTL_SWEEP_INTERVAL: dict[str, Any] = {
    "type": arg_types.positive_seconds,
    "default": config.DEFAULT_TTL_SWEEP_INTERVAL_SECONDS,
    "help": "seconds between passes deleting items whose Time to Live has expired (%(default)s)",
}


def _setup_logging(args: argparse.Namespace, process: str) -> None:
    level = "debug" if args.verbose else args.log_level
    logs.configure(process, level, args.log_format)


def _run_loop(coro: Any) -> None:
    try:
        import uvloop

        uvloop.run(_serving(coro))
    except ImportError:  # pragma: no cover - uvloop is a dependency
        asyncio.run(_serving(coro))


async def _serving(coro: Any) -> Any:
    """A long-running service's main coroutine, with the collector set for serving."""
    gc_policy.tune_for_serving(asyncio.get_running_loop())
    return await coro


# --- up ------------------------------------------------------------------------------


def _banner(data_dir: Path, endpoint: str, region: str) -> str:
    from partita.router.credentials import credentials_path, load

    creds = load(credentials_path(data_dir))
    cred = creds[0]
    aws = "aws"
    if shutil.which("aws") is None:
        # `make` installs the AWS CLI into the virtualenv next to `partita`.
        beside = Path(sys.executable).parent / "aws"
        aws = str(beside) if beside.exists() else "aws"
    return "\n".join(
        [
            "",
            f"Partita is running. DynamoDB endpoint: {endpoint}",
            "",
            "Paste into your shell:",
            f"  export AWS_ACCESS_KEY_ID={cred.access_key_id}",
            f"  export AWS_SECRET_ACCESS_KEY={cred.secret_access_key}",
            f"  export AWS_DEFAULT_REGION={region}",
            "",
            "Then, for example:",
            f"  {aws} dynamodb create-table --endpoint-url {endpoint} --table-name Music "
            "--attribute-definitions AttributeName=Artist,AttributeType=S "
            "--key-schema AttributeName=Artist,KeyType=HASH --billing-mode PAY_PER_REQUEST",
            "",
            "Ctrl-C stops the cluster; `partita up` again recovers every table and item.",
            "",
        ]
    )


def _metrics_banner(endpoints: list[tuple[str, str]], data_dir: Path) -> str:
    lines = ["Metrics (Prometheus text format):"]
    lines += [f"  {name:<10} {url}" for name, url in endpoints]
    lines += [
        f"  scrape them all: prometheus --config.file {data_dir / 'prometheus.yml'}",
        f"  live view:       partita top --data-dir {data_dir}",
    ]
    return "\n".join([*lines, ""])


def _ensure_credentials(data_dir: Path) -> None:
    from partita.router.credentials import create_credential, credentials_path, load

    path = credentials_path(data_dir)
    if not path.exists() or not load(path):
        create_credential(path, name="default", description="created by `partita up`")


def cmd_up(args: argparse.Namespace) -> int:
    from partita.cli.supervisor import ClusterLayout, Supervisor

    _setup_logging(args, "up")
    if args.routers == "colocated" and args.admission == "local":
        # Each router would admit every table's whole rate: three times it in all.
        print("partita up: --admission local needs one router; with --routers colocated use doorman or off")
        return 2
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    _ensure_credentials(data_dir)
    layout = ClusterLayout(
        data_dir=data_dir,
        host=args.host,
        router_port=args.port,
        etcd_port=args.etcd_port,
        storage_base_port=args.storage_base_port,
        region=args.region,
        sync=not args.unsafe_no_fsync,
        stats_interval=args.stats_interval,
        ttl_sweep_interval=args.ttl_sweep_interval,
        log_level=args.log_level,
        doorman_base_port=args.doorman_base_port,
        on_demand_partitions=args.on_demand_partitions,
        replication_factor=args.replication_factor,
        replica_down_after=args.replica_down_after,
        defrag_interval=args.defrag_interval,
        keep_revisions=args.keep_revisions,
        admission=args.admission,
        split_size_bytes=args.split_size_bytes,
        split_hot_seconds=args.split_hot_seconds,
        split_replicated_groups=args.split_replicated_groups,
        shuffle_shard=args.shuffle_shard,
        shard_max_shared=args.shard_max_shared,
        migration=args.migration,
        migrate_above=args.migrate_above,
        migrate_room_below=args.migrate_room_below,
        node_read_units=args.node_read_units,
        node_write_units=args.node_write_units,
        load_report_interval=args.load_report_interval,
        leader_rebalance=not args.no_leader_rebalance,
        routers=args.routers,
        tls=_tls_files(args),
        copy_claim_seconds=args.copy_claim_seconds,
    )

    async def main() -> int:
        import signal

        supervisor = Supervisor(layout)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await supervisor.start()
        except RuntimeError as exc:
            logging.getLogger("partita.up").error("%s", exc)
            await supervisor.stop()
            return 1
        print(_banner(data_dir, layout.endpoint, args.region), flush=True)
        print(_metrics_banner(supervisor.metrics_endpoints(), data_dir), flush=True)
        watcher = asyncio.create_task(supervisor.watch())
        await stop.wait()
        watcher.cancel()
        await supervisor.stop()
        return 0

    try:
        import uvloop

        return uvloop.run(main())
    except ImportError:  # pragma: no cover
        return asyncio.run(main())


# --- single services -----------------------------------------------------------------


def cmd_router(args: argparse.Namespace) -> int:
    from partita.router.main import serve

    _setup_logging(args, "router")
    etcd_host, etcd_port = config.parse_endpoint(args.etcd)
    starting = _start_router(
        args,
        etcd_host,
        etcd_port,
        port=args.port,
        data_dir=Path(args.data_dir),
        admission=args.admission,
        store_kind=args.control_store,
        namespace=args.namespace,
    )
    _run_loop(serve(starting))
    return 0


def _start_router(
    args: argparse.Namespace,
    etcd_host: str,
    etcd_port: int,
    *,
    port: int,
    data_dir: Path,
    admission: str,
    store_kind: str = "etcd",
    namespace: str | None = None,
    beside: tuple[str, str, DataChannel] | None = None,
) -> Awaitable[RunningRouter]:
    """A router from the flags `partita router` and `partita storage --router-port` share
    (--host, --region, --replication, --doorman). `beside`: the storage node in this
    process (its id, data address and in-process channel); the port is then shared."""
    from partita.router.context import RouterSettings, endpoint_address
    from partita.router.main import start

    settings = RouterSettings(
        region=args.region,
        endpoint_address=endpoint_address(args.host, port),
        replication=args.replication,
        local_node=beside[0] if beside is not None else "",
    )
    return start(
        tls=_tls_files(args),
        copy_claim_seconds=args.copy_claim_seconds,
        host=args.host,
        port=port,
        etcd_host=etcd_host,
        etcd_port=etcd_port,
        data_dir=data_dir,
        settings=settings,
        store_kind=store_kind,
        namespace=namespace,
        admission=admission,
        doorman=[a for a in args.doorman.split(",") if a],
        local={beside[1]: beside[2]} if beside is not None else None,
        reuse_port=beside is not None,
    )


def _tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """--tls-cert and --tls-key, both or neither; the paths made absolute (a supervisor's
    children do not share its working directory's meaning)."""
    from partita.router.tls import TlsFiles

    cert, key = getattr(args, "tls_cert", None), getattr(args, "tls_key", None)
    if (cert is None) != (key is None):
        raise SystemExit("partita: --tls-cert and --tls-key go together")
    if cert is None or key is None:
        return None
    return TlsFiles(Path(cert).resolve(), Path(key).resolve())


def cmd_storage(args: argparse.Namespace) -> int:
    from partita.storage.main import serve

    _setup_logging(args, args.node_id)
    etcd_host, etcd_port = config.parse_endpoint(args.etcd)
    _run_loop(
        serve(
            node_id=args.node_id,
            zone=args.zone,
            host=args.host,
            port=args.port,
            data_port=args.data_port,
            data_dir=Path(args.data_dir),
            etcd_host=etcd_host,
            etcd_port=etcd_port,
            sync=not args.unsafe_no_fsync,
            stats_interval=args.stats_interval,
            ttl_sweep_interval=args.ttl_sweep_interval,
            metrics_port=args.metrics_port,
            replication=args.replication,
            admission=args.admission,
            replica_down_after=args.replica_down_after,
            hosting=args.hosting,
            replication_listen=(
                config.parse_endpoint(args.replication_listen) if args.replication_listen else None
            ),
            replication_advertise=args.replication_advertise,
            leader_rebalance=not args.no_leader_rebalance,
            attach=_router_beside(args, etcd_host, etcd_port) if args.router_port is not None else None,
            node_units={"read": args.node_read_units, "write": args.node_write_units},
            load_report_interval=args.load_report_interval,
            shard_max_shared=args.shard_max_shared,
        )
    )
    return 0


def _router_beside(args: argparse.Namespace, etcd_host: str, etcd_port: int) -> Attach:
    """How a storage node starts a router in its own process (`--router-port`): it reaches
    this node through the node's in-process channel and the others over their sockets."""
    from partita.storage.data_server import LocalDataChannel

    async def attach(channel: LocalDataChannel, data_address: str) -> Callable[[], Awaitable[None]]:
        router = await _start_router(
            args,
            etcd_host,
            etcd_port,
            port=args.router_port,
            data_dir=Path(args.credentials_dir),
            admission=args.router_admission,
            beside=(args.node_id, data_address, channel),
        )
        return router.close

    return attach


def cmd_doorman(args: argparse.Namespace) -> int:
    from partita.doorman.main import serve

    _setup_logging(args, "doorman")
    parent = [a for a in args.parent.split(",") if a] if args.parent else None
    _run_loop(
        serve(
            server_id=args.server_id or f"doorman-{args.host}:{args.port}",
            host=args.host,
            port=args.port,
            metrics_port=args.metrics_port,
            config_path=Path(args.config) if args.config else None,
            config_key=args.config_key,
            parent=parent,
            etcd=None if args.etcd == "none" else config.parse_endpoint(args.etcd),
            election_name=args.election_name,
            election_ttl=args.election_ttl,
            advertise=args.advertise,
        )
    )
    return 0


def cmd_autoadmin(args: argparse.Namespace) -> int:
    # The autoadmin is control-plane code (operator/), which services never import: run
    # it as a fresh interpreter in this process's place, with the same arguments.
    argv = [sys.executable, "-m", "partita.autoadmin.main", *args.passed_on]
    if args.verbose:
        argv.append("--verbose")
    os.execv(sys.executable, argv)


# --- status --------------------------------------------------------------------------


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _status(data_dir: Path) -> dict[str, Any]:
    from partita.control.store import EtcdControlStore

    cluster = json.loads((data_dir / "cluster.json").read_text())
    processes = [dict(p, alive=_alive(p.get("pid"))) for p in cluster["processes"]]
    out: dict[str, Any] = {
        "endpoint": cluster["endpoint"],
        "metrics": cluster.get("metrics", {}),
        "processes": processes,
        "tables": [],
    }
    host, port = config.parse_endpoint(cluster["etcd"])
    store = EtcdControlStore(host, port, timeout=3)
    try:
        nodes = {n.node_id: n for n in await store.list_nodes()}
        draining = await store.list_draining()
        out["nodes"] = [dict(n.to_json(), draining=n.node_id in draining) for n in nodes.values()]
        reports = await _replica_reports(list(nodes.values()))
        for record in sorted(await store.list_tables(), key=lambda r: r.name):
            stats = await store.list_partition_stats(record.table_id)
            out["tables"].append(
                {
                    "name": record.name,
                    "status": record.status,
                    "table_id": record.table_id,
                    "partitions": [
                        {
                            "id": p.partition_id,
                            "hash_range": [f"{p.start:#018x}", f"{p.end:#x}"],
                            "replicas": [
                                {
                                    "node": r,
                                    "address": nodes[r].address if r in nodes else None,
                                    **_replica_view(reports.get((record.table_id, p.partition_id, r))),
                                }
                                for r in p.replicas
                            ],
                            # Group members routers do not read from: log-only, and
                            # full members still being built (docs/replication.md).
                            "log_replicas": list(p.log_replicas),
                            "joining": list(p.joining),
                            "leader": _reported_leader(reports, record.table_id, p.partition_id, p.replicas)
                            or p.leader,
                            # The leader's last count (None: not counted yet).
                            "items": stats[p.partition_id].item_count if p.partition_id in stats else None,
                            "size_bytes": stats[p.partition_id].size_bytes
                            if p.partition_id in stats
                            else None,
                            # A split child's share of its parent's count, until counted.
                            "estimated": stats[p.partition_id].estimated if p.partition_id in stats else None,
                        }
                        for p in record.partitions
                    ],
                }
            )
    except Exception as exc:
        out["control_store_error"] = str(exc)
    finally:
        await store.close()
    out["doorman"] = await _doorman_status(host, [p for p in processes if p.get("role") == "doorman"])
    return out


async def _replica_reports(nodes: list[Any]) -> dict[tuple[int, str, str], Any]:
    """Each storage node's own view of the partitions it hosts (its Status RPC): role,
    term, commit and applied index, lease, followers' lag."""
    import grpc

    from partita._proto import storage_pb2, storage_pb2_grpc

    out: dict[tuple[int, str, str], Any] = {}
    for node in nodes:
        try:
            async with grpc.aio.insecure_channel(node.address) as channel:
                stub = storage_pb2_grpc.StorageStub(channel)  # type: ignore[no-untyped-call]
                status = await stub.Status(storage_pb2.StatusRequest(), timeout=2)
        except grpc.aio.AioRpcError:
            continue  # a node that does not answer reports nothing
        for p in status.partitions:
            out[(p.table_id, p.partition_id, node.node_id)] = p
    return out


def _replica_view(report: Any) -> dict[str, Any]:
    if report is None:
        return {"role": None}
    view: dict[str, Any] = {"role": report.role}
    if report.term:
        view.update(
            term=report.term,
            commit_index=report.commit_index,
            applied_index=report.applied_index,
            has_lease=report.has_lease,
        )
        if report.follower_lag:
            view["follower_lag"] = dict(report.follower_lag)
    return view


def _reported_leader(
    reports: dict[tuple[int, str, str], Any], table_id: int, partition_id: str, replicas: tuple[str, ...]
) -> str | None:
    """The replica that says it leads, in the highest term (None if none says so)."""
    leading = [
        (reports[(table_id, partition_id, r)].term, r)
        for r in replicas
        if (table_id, partition_id, r) in reports and reports[(table_id, partition_id, r)].role == "leader"
    ]
    return max(leading)[1] if leading else None


async def _doorman_status(host: str, processes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each Doorman server's own view: is it the master, and whom does it follow."""
    import grpc

    from partita._proto import doorman_pb2, doorman_pb2_grpc

    out = []
    for p in processes:
        address = f"{host}:{p['ports']['grpc']}"
        entry: dict[str, Any] = {"name": p["name"], "address": address, "alive": p["alive"]}
        try:
            async with grpc.aio.insecure_channel(address) as channel:
                stub = doorman_pb2_grpc.CapacityStub(channel)  # type: ignore[no-untyped-call]
                found = await stub.Discovery(doorman_pb2.DiscoveryRequest(), timeout=2)
            entry["is_master"] = bool(found.is_master)
            entry["master"] = found.mastership.master_address or None
        except grpc.aio.AioRpcError as exc:
            entry["error"] = exc.code().name
        out.append(entry)
    return out


def cmd_status(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    if not (data_dir / "cluster.json").exists():
        print(json.dumps({"error": f"no cluster in {data_dir} (run `partita up`)"}))
        return 1
    print(json.dumps(asyncio.run(_status(data_dir)), indent=2))
    return 0


# --- parser --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from partita.cli import credentials_cmd, node_cmd, top

    parser = argparse.ArgumentParser(prog="partita", description="Partita: a DynamoDB-compatible database")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="run the local cluster (etcd, storage nodes, router, autoadmin)")
    up.add_argument("--data-dir", default=config.DEFAULT_DATA_DIR)
    up.add_argument("--host", default=config.DEFAULT_HOST)
    up.add_argument("--port", type=int, default=config.DEFAULT_ROUTER_PORT, help="DynamoDB endpoint port")
    up.add_argument("--etcd-port", type=int, default=config.DEFAULT_ETCD_PORT)
    up.add_argument("--storage-base-port", type=int, default=config.DEFAULT_STORAGE_BASE_PORT)
    up.add_argument("--region", default=config.DEFAULT_REGION)
    up.add_argument("--unsafe-no-fsync", action="store_true", help="skip fsync (benchmarks only)")
    up.add_argument("--stats-interval", **_STATS_INTERVAL)
    up.add_argument("--ttl-sweep-interval", **_TTL_SWEEP_INTERVAL)
    logs.add_flags(up, fmt="text")  # the supervisor's own lines go to a terminal
    up.add_argument(
        "--doorman-base-port",
        type=int,
        default=config.DEFAULT_DOORMAN_PORT,
        help="Doorman i serves gRPC on this + i and /metrics on this + 100 + i (%(default)s)",
    )
    up.add_argument(
        "--on-demand-partitions",
        type=arg_types.at_least_one,
        default=config.DEFAULT_ON_DEMAND_PARTITIONS,
        help="partitions of a new PAY_PER_REQUEST table (%(default)s)",
    )
    up.add_argument(
        "--replication-factor",
        type=int,
        choices=(1, 3),
        default=config.DEFAULT_REPLICATION_FACTOR,
        help="replicas of each new partition, one per zone, kept by consensus (%(default)s)",
    )
    up.add_argument(
        "--replica-down-after",
        type=arg_types.positive_seconds,
        default=config.DEFAULT_REPLICA_DOWN_AFTER_SECONDS,
        help="seconds a replica may go unheard before its group's leader adds a log-only member "
        "elsewhere (%(default)s)",
    )
    up.add_argument(
        "--defrag-interval",
        type=arg_types.positive_seconds,
        default=config.DEFAULT_DEFRAG_INTERVAL_SECONDS,
        help="seconds between the autoadmin's compactions + defragmentations of etcd (%(default)s)",
    )
    up.add_argument(
        "--etcd-keep-revisions",
        dest="keep_revisions",
        type=arg_types.at_least_one,
        default=config.DEFAULT_KEEP_REVISIONS,
        help="revisions of etcd history kept when compacting (%(default)s)",
    )
    arg_types.add_split_flags(up)
    arg_types.add_shard_flags(up)
    arg_types.add_migration_flags(up)
    arg_types.add_node_load_flags(up)
    up.add_argument(
        "--admission",
        choices=("off", "local", "doorman"),
        default="doorman",
        help="enforce tables' throughput as DynamoDB does: doorman (routers lease their shares "
        "from the cluster's Doorman servers; the autoadmin writes doorman.yaml), with partition "
        "and node buckets at the storage nodes; local (one router admits each table's whole "
        "rate); off (nothing throttled) (%(default)s)",
    )
    up.add_argument(
        "--no-leader-rebalance",
        action="store_true",
        help="storage nodes never hand led groups back to their preferred leaders",
    )
    up.add_argument(
        "--routers",
        choices=("separate", "colocated"),
        default="separate",
        help="serve the DynamoDB endpoint from a router process of its own (separate), or from a "
        "router in every storage node's process sharing the port (colocated: eventually "
        "consistent reads served by the node's own replicas, no socket between) (%(default)s)",
    )
    arg_types.add_tls_flags(up)
    arg_types.add_copy_flags(up)
    up.set_defaults(func=cmd_up)

    router = sub.add_parser("router", help="run one request router")
    router.add_argument("--host", default=config.DEFAULT_HOST)
    router.add_argument("--port", type=int, default=config.DEFAULT_ROUTER_PORT)
    router.add_argument("--etcd", default=f"{config.DEFAULT_HOST}:{config.DEFAULT_ETCD_PORT}")
    router.add_argument("--data-dir", default=config.DEFAULT_DATA_DIR, help="holds credentials.json")
    router.add_argument("--region", default=config.DEFAULT_REGION)
    router.add_argument(
        "--replication",
        action="store_true",
        help="partitions with several replicas are replication groups: writes and strong reads to the "
        "leader the nodes name, eventually consistent reads spread over the replicas",
    )
    router.add_argument(
        "--admission",
        choices=("off", "local", "doorman"),
        default="off",
        help="table throughput enforcement: off; local (this router admits each table's whole "
        "provisioned rate); doorman (its share, leased from --doorman) (%(default)s)",
    )
    router.add_argument("--doorman", default="", help="Doorman servers host:port,... for --admission doorman")
    router.add_argument(
        "--control-store",
        choices=("etcd", "kubernetes"),
        default="etcd",
        help="where tables live: etcd, or Table/Partition resources (in a pod; nodes stay in etcd) (%(default)s)",
    )
    router.add_argument(
        "--namespace", help="the Tables' namespace with --control-store kubernetes (default: the pod's)"
    )
    arg_types.add_tls_flags(router)
    arg_types.add_copy_flags(router)
    logs.add_flags(router)
    router.set_defaults(func=cmd_router)

    storage = sub.add_parser("storage", help="run one storage node")
    storage.add_argument("--node-id", required=True)
    storage.add_argument("--zone", required=True)
    storage.add_argument("--host", default=config.DEFAULT_HOST)
    storage.add_argument("--port", type=int, required=True, help="admin gRPC port")
    storage.add_argument("--data-port", type=int, required=True, help="data path port (framed batches)")
    storage.add_argument("--data-dir", required=True)
    storage.add_argument("--etcd", default=f"{config.DEFAULT_HOST}:{config.DEFAULT_ETCD_PORT}")
    storage.add_argument("--unsafe-no-fsync", action="store_true", help="skip fsync (benchmarks only)")
    storage.add_argument("--stats-interval", **_STATS_INTERVAL)
    storage.add_argument("--ttl-sweep-interval", **_TTL_SWEEP_INTERVAL)
    arg_types.add_node_load_flags(storage)
    arg_types.add_shard_bound_flag(storage)
    storage.add_argument("--metrics-port", type=int, help="serve /metrics on this port (default: off)")
    storage.add_argument(
        "--replication",
        action="store_true",
        help="run a replication group for every hosted partition with several replicas (default: "
        "each replica commits alone, as before replication)",
    )
    storage.add_argument(
        "--admission",
        action="store_true",
        help="hold each hosted partition to its share of the table's throughput and the node to "
        "its capacity (TableRead/WriteKeyRangeThroughputExceeded); default: not enforced",
    )
    storage.add_argument(
        "--replica-down-after",
        type=arg_types.positive_seconds,
        default=config.DEFAULT_REPLICA_DOWN_AFTER_SECONDS,
        help="seconds a member of a group this node leads may go unheard before it is repaired "
        "around (%(default)s)",
    )
    storage.add_argument(
        "--hosting",
        choices=("control", "admin"),
        default="control",
        help="what to host: what the control store places here (control), or exactly what the "
        "operator assigned through the admin RPC, kept across restarts (admin; Kubernetes) (%(default)s)",
    )
    storage.add_argument(
        "--replication-listen",
        type=arg_types.host_port,
        help="accept peers' replication streams on this HOST:PORT (default: --host and a free "
        "port, registered in the control store)",
    )
    storage.add_argument(
        "--replication-advertise",
        type=arg_types.host_port,
        help="the HOST:PORT peers dial for this node's replication streams, registered in the "
        "control store (default: the listener's; Kubernetes: the pod's DNS name)",
    )
    storage.add_argument(
        "--no-leader-rebalance",
        action="store_true",
        help="never hand led groups back to their preferred leaders (default: this node "
        "transfers each group it leads to the first live member in the group's stable order)",
    )
    storage.add_argument(
        "--router-port",
        type=int,
        help="also serve the DynamoDB API on this port, from this process (a router beside the "
        "node: reads its replicas serve cost no socket); the port is shared with the other "
        "processes serving it (SO_REUSEPORT), and the kernel spreads connections over them",
    )
    storage.add_argument(
        "--router-admission",
        choices=("off", "local", "doorman"),
        default="off",
        help="with --router-port: the router's table throughput enforcement, as `partita router "
        "--admission` (%(default)s)",
    )
    storage.add_argument(
        "--doorman", default="", help="Doorman servers host:port,... for --router-admission doorman"
    )
    storage.add_argument("--region", default=config.DEFAULT_REGION, help="with --router-port (%(default)s)")
    arg_types.add_tls_flags(storage)
    arg_types.add_copy_flags(storage)
    storage.add_argument(
        "--credentials-dir",
        default=config.DEFAULT_DATA_DIR,
        help="with --router-port: the directory holding credentials.json (%(default)s)",
    )
    logs.add_flags(storage)
    storage.set_defaults(func=cmd_storage)

    doorman = sub.add_parser("doorman", help="run one Doorman (global rate limiting) server")
    doorman.add_argument("--server-id", help="unique id of this server (default doorman-HOST:PORT)")
    doorman.add_argument("--host", default=config.DEFAULT_HOST)
    doorman.add_argument("--port", type=int, default=config.DEFAULT_DOORMAN_PORT, help="gRPC port")
    doorman.add_argument("--advertise", help="address clients are redirected to (default HOST:PORT)")
    doorman.add_argument("--metrics-port", type=int, help="serve /metrics on this port")
    doorman.add_argument("--config", help="resource configuration file, YAML or JSON (root servers)")
    doorman.add_argument(
        "--config-key",
        help="etcd key holding the resource configuration (root servers); with --config, "
        "the file serves until the key exists",
    )
    doorman.add_argument("--parent", help="comma-separated addresses of the parent node (non-root servers)")
    doorman.add_argument(
        "--etcd",
        default=f"{config.DEFAULT_HOST}:{config.DEFAULT_ETCD_PORT}",
        help="etcd for master election, or 'none' for a lone server",
    )
    doorman.add_argument("--election-name", default="root", help="tree node this server is a candidate for")
    doorman.add_argument(
        "--election-ttl", type=int, default=5, help="seconds a dead master blocks its standby"
    )
    logs.add_flags(doorman)
    doorman.set_defaults(func=cmd_doorman)

    autoadmin = sub.add_parser(
        "autoadmin", help="run the autoadmin (places, splits and retires tables)", add_help=False
    )
    autoadmin.set_defaults(func=cmd_autoadmin)

    status = sub.add_parser("status", help="processes, tables and partitions of a local cluster, as JSON")
    status.add_argument("--data-dir", default=config.DEFAULT_DATA_DIR)
    status.set_defaults(func=cmd_status)

    credentials_cmd.register(sub)
    node_cmd.register(sub)
    top.register(sub)
    _register_plugins(sub)
    return parser


def _register_plugins(sub: Any) -> None:
    """Sub-commands that live outside services/ (`partita operator`, in operator/), found
    through the `partita.commands` entry points, since services never import operator/."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="partita.commands"):
        entry.load()(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # Only `autoadmin` takes arguments it does not declare: they are its process's own.
    args, passed_on = parser.parse_known_args(argv)
    if passed_on and args.func is not cmd_autoadmin:
        parser.error(f"unrecognized arguments: {' '.join(passed_on)}")
    args.passed_on = passed_on
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
