"""`partita autoadmin`: the local driver as a process (`python -m partita.autoadmin.main`).

The `partita` console script lives in services/, which never imports the control
plane, so its `autoadmin` sub-command starts this module as a fresh interpreter.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path

from partita.autoadmin import metrics as autoadmin_metrics
from partita.autoadmin.doorman_config import DoormanConfigFile
from partita.autoadmin.local import DEFAULT_DEFRAG_INTERVAL_SECONDS, LocalAutoadmin
from partita.autoadmin.migration import MigrationPolicy
from partita.autoadmin.placement import ShardPolicy, replicated_placement
from partita.autoadmin.reconcile import Settings
from partita.common import arg_types, config, logs, metrics
from partita.control.store import EtcdControlStore

log = logging.getLogger("partita.autoadmin")


ROLE = "autoadmin"
# Seconds a killed leader keeps the role before another autoadmin may take it over.
LEADER_TTL_SECONDS = 5


async def serve(
    *,
    etcd_host: str,
    etcd_port: int,
    settings: Settings,
    defrag_interval: float,
    keep_revisions: int,
    doorman_config: Path | None = None,
    metrics_host: str = config.DEFAULT_HOST,
    metrics_port: int | None = None,
    migration: MigrationPolicy | None = None,
) -> int:
    """Run until SIGINT/SIGTERM (0), or until the leadership is lost (1: the supervisor
    starts a fresh process, which waits its turn)."""
    # Served from the start, while waiting to lead too: a standby is scraped as well
    # (partita_autoadmin_leader 0), and the supervisor's readiness check is this port.
    exporter = await metrics.serve_metrics(metrics_host, metrics_port) if metrics_port is not None else None
    autoadmin_metrics.LEADER.set(0)
    store = EtcdControlStore(etcd_host, etcd_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    holder = f"{socket.gethostname()}:{os.getpid()}"
    # Only one autoadmin acts at a time (as kopf's peering does in Kubernetes); the
    # others wait, and one takes over within the TTL when the leader dies.
    log.info("autoadmin %s waiting to lead (control store at %s:%d)", holder, etcd_host, etcd_port)
    campaign = asyncio.create_task(store.campaign(ROLE, holder, LEADER_TTL_SECONDS))
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({campaign, stopping}, return_when=asyncio.FIRST_COMPLETED)
    code = 0
    if campaign.done():
        log.info("autoadmin %s leads", holder)
        autoadmin_metrics.LEADER.set(1)
        autoadmin = LocalAutoadmin(
            store,
            settings,
            maintenance=store,
            defrag_interval=defrag_interval,
            keep_revisions=keep_revisions,
            doorman_config=DoormanConfigFile(doorman_config) if doorman_config else None,
            migration=migration,
        )
        runner = asyncio.create_task(autoadmin.run())
        lost = asyncio.create_task(store.leadership_lost())
        await asyncio.wait({lost, stopping}, return_when=asyncio.FIRST_COMPLETED)
        runner.cancel()
        if lost.done():
            log.error("autoadmin %s lost the leadership; exiting", holder)
            code = 1
        else:
            await store.resign(ROLE, holder)
    campaign.cancel()
    stopping.cancel()
    await store.close()
    autoadmin_metrics.LEADER.set(0)
    if exporter is not None:
        exporter.close()
        await exporter.wait_closed()
    log.info("autoadmin stopped")
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="partita autoadmin", description="place, split and retire tables")
    parser.add_argument("-v", "--verbose", action="store_true", help="same as --log-level debug")
    logs.add_flags(parser)
    parser.add_argument(
        "--metrics-host", default=config.DEFAULT_HOST, help="address /metrics listens on (%(default)s)"
    )
    parser.add_argument(
        "--metrics-port", type=arg_types.port, help="serve /metrics on this port (default: off)"
    )
    parser.add_argument("--etcd", default=f"{config.DEFAULT_HOST}:{config.DEFAULT_ETCD_PORT}")
    parser.add_argument(
        "--on-demand-partitions",
        type=arg_types.at_least_one,
        default=config.DEFAULT_ON_DEMAND_PARTITIONS,
        help="partitions of a new PAY_PER_REQUEST table (%(default)s)",
    )
    parser.add_argument(
        "--replication-factor",
        type=arg_types.at_least_one,
        default=config.DEFAULT_REPLICATION_FACTOR,
        help="replicas of each new partition, in distinct zones where possible (%(default)s)",
    )
    arg_types.add_split_flags(parser)
    arg_types.add_shard_flags(parser)
    arg_types.add_migration_flags(parser)
    parser.add_argument(
        "--defrag-interval",
        type=arg_types.positive_seconds,
        default=DEFAULT_DEFRAG_INTERVAL_SECONDS,
        help="seconds between compactions + defragmentations of etcd (%(default)s)",
    )
    parser.add_argument(
        "--keep-revisions",
        type=arg_types.at_least_one,
        default=config.DEFAULT_KEEP_REVISIONS,
        help="revisions of etcd history kept when compacting (%(default)s)",
    )
    parser.add_argument(
        "--doorman-config",
        type=Path,
        default=None,
        help="write the tables' Doorman resources (table/<name>/rcu, wcu) to this file, "
        "which the Doorman servers read (--config); default: not written",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.migrate_room_below >= args.migrate_above:
        parser.error("--migrate-room-below must be below --migrate-above")
    logs.configure(ROLE, "debug" if args.verbose else args.log_level, args.log_format)
    host, port = config.parse_endpoint(args.etcd)
    coro = serve(
        etcd_host=host,
        etcd_port=port,
        settings=Settings(
            on_demand_partitions=args.on_demand_partitions,
            placement=replicated_placement(args.replication_factor),
            shards=ShardPolicy(args.shard_max_shared, args.shuffle_shard, args.replication_factor),
            split_size_bytes=args.split_size_bytes,
            split_hot_seconds=args.split_hot_seconds,
            # The local cluster's storage nodes run the groups (docs/replication.md).
            split_replicated=args.split_replicated_groups,
        ),
        defrag_interval=args.defrag_interval,
        keep_revisions=args.keep_revisions,
        doorman_config=args.doorman_config,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        migration=MigrationPolicy(
            args.migration, args.migrate_above, args.migrate_room_below, max_shared=args.shard_max_shared
        ),
    )
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.run(coro)


if __name__ == "__main__":
    sys.exit(main())
