"""The router's view of tables and nodes, refreshed from the control store.

The cache re-reads the store when a watch reports a change, and at least every
`RESYNC_SECONDS` regardless (constant work, as the paper's routers refresh MemDS
entries whether or not they changed: a lost event delays a change, never loses it). A
storage node saying "wrong partition" also forces an immediate refresh.

Read-only: the cache never writes to the store. Table lifecycle transitions belong to
the autoadmin, so no request, retry or refresh on the data path can change a table.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from partita.common import errors
from partita.common.partition_map import HASH_SPACE, Partition, PartitionMap
from partita.control.model import NodeRecord, PartitionStats, TableRecord
from partita.control.store import RouteSource
from partita.router import metrics

log = logging.getLogger(__name__)

RESYNC_SECONDS = 1.0
# The routes of a table the autoadmin has not placed yet: one partition on no node.
# Such a table is CREATING, which `require_active` refuses before any route is used.
UNPLACED = PartitionMap([Partition("unplaced", 0, HASH_SPACE)])


@dataclass(frozen=True, slots=True)
class CachedTable:
    record: TableRecord
    partition_map: PartitionMap


class TableCache:
    def __init__(self, store: RouteSource) -> None:
        self.store = store
        self.tables: dict[str, CachedTable] = {}
        self.hidden: dict[str, CachedTable] = {}  # backups' tables (`TableRecord.hidden`)
        self.nodes: dict[str, NodeRecord] = {}
        self._stats: dict[int, dict[str, PartitionStats]] = {}
        self._reading: asyncio.Task[None] | None = None
        self._requested = 0  # refresh calls so far
        self._covered = 0  # refresh calls whose read has completed

    async def refresh(self, reason: str = "request") -> None:
        """Re-read the store with a read that starts after this call.

        A caller that has just written (UpdateTable, CreateTable) must see its own
        write, so joining a read already in flight is not enough: it may have read
        before the write. Callers that arrive during one read share the next one.
        """
        self._requested += 1
        metrics.ROUTE_REFRESHES.labels(reason).inc()
        wanted = self._requested
        while self._covered < wanted:
            if self._reading is None or self._reading.done():
                self._reading = asyncio.create_task(self._read_covering())
            await asyncio.shield(self._reading)

    async def _read_covering(self) -> None:
        # Every call numbered up to here was made before this read touches the store.
        covers = self._requested
        await self._read()
        self._covered = max(self._covered, covers)

    async def _read(self) -> None:
        records = await self.store.list_tables()
        nodes = await self.store.list_nodes()
        fresh: dict[str, CachedTable] = {}
        hidden: dict[str, CachedTable] = {}
        for r in records:
            old = self.tables.get(r.name) or self.hidden.get(r.name)
            cached = old if old is not None and old.record == r else None
            if cached is None:
                cached = CachedTable(r, r.partition_map if r.partitions else UNPLACED)
            # A backup's table is reached only by the backup's own work, never by a name
            # a client sends: it is kept apart from the tables clients see.
            (hidden if r.hidden else fresh)[r.name] = cached
        self.tables = fresh
        self.hidden = hidden
        self.nodes = {n.node_id: n for n in nodes}
        live = {r.table_id for r in records}
        self._stats = {t: s for t, s in self._stats.items() if t in live}

    async def run(self) -> None:
        while True:
            try:
                await self.refresh("resync")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("control store unavailable: %s", exc)
                await asyncio.sleep(1)
            await self.store.wait_for_change(RESYNC_SECONDS)

    async def stats_of(self, table_id: int) -> dict[str, PartitionStats]:
        """A table's partition counts, read when asked (DescribeTable is rare; the
        routers' resync should not read them every second). The figures are advisory,
        so with the store unreachable the last ones read stand in."""
        try:
            self._stats[table_id] = await self.store.list_partition_stats(table_id)
        except Exception as exc:
            log.warning("table statistics unavailable: %s", exc)
        return self._stats.get(table_id, {})

    def get(self, name: str) -> CachedTable | None:
        return self.tables.get(name)

    def require(self, name: str) -> CachedTable:
        table = self.tables.get(name)
        if table is None:
            raise errors.table_not_found(name)
        return table

    def require_active(self, name: str) -> CachedTable:
        """The table for a data operation: DynamoDB refuses them until it is ACTIVE."""
        table = self.tables.get(name)
        if table is None or table.record.status in ("CREATING", "DELETING") or not table.record.partitions:
            raise errors.resource_not_found()
        return table

    def require_placed(self, name: str) -> CachedTable:
        """A table for the service's own copies (backups, restores): a backup's hidden
        table or a restore still CREATING to clients, once its partitions serve."""
        table = self.tables.get(name) or self.hidden.get(name)
        if table is None or not table.record.placed or not table.record.partitions:
            raise errors.resource_not_found()
        return table

    def address_of(self, node_id: str) -> str | None:
        node = self.nodes.get(node_id)
        return node.data_address if node else None
