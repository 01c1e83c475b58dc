"""TableCache.refresh: a caller sees the store as it was when it called, or later."""

from __future__ import annotations

import asyncio

from partita.control.model import PartitionStats, TableRecord
from partita.control.store import MemoryControlStore
from partita.router.table_cache import TableCache
from tests.unit.records import put_record, table_record


def _record(read_capacity: int) -> TableRecord:
    return table_record(billing_mode="PROVISIONED", read_capacity=read_capacity, write_capacity=5)


class PausingStore(MemoryControlStore):
    """Holds list_tables after taking its snapshot, until released."""

    def __init__(self) -> None:
        super().__init__()
        self.pause = False
        self.snapshot_taken = asyncio.Event()
        self.release = asyncio.Event()
        self.reads = 0

    async def list_tables(self) -> list[TableRecord]:
        records = await super().list_tables()
        self.reads += 1
        if self.pause:
            self.pause = False
            self.snapshot_taken.set()
            await self.release.wait()
        return records


async def test_refresh_after_a_write_sees_it_even_while_an_older_read_is_in_flight() -> None:
    store = PausingStore()
    await put_record(store, _record(5))
    cache = TableCache(store)
    await cache.refresh()

    store.pause = True
    background = asyncio.create_task(cache.refresh())  # the watch loop's read, snapshot before the write
    await store.snapshot_taken.wait()
    await put_record(store, _record(7))
    mine = asyncio.create_task(cache.refresh())
    await asyncio.sleep(0)
    store.release.set()
    await asyncio.gather(background, mine)

    assert cache.require("t").record.read_capacity == 7


async def test_callers_arriving_during_one_read_share_the_next_read() -> None:
    store = PausingStore()
    await put_record(store, _record(5))
    cache = TableCache(store)
    await cache.refresh()
    reads_before = store.reads

    store.pause = True
    first = asyncio.create_task(cache.refresh())
    await store.snapshot_taken.wait()
    followers = [asyncio.create_task(cache.refresh()) for _ in range(5)]
    await asyncio.sleep(0)
    store.release.set()
    await asyncio.gather(first, *followers)

    assert store.reads - reads_before == 2  # the read in flight, then one read for all five followers


async def test_table_statistics_fall_back_to_the_last_figures_when_the_store_is_down() -> None:
    store = PausingStore()
    cache = TableCache(store)
    await store.put_partition_stats(7, "p0", PartitionStats(3, 300, 1.0))
    assert await cache.stats_of(7) == {"p0": PartitionStats(3, 300, 1.0)}

    async def unreachable(table_id: int) -> dict[str, PartitionStats]:
        raise ConnectionError("etcd is down")

    store.list_partition_stats = unreachable  # type: ignore[method-assign]
    assert await cache.stats_of(7) == {"p0": PartitionStats(3, 300, 1.0)}
    assert await cache.stats_of(8) == {}


async def test_the_cache_never_writes_nor_moves_a_table_through_its_lifecycle() -> None:
    # Every replica of a CREATING table serves and a DELETING table's replicas are all
    # gone: transitions the autoadmin will make. The routers' cache, refreshed as the
    # data path does on every stale route, leaves both alone and writes nothing.
    store = MemoryControlStore()
    await put_record(store, table_record(name="new", table_id=1, status="CREATING"))
    await store.mark_ready(1, "p0", "a")
    await put_record(store, table_record(name="old", table_id=2, status="DELETING"))
    writes = store.writes
    cache = TableCache(store)
    for _ in range(5):
        await cache.refresh()
    assert (cache.require("new").record.status, cache.require("old").record.status) == (
        "CREATING",
        "DELETING",
    )
    assert store.writes == writes
