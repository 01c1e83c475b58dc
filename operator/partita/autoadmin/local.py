"""The local driver of the reconcile core: a plain asyncio loop over the control store.

Each pass reads the specs, states and nodes, decides per table (reading partitions
and ready replicas only for tables that are not settled), and applies the actions in
order, stopping a table at the first lost compare-and-swap (someone else moved it; the
next pass decides again from what is stored). Passes run when the store's watch
reports a change and at least every `RESYNC_SECONDS`, so a lost event delays a change,
never loses it. A restarted driver picks up where any previous one stopped.

Settled tables are skipped, except that every `size_check_interval` seconds their
partition statistics are read (one range read per table; storage nodes recount at most
once a minute by default) and a table with a partition past the split size, or hot for
the sustained window, is decided in full, so the core can split it.

Every `migration_interval` seconds it looks at the storage nodes' load reports and
moves a replica off a node above its share of capacity (`migration_driver.py`, shared
with the Kubernetes operator): one read of the reports and one of the moves under way,
and the partitions of only the tables a hot node or a move concerns.

It also owns the store's housekeeping: compacting history and defragmenting etcd on a
schedule (etcd's own auto-compaction is on as well; defragmenting is never automatic).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from partita.autoadmin import metrics
from partita.autoadmin.doorman_config import DoormanConfigFile
from partita.autoadmin.migration import MigrationPolicy, PartitionKey
from partita.autoadmin.migration_driver import MigrationDriver
from partita.autoadmin.reconcile import (
    Action,
    CannotSplit,
    ChangePartitions,
    MarkSplit,
    Observed,
    PutState,
    Settings,
    decide,
    is_settled,
    needs_others,
)
from partita.autoadmin.splits import KEPT_WHOLE_BECAUSE, due
from partita.common import config
from partita.common.partition_map import data_members
from partita.control.model import TableSpec, TableState
from partita.control.store import AutoadminStore

log = logging.getLogger(__name__)

RESYNC_SECONDS = 1.0
DEFAULT_DEFRAG_INTERVAL_SECONDS = config.DEFAULT_DEFRAG_INTERVAL_SECONDS
DEFAULT_KEEP_REVISIONS = config.DEFAULT_KEEP_REVISIONS
# How often settled tables' sizes and heat are looked at for splits.
DEFAULT_SIZE_CHECK_SECONDS = 10.0
# How often the storage nodes' load reports are looked at for migration (they come
# every DEFAULT_LOAD_REPORT_SECONDS).
DEFAULT_MIGRATION_CHECK_SECONDS = config.DEFAULT_LOAD_REPORT_SECONDS


class Maintenance(Protocol):
    async def compact_and_defragment(self, keep_revisions: int) -> None: ...


class LocalAutoadmin:
    def __init__(
        self,
        store: AutoadminStore,
        settings: Settings | None = None,
        *,
        maintenance: Maintenance | None = None,
        defrag_interval: float = DEFAULT_DEFRAG_INTERVAL_SECONDS,
        keep_revisions: int = DEFAULT_KEEP_REVISIONS,
        clock: Callable[[], float] = time.monotonic,
        doorman_config: DoormanConfigFile | None = None,
        size_check_interval: float = DEFAULT_SIZE_CHECK_SECONDS,
        migration: MigrationPolicy | None = None,
        migration_interval: float = DEFAULT_MIGRATION_CHECK_SECONDS,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.migration_interval = migration_interval
        self._next_migration_check = clock()
        # Load reports carry wall-clock times (their nodes' clocks).
        self.wall_clock = wall_clock
        self.migrator = MigrationDriver(
            store,
            migration or MigrationPolicy(),
            self._members_of,
            lambda: self.wall_clock(),
            store.list_placements,
        )
        # Where the tables' Doorman resources are published; None: nowhere.
        self.doorman_config = doorman_config
        self.settings = settings or Settings()
        self.maintenance = maintenance
        self.defrag_interval = defrag_interval
        self.keep_revisions = keep_revisions
        self.clock = clock
        self._next_housekeeping = clock() + defrag_interval
        self.size_check_interval = size_check_interval
        self._next_size_check = clock()
        # Partitions already reported as kept whole (logged and counted once each).
        self._kept_whole: set[tuple[int, str, str]] = set()
        # Tables with a replicated partition marked for a split: decided every pass
        # until the children replace it (settled or not), and on a restarted driver's
        # first pass every table, as it cannot know which.
        self._splitting: set[int] = set()
        self._looked_for_splits = False

    async def reconcile_once(self) -> list[Action]:
        """One pass over every table; the actions that took effect."""
        with metrics.PASS_DURATION.time():
            return await self._reconcile_tables()

    async def _reconcile_tables(self) -> list[Action]:
        specs = await self.store.list_table_specs()
        if self.doorman_config is not None and self.doorman_config.publish(specs):
            log.info("Doorman resources of %d tables written to %s", len(specs), self.doorman_config.path)
        states = {s.name: s for s in await self.store.list_table_states()}
        nodes = await self.store.list_nodes()
        applied: list[Action] = []
        unsettled = [spec for spec in specs if not is_settled(spec, states.get(spec.name))]
        metrics.UNSETTLED.set(len(unsettled))
        waiting = {spec.name for spec in unsettled}
        settled = [s for s in specs if s.name not in waiting]
        splitting = [s for s in settled if s.table_id in self._splitting or not self._looked_for_splits]
        self._looked_for_splits = True
        checked = unsettled + splitting + await self._due_splits([s for s in settled if s not in splitting])
        # Read once a pass, and only if a new table's shard leaves out some node.
        placements: dict[int, tuple[frozenset[str], ...]] | None = None
        for spec in checked:
            state = states.get(spec.name)
            partitions = tuple(await self.store.list_partitions(spec.table_id))
            others: tuple[frozenset[str], ...] = ()
            if needs_others(spec, partitions, nodes, self.settings):
                if placements is None:
                    placements = await self.store.list_placements()
                others = tuple(
                    s for table, sets in placements.items() if table != spec.table_id for s in sets
                )
            observed = Observed(
                spec,
                state,
                partitions,
                frozenset(await self.store.list_ready(spec.table_id)),
                await self.store.list_partition_stats(spec.table_id),
                others,
            )
            if any(p.split_at for p in observed.partitions):
                self._splitting.add(spec.table_id)
            else:
                self._splitting.discard(spec.table_id)
            for action in decide(observed, nodes, self.settings):
                if not await self._apply_counted(action, state):
                    break
                applied.append(action)
                if placements is not None and isinstance(action, ChangePartitions) and not partitions:
                    # The next new table of this pass sees this one's shard.
                    placements[spec.table_id] = tuple(data_members(p) for p in action.put)
        return applied

    async def _due_splits(self, settled: list[TableSpec]) -> list[TableSpec]:
        """Settled tables with a partition past the split size or hot for long enough,
        when a check is due."""
        if not settled or self.clock() < self._next_size_check:
            return []
        self._next_size_check = self.clock() + self.size_check_interval
        size, hot = self.settings.split_size_bytes, self.settings.split_hot_seconds
        # One read of every table's statistics: a read per table was a thousand etcd
        # calls every check at a thousand tables.
        stats = await self.store.list_all_partition_stats()
        return [s for s in settled if due(stats.get(s.table_id, {}), size, hot)]

    async def _apply_counted(self, action: Action, previous: TableState | None) -> bool:
        if isinstance(action, CannotSplit):
            self._report_kept_whole(action)
            return True
        try:
            ok = await self._apply(action)
        except Exception:
            metrics.record_failed(action, previous, "error")
            raise
        if ok:
            metrics.record_applied(action, previous)
            if isinstance(action, ChangePartitions) and action.exposed:
                log.warning(
                    "table %d placed on nodes holding more than %d replicas of %d other partitions: "
                    "the fleet is too small or crowded to keep them apart",
                    action.table_id,
                    self.settings.shards.max_shared,
                    action.exposed,
                )
        else:
            metrics.record_failed(action, previous, "conflict")
        return ok

    def _report_kept_whole(self, action: CannotSplit) -> None:
        key = (action.table_id, action.partition_id, action.obstacle)
        if key in self._kept_whole:
            return
        self._kept_whole.add(key)
        metrics.record_applied(action, None)
        log.warning(
            "table %d: partition %s is due a split but kept whole: %s",
            action.table_id,
            action.partition_id,
            KEPT_WHOLE_BECAUSE[action.obstacle],
        )

    async def _apply(self, action: Action) -> bool:
        if isinstance(action, ChangePartitions):
            await self.store.change_partitions(action.table_id, action.put, action.remove, action.stats)
            log.info(
                "table %d: partitions %s placed (%s)%s",
                action.table_id,
                ", ".join(
                    f"{p.partition_id} [{p.start:#x}, {p.end:#x}) on {'/'.join(p.replicas)}"
                    for p in action.put
                ),
                action.reason,
                f", {', '.join(action.remove)} replaced" if action.remove else "",
            )
            return True
        if isinstance(action, PutState):
            ok = await self.store.put_table_state(action.state)
            if ok:
                s = action.state
                log.info("table %s: %s at generation %d", s.name, s.phase, s.observed_generation)
            return ok
        if isinstance(action, CannotSplit):
            return True  # nothing to store (reported by _apply_counted)
        if isinstance(action, MarkSplit):
            await self.store.change_partitions(action.table_id, action.partitions, [])
            self._splitting.add(action.table_id)
            log.info(
                "table %d: split asked of replicated partitions %s (%s)",
                action.table_id,
                ", ".join(f"{p.partition_id} at {p.split_at:#x}" for p in action.partitions),
                action.reason,
            )
            return True
        ok = await self.store.remove_table(action.spec)
        if ok:
            log.info("table %s: deleted", action.spec.name)
        return ok

    async def migrate_if_due(self) -> bool:
        """Look for hot storage nodes and the moves under way when a check is due;
        whether one was made."""
        if self.clock() < self._next_migration_check:
            return False
        self._next_migration_check = self.clock() + self.migration_interval
        await self.migrate_once()
        return True

    async def migrate_once(self) -> None:
        await self.migrator.migrate_once()

    async def _members_of(self, tables: frozenset[int]) -> dict[PartitionKey, frozenset[str]]:
        members: dict[PartitionKey, frozenset[str]] = {}
        for table_id in sorted(tables):
            for p in await self.store.list_partitions(table_id):
                members[(table_id, p.partition_id)] = data_members(p) | frozenset(p.log_replicas)
        return members

    async def housekeeping_if_due(self) -> bool:
        if self.maintenance is None or self.clock() < self._next_housekeeping:
            return False
        self._next_housekeeping = self.clock() + self.defrag_interval
        try:
            await self.maintenance.compact_and_defragment(self.keep_revisions)
        except Exception:
            metrics.FAILURES.labels("compact_store", "error").inc()
            raise
        metrics.ACTIONS.labels("compact_store", "schedule").inc()
        log.info("control store compacted and defragmented")
        return True

    async def run(self) -> None:
        while True:
            try:
                await self.reconcile_once()
                await self.migrate_if_due()
                await self.housekeeping_if_due()
                metrics.PASSES.labels("ok").inc()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is down: try again on the next pass
                metrics.PASSES.labels("failed").inc()
                log.warning("control store unavailable: %s", exc)
                await asyncio.sleep(1)
            await self.store.wait_for_change(RESYNC_SECONDS)
