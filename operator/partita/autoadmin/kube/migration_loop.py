"""Load-based migration on Kubernetes: the local autoadmin's checks
(`migration_driver.py`), with the members of each partition read from its Partition
resource. The storage pods report their loads to the control store (etcd) and carry
moves out as in the local cluster (`docs/control-plane.md`, "Load-based migration");
the group's leader publishes the membership it then decides, which the membership
watch adopts into the Partition's spec, where the next check sees the move done.

Alive only while it has work, like the membership watch: handlers call `started()`.
A passive operator doing the same checks decides the same moves from the same state:
a move is keyed by its partition, so a second writer rewrites the same one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from partita.autoadmin.kube import naming, resources
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.background import PassesInBackground
from partita.autoadmin.migration import MigrationPolicy, PartitionKey
from partita.autoadmin.migration_driver import MigrationDriver, MigrationStore
from partita.common import config
from partita.control.store import Placements

log = logging.getLogger(__name__)


def partition_members(
    tables: list[Mapping[str, Any]],
    partitions: list[Mapping[str, Any]],
    namespace: str,
    wanted: frozenset[int] | None,
) -> dict[PartitionKey, frozenset[str]]:
    """Every member (any role) of each Partition of the `wanted` tables (None: of every
    table), by (table id, Partition name): the name is the partition id the storage pods
    and routers use."""
    ids = {}
    for obj in tables:
        name = obj["metadata"]["name"]
        try:
            ids[name] = resources.table_spec(namespace, name, obj["spec"], obj["metadata"]).table_id
        except Exception as exc:  # one malformed Table must not hide the others
            log.warning("Table %s left out of migration: %s", name, exc)
    out: dict[PartitionKey, frozenset[str]] = {}
    for obj in partitions:
        table = resources.table_of(obj)
        table_id = ids.get(table) if table is not None else None
        if table_id is None or obj["metadata"].get("deletionTimestamp"):
            continue
        if wanted is not None and table_id not in wanted:
            continue
        out[(table_id, obj["metadata"]["name"])] = resources.member_nodes(obj)
    return out


async def listed_members(
    api: KubeApi, namespace: str, wanted: frozenset[int] | None
) -> dict[PartitionKey, frozenset[str]]:
    """`partition_members` of the Tables and Partitions listed now."""
    tables = await api.list(naming.API_VERSION, naming.TABLES, namespace, {})
    partitions = await api.list(naming.API_VERSION, naming.PARTITIONS, namespace, {})
    return partition_members(tables, partitions, namespace, wanted)


async def fleet_placements(api: KubeApi, namespace: str) -> Placements:
    """Every table's partitions' replica sets, by table id."""
    placed: dict[int, list[frozenset[str]]] = {}
    for (table_id, _), members in (await listed_members(api, namespace, None)).items():
        placed.setdefault(table_id, []).append(members)
    return {table_id: tuple(sets) for table_id, sets in placed.items()}


class KubeMigration(PassesInBackground):
    doing = "migration check"

    def __init__(
        self,
        store: MigrationStore,
        api: KubeApi,
        namespace: str,
        policy: MigrationPolicy,
        interval: float = config.DEFAULT_LOAD_REPORT_SECONDS,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.interval = interval
        self.driver = MigrationDriver(store, policy, self._members_of, placements_of=self._placements)

    async def pass_once(self) -> object:
        return await self.driver.migrate_once()

    async def wait(self) -> None:
        await asyncio.sleep(self.interval)

    async def _members_of(self, wanted: frozenset[int] | None) -> dict[PartitionKey, frozenset[str]]:
        return await listed_members(self.api, self.namespace, wanted)

    async def _placements(self) -> Placements:
        return await fleet_placements(self.api, self.namespace)
