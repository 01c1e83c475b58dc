"""`partita operator`: the sub-command that runs the Kubernetes operator.

The console script lives in services/ (partita.cli), which must not import operator/;
it finds this sub-command through the `partita.commands` entry point instead.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from pathlib import Path

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.autoadmin.migration import MigrationPolicy
from partita.autoadmin.placement import ShardPolicy
from partita.common import arg_types

NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _default_namespace() -> str:
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    return NAMESPACE_FILE.read_text().strip() if NAMESPACE_FILE.exists() else "default"


def _zones(text: str) -> tuple[str, ...]:
    zones = tuple(z.strip() for z in text.split(",") if z.strip())
    if not zones:
        raise argparse.ArgumentTypeError("at least one zone")
    return zones


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("operator", help="run the Kubernetes operator (Table and Partition resources)")
    p.add_argument("--namespace", default=None, help="namespace to watch and run storage in (the pod's own)")
    p.add_argument(
        "--release", required=True, help="prefix of every object the operator makes (Helm release)"
    )
    p.add_argument("--image", required=True, help="the Partita image the storage pods run")
    p.add_argument("--image-pull-policy", default="IfNotPresent")
    p.add_argument(
        "--zones", type=_zones, default=",".join(Fleet.zones), help="comma-separated zones (%(default)s)"
    )
    p.add_argument("--replicas-per-zone", type=int, default=Fleet.replicas_per_zone)
    p.add_argument("--storage-size", default=Fleet.storage_size)
    p.add_argument("--storage-class", default=None)
    p.add_argument("--etcd", default=Fleet.etcd, help="control store endpoint host:port")
    p.add_argument("--admin-port", type=int, default=Fleet.admin_port)
    p.add_argument("--data-port", type=int, default=Fleet.data_port)
    p.add_argument(
        "--storage-metrics-port", type=int, default=Fleet.metrics_port, help="storage pods' /metrics port"
    )
    p.add_argument(
        "--replication-port",
        type=arg_types.port,
        default=Fleet.replication_port,
        help="storage pods' replication port (%(default)s)",
    )
    p.add_argument(
        "--no-storage-replication",
        action="store_true",
        help="storage pods commit each replica alone, with no replication group (no failover)",
    )
    p.add_argument("--no-pin-zones", action="store_true", help="for clusters without zone labels (kind)")
    p.add_argument("--no-separate-hosts", action="store_true", help="allow storage pods to share a machine")
    p.add_argument(
        "--storage-admission",
        action="store_true",
        help="storage pods enforce partition and node throughput (partita storage --admission)",
    )
    arg_types.add_capacity_flags(p, "storage", "each storage pod")
    p.add_argument("--on-demand-partitions", type=int, default=OperatorConfig.on_demand_partitions)
    p.add_argument("--resync-seconds", type=float, default=OperatorConfig.resync_seconds)
    p.add_argument(
        "--progress-seconds",
        type=float,
        default=OperatorConfig.progress_seconds,
        help="re-reconcile a CREATING or UPDATING Table and a Pending Partition this often "
        "(%(default)s), beside the resync of every object",
    )
    p.add_argument(
        "--split-size-bytes",
        type=arg_types.at_least_one,
        default=OperatorConfig.split_size_bytes,
        help="split a partition whose items pass this many bytes (%(default)s: DynamoDB's 10 GB)",
    )
    p.add_argument(
        "--split-hot-seconds",
        type=float,
        default=OperatorConfig.split_hot_seconds,
        help="split a partition that consumed at or near its allocation this long (%(default)s)",
    )
    arg_types.add_shard_flags(p)
    arg_types.add_migration_flags(p)
    p.add_argument(
        "--doorman-config-key",
        default=None,
        metavar="KEY",
        help="publish every Table's throughput as Doorman resources at this etcd key "
        "(the Doorman servers' --config-key; off by default)",
    )
    p.add_argument(
        "--doorman-templates",
        type=Path,
        default=None,
        metavar="FILE",
        help="a Doorman configuration whose resources follow the tables' in that key (the chart's)",
    )
    p.add_argument("--priority", type=int, default=None, help="kopf peering priority (random if unset)")
    p.add_argument("--standalone", action="store_true", help="no peering: only for a single replica")
    p.add_argument(
        "--liveness",
        default=None,
        metavar="URL",
        help="serve kopf's liveness probe, e.g. http://0.0.0.0:8080/healthz (off by default)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve the autoadmin's /metrics on this port (off by default)",
    )
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> OperatorConfig:
    if args.migrate_room_below >= args.migrate_above:
        raise SystemExit("--migrate-room-below must be below --migrate-above")
    fleet = Fleet(
        release=args.release,
        namespace=args.namespace or _default_namespace(),
        image=args.image,
        image_pull_policy=args.image_pull_policy,
        zones=args.zones,
        replicas_per_zone=args.replicas_per_zone,
        storage_size=args.storage_size,
        storage_class=args.storage_class,
        etcd=args.etcd,
        admin_port=args.admin_port,
        data_port=args.data_port,
        metrics_port=args.storage_metrics_port,
        replication_port=args.replication_port,
        replication=not args.no_storage_replication,
        pin_zones=not args.no_pin_zones,
        separate_hosts=not args.no_separate_hosts,
        admission=args.storage_admission,
        node_read_units=args.storage_read_units,
        node_write_units=args.storage_write_units,
    )
    return OperatorConfig(
        fleet=fleet,
        on_demand_partitions=args.on_demand_partitions,
        resync_seconds=args.resync_seconds,
        progress_seconds=args.progress_seconds,
        split_size_bytes=args.split_size_bytes,
        split_hot_seconds=args.split_hot_seconds,
        shards=ShardPolicy(args.shard_max_shared, args.shuffle_shard),
        migration=MigrationPolicy(
            args.migration, args.migrate_above, args.migrate_room_below, max_shared=args.shard_max_shared
        ),
        doorman_config_key=args.doorman_config_key,
        doorman_templates=args.doorman_templates,
    )


def run(args: argparse.Namespace) -> int:
    from partita.autoadmin.kube.main import run_operator

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    asyncio.run(
        run_operator(
            config_from_args(args),
            priority=args.priority,
            standalone=args.standalone,
            liveness_endpoint=args.liveness,
            metrics_port=args.metrics_port,
        )
    )
    return 0
