"""`partita storage`: one storage node as a process."""

from __future__ import annotations

from pathlib import Path

from partita.common import config
from partita.common.throughput import Kind as UnitKind
from partita.control.store import EtcdControlStore
from partita.storage import node


async def serve(
    *,
    node_id: str,
    zone: str,
    host: str,
    port: int,
    data_port: int,
    data_dir: Path,
    etcd_host: str,
    etcd_port: int,
    sync: bool,
    stats_interval: float,
    ttl_sweep_interval: float,
    metrics_port: int | None = None,
    replication: bool = False,
    admission: bool = False,
    replica_down_after: float = config.DEFAULT_REPLICA_DOWN_AFTER_SECONDS,
    hosting: str = "control",
    replication_listen: tuple[str, int] | None = None,
    replication_advertise: str | None = None,
    leader_rebalance: bool = True,
    attach: node.Attach | None = None,
    node_units: dict[UnitKind, float] | None = None,
    load_report_interval: float = config.DEFAULT_LOAD_REPORT_SECONDS,
    shard_max_shared: int = config.DEFAULT_SHARD_MAX_SHARED,
) -> None:
    store = EtcdControlStore(etcd_host, etcd_port)
    await node.serve(
        node_id=node_id,
        zone=zone,
        host=host,
        port=port,
        data_port=data_port,
        data_dir=data_dir,
        store=store,
        sync=sync,
        stats_interval=stats_interval,
        ttl_sweep_interval=ttl_sweep_interval,
        metrics_port=metrics_port,
        replication=replication,
        admission=admission,
        replica_down_after=replica_down_after,
        hosting=hosting,
        replication_listen=replication_listen,
        replication_advertise=replication_advertise,
        leader_rebalance=leader_rebalance,
        attach=attach,
        node_units=node_units,
        load_report_interval=load_report_interval,
        shard_max_shared=shard_max_shared,
    )
