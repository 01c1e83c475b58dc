"""Running the operator: credentials, settings, registry, kopf's loop.

Several replicas may run (the chart's Deployment); kopf peering lets only the one with
the highest priority act while the others stay passive and take over when its peering
record expires. Each process draws a random priority unless given one, because kopf
pauses every operator when two share a priority.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any, cast

import kopf

from partita.autoadmin.doorman_config import DoormanConfigKey, load_templates
from partita.autoadmin.kube import naming, resources
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.doorman_publisher import TablesPublisher
from partita.autoadmin.kube.fleet_shrink import FleetShrink
from partita.autoadmin.kube.grpc_director import (
    GrpcReplicaDirector,
    fleet_replication_resolver,
    fleet_resolver,
)
from partita.autoadmin.kube.handlers import OperatorConfig, build_registry, operator_settings
from partita.autoadmin.kube.membership_watch import MembershipWatch
from partita.autoadmin.kube.migration_loop import KubeMigration, fleet_placements
from partita.autoadmin.kube.placements_publisher import PlacementsPublisher
from partita.autoadmin.kube.replicas import ReplicaDirector
from partita.common import config as common_config
from partita.common import metrics
from partita.control.model import TableSpec
from partita.control.store import EtcdControlStore

log = logging.getLogger(__name__)


def discover_credentials(settings: kopf.OperatorSettings) -> kopf.ConnectionInfo:
    """In a pod, the service account; elsewhere, the kubeconfig."""
    info = kopf.login_with_service_account(settings=settings) or kopf.login_with_kubeconfig(settings=settings)
    if info is None:
        raise kopf.LoginError("no service account token and no kubeconfig found")
    return info


def tables_publisher(config: OperatorConfig, api: KubeApi) -> TablesPublisher | None:
    """What publishes the Tables' Doorman resources to `config.doorman_config_key`."""
    if config.doorman_config_key is None:
        return None
    namespace = config.fleet.namespace
    templates = load_templates(config.doorman_templates) if config.doorman_templates else []
    host, port = common_config.parse_endpoint(config.fleet.etcd)

    async def list_tables() -> list[TableSpec]:
        specs = []
        for obj in await api.list(naming.API_VERSION, naming.TABLES, namespace, {}):
            try:
                specs.append(
                    resources.table_spec(namespace, obj["metadata"]["name"], obj["spec"], obj["metadata"])
                )
            except Exception as exc:  # one malformed Table must not hide the others
                log.warning(
                    "Table %s left out of the Doorman resources: %s", obj["metadata"].get("name"), exc
                )
        return specs

    return TablesPublisher(list_tables, DoormanConfigKey(host, port, config.doorman_config_key, templates))


async def run_operator(
    config: OperatorConfig,
    *,
    login: kopf.ConnectionInfo | None = None,
    director: ReplicaDirector | None = None,
    priority: int | None = None,
    identity: str | None = None,
    liveness_endpoint: str | None = None,
    standalone: bool = False,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    metrics_port: int | None = None,
    memberships: EtcdControlStore | None = None,
) -> None:
    """Run until `stop_flag` is set (or forever), watching the fleet's namespace."""
    # The autoadmin's metrics (partita.autoadmin.metrics), as the local driver serves them.
    exporter = await metrics.serve_metrics("0.0.0.0", metrics_port) if metrics_port is not None else None
    chosen = priority if priority is not None else random.randrange(1, 2**31)
    settings = operator_settings(chosen, standalone)
    info = login or discover_credentials(settings)
    api = KubeApi(info)
    # By default the storage pods' admin gRPC, found by their DNS names in the fleet,
    # and the memberships the groups' leaders publish in the control store (repair).
    # (`memberships`: the store the published memberships are followed in, given with a
    # director of the caller's; the caller closes it.)
    control_store = (
        EtcdControlStore(*common_config.parse_endpoint(config.fleet.etcd)) if director is None else None
    )
    followed = control_store or memberships
    watch = MembershipWatch(followed, api, config.fleet.namespace) if followed is not None else None
    own_director = (
        GrpcReplicaDirector(
            fleet_resolver(config.fleet),
            replication_address=fleet_replication_resolver(config.fleet),
            memberships=control_store,
        )
        if director is None
        else None
    )
    in_use: ReplicaDirector = own_director if own_director is not None else cast(ReplicaDirector, director)
    publisher = tables_publisher(config, api)
    # A scale-down drains the leaving pods first, through drain marks in the same store.
    shrink = FleetShrink(api, followed, config.fleet) if followed is not None else None
    # Load-based migration reads the pods' load reports and writes moves in that store too.
    migration = (
        KubeMigration(followed, api, config.fleet.namespace, config.migration)
        if followed is not None
        else None
    )
    # Every table's placement for the pods' shard bound of repair, in that store too.
    placements = (
        PlacementsPublisher(followed, lambda: fleet_placements(api, config.fleet.namespace))
        if followed is not None
        else None
    )
    registry = build_registry(
        config,
        api,
        in_use,
        info,
        doorman=publisher,
        memberships=watch,
        shrink=shrink,
        migration=migration,
        placements=placements,
    )
    kwargs: dict[str, Any] = {"peering_name": naming.PEERING_NAME, "priority": chosen}
    if identity is not None:
        # kopf derives one from host and pid; two operators in one process need their own.
        kwargs["identity"] = identity
    try:
        await kopf.operator(
            registry=registry,
            settings=settings,
            namespaces=[config.fleet.namespace],
            standalone=standalone,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
            memo=kopf.Memo(),
            liveness_endpoint=liveness_endpoint,
            **kwargs,
        )
    finally:
        if publisher is not None:
            await publisher.close()
        if watch is not None:
            await watch.close()
        if shrink is not None:
            await shrink.close()
        if migration is not None:
            await migration.close()
        if placements is not None:
            await placements.close()
        await api.close()
        if own_director is not None:
            await own_director.close()
        if control_store is not None:
            await control_store.close()
        if exporter is not None:
            exporter.close()
            await exporter.wait_closed()
