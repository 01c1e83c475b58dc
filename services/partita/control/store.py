"""The control store interface and its two implementations (etcd; in-memory for tests).

Keys (etcd):
  /partita/tables/<name>                       TableRecord JSON
  /partita/nodes/<node_id>                     NodeRecord JSON, attached to a lease (liveness)
  /partita/ready/<table_id>/<partition>/<node> replica hosted and serving ("1")
  /partita-stats/<table_id>/<partition>        PartitionStats JSON, from the leader
Statistics live outside /partita/ because routers and nodes watch that prefix: a
leader publishing a new count must not make every process re-read every table.
Every update of a table is a compare-and-swap on the record's mod revision, so
several routers (and later the autoadmin) can drive the same transitions safely.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import orjson

from partita.control.model import NodeRecord, PartitionStats, TableRecord

PREFIX = b"/partita/"
TABLES = PREFIX + b"tables/"
NODES = PREFIX + b"nodes/"
READY = PREFIX + b"ready/"
STATS = b"/partita-stats/"

log = logging.getLogger(__name__)


class ControlStore(Protocol):
    async def list_tables(self) -> list[TableRecord]: ...
    async def get_table(self, name: str) -> TableRecord | None: ...
    async def create_table(self, record: TableRecord) -> bool:
        """Store a new table; False if the name is taken."""

    async def replace_table(self, record: TableRecord) -> bool:
        """Store `record` if the stored one still has `record.revision`; False otherwise."""

    async def remove_table(self, record: TableRecord) -> bool: ...
    async def register_node(self, node: NodeRecord, ttl: int) -> None: ...
    async def list_nodes(self) -> list[NodeRecord]: ...
    async def mark_ready(self, table_id: int, partition_id: str, node_id: str) -> None: ...
    async def clear_ready(self, table_id: int, partition_id: str, node_id: str) -> None: ...
    async def list_ready(self, table_id: int) -> set[tuple[str, str]]: ...
    async def put_partition_stats(self, table_id: int, partition_id: str, stats: PartitionStats) -> None: ...
    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]: ...
    async def clear_partition_stats(self, table_id: int) -> None: ...
    async def wait_for_change(self, timeout: float) -> bool:
        """Return when anything in the store may have changed (True) or after `timeout` (False)."""

    async def close(self) -> None: ...


def _stats_prefix(table_id: int) -> tuple[bytes, bytes]:
    """The key range of one table's statistics ('0' is the byte after '/')."""
    return STATS + f"{table_id}/".encode(), STATS + f"{table_id}0".encode()


def _ready_key(table_id: int, partition_id: str, node_id: str) -> bytes:
    return READY + f"{table_id}/{partition_id}/{node_id}".encode()


class EtcdControlStore:
    """ControlStore over a real etcd, through aetcd (asyncio, current grpcio/protobuf)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 2379, timeout: int = 5) -> None:
        import aetcd

        self._aetcd = aetcd
        self._client = aetcd.Client(host=host, port=port, timeout=timeout)
        self._node_lease: object | None = None
        self._node_keepalive: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None

    async def list_tables(self) -> list[TableRecord]:
        result = await self._client.get_prefix(TABLES)
        return [TableRecord.from_json(orjson.loads(kv.value), kv.mod_revision) for kv in result]

    async def get_table(self, name: str) -> TableRecord | None:
        kv = await self._client.get(TABLES + name.encode())
        if kv is None:
            return None
        return TableRecord.from_json(orjson.loads(kv.value), kv.mod_revision)

    async def create_table(self, record: TableRecord) -> bool:
        key = TABLES + record.name.encode()
        tx = self._client.transactions
        ok, _ = await self._client.transaction(
            compare=[tx.create(key) == 0],
            success=[tx.put(key, orjson.dumps(record.to_json()))],
            failure=[],
        )
        return bool(ok)

    async def replace_table(self, record: TableRecord) -> bool:
        key = TABLES + record.name.encode()
        tx = self._client.transactions
        ok, _ = await self._client.transaction(
            # A missing key has mod revision 0: without the version check a record
            # never read from the store (revision 0) would create the table.
            compare=[tx.version(key) > 0, tx.mod(key) == record.revision],
            success=[tx.put(key, orjson.dumps(record.to_json()))],
            failure=[],
        )
        return bool(ok)

    async def remove_table(self, record: TableRecord) -> bool:
        key = TABLES + record.name.encode()
        tx = self._client.transactions
        ok, _ = await self._client.transaction(
            compare=[tx.version(key) > 0, tx.mod(key) == record.revision],
            success=[
                tx.delete(key),
                tx.delete(
                    READY + f"{record.table_id}/".encode(),
                    range_end=READY + f"{record.table_id}0".encode(),  # '0' follows '/'
                ),
                tx.delete(_stats_prefix(record.table_id)[0], range_end=_stats_prefix(record.table_id)[1]),
            ],
            failure=[],
        )
        return bool(ok)

    async def register_node(self, node: NodeRecord, ttl: int) -> None:
        lease = await self._client.lease(ttl)
        await self._client.put(NODES + node.node_id.encode(), orjson.dumps(node.to_json()), lease=lease)
        self._node_lease = lease
        if self._node_keepalive is None:
            self._node_keepalive = asyncio.create_task(self._keep_node_alive(node, ttl))

    async def _keep_node_alive(self, node: NodeRecord, ttl: int) -> None:
        # Refresh at a third of the TTL; if etcd lost the lease (it was down longer than
        # the TTL), register again rather than staying invisible.
        while True:
            await asyncio.sleep(max(ttl / 3, 0.5))
            try:
                lease = self._node_lease
                assert lease is not None
                reply = await self._client.refresh_lease(lease.id)  # type: ignore[attr-defined]
                if reply is None or reply.TTL <= 0:
                    raise RuntimeError("lease expired")
            except asyncio.CancelledError:
                raise
            except Exception:
                try:
                    lease = await self._client.lease(ttl)
                    key = NODES + node.node_id.encode()
                    await self._client.put(key, orjson.dumps(node.to_json()), lease=lease)
                    self._node_lease = lease
                except Exception:
                    continue

    async def list_nodes(self) -> list[NodeRecord]:
        result = await self._client.get_prefix(NODES)
        return sorted(
            (NodeRecord.from_json(orjson.loads(kv.value)) for kv in result), key=lambda n: n.node_id
        )

    async def mark_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        await self._client.put(_ready_key(table_id, partition_id, node_id), b"1")

    async def clear_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        await self._client.delete(_ready_key(table_id, partition_id, node_id))

    async def list_ready(self, table_id: int) -> set[tuple[str, str]]:
        prefix = READY + f"{table_id}/".encode()
        result = await self._client.get_prefix(prefix)
        out = set()
        for kv in result:
            partition_id, node_id = kv.key[len(prefix) :].decode().split("/", 1)
            out.add((partition_id, node_id))
        return out

    async def put_partition_stats(self, table_id: int, partition_id: str, stats: PartitionStats) -> None:
        key = _stats_prefix(table_id)[0] + partition_id.encode()
        await self._client.put(key, orjson.dumps(stats.to_json()))

    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]:
        start, end = _stats_prefix(table_id)
        result = await self._client.get_range(start, end)
        return {
            kv.key[len(start) :].decode(): PartitionStats.from_json(orjson.loads(kv.value)) for kv in result
        }

    async def clear_partition_stats(self, table_id: int) -> None:
        start, end = _stats_prefix(table_id)
        await self._client.delete_range(start, end)

    async def wait_for_change(self, timeout: float) -> bool:
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch())
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        self._changed.clear()
        return True

    async def _watch(self) -> None:
        # A watch that breaks (etcd restarted) is re-established; callers also re-read
        # on a timer, so an event lost in between delays a change, never loses it.
        while True:
            try:
                watch = await self._client.watch_prefix(PREFIX)
                self._changed.set()  # anything may have happened while not watching
                async for _ in watch:
                    self._changed.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("watch on %r broke: %s", PREFIX, exc)
            await asyncio.sleep(0.5)

    async def close(self) -> None:
        for task in (self._node_keepalive, self._watcher):
            if task is not None:
                task.cancel()
        await self._client.close()


class MemoryControlStore:
    """An in-process ControlStore with the same CAS semantics, for unit tests."""

    def __init__(self) -> None:
        self._tables: dict[str, TableRecord] = {}
        self._nodes: dict[str, NodeRecord] = {}
        self._ready: set[tuple[int, str, str]] = set()
        self._stats: dict[tuple[int, str], PartitionStats] = {}
        self._revision = 0

    def _bump(self, record: TableRecord) -> TableRecord:
        import dataclasses

        self._revision += 1
        return dataclasses.replace(record, revision=self._revision)

    async def list_tables(self) -> list[TableRecord]:
        return list(self._tables.values())

    async def get_table(self, name: str) -> TableRecord | None:
        return self._tables.get(name)

    async def create_table(self, record: TableRecord) -> bool:
        if record.name in self._tables:
            return False
        self._tables[record.name] = self._bump(record)
        return True

    async def replace_table(self, record: TableRecord) -> bool:
        current = self._tables.get(record.name)
        if current is None or current.revision != record.revision:
            return False
        self._tables[record.name] = self._bump(record)
        return True

    async def remove_table(self, record: TableRecord) -> bool:
        current = self._tables.get(record.name)
        if current is None or current.revision != record.revision:
            return False
        del self._tables[record.name]
        self._ready = {r for r in self._ready if r[0] != record.table_id}
        await self.clear_partition_stats(record.table_id)
        return True

    async def register_node(self, node: NodeRecord, ttl: int) -> None:
        self._nodes[node.node_id] = node

    async def list_nodes(self) -> list[NodeRecord]:
        return sorted(self._nodes.values(), key=lambda n: n.node_id)

    async def mark_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        self._ready.add((table_id, partition_id, node_id))

    async def clear_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        self._ready.discard((table_id, partition_id, node_id))

    async def list_ready(self, table_id: int) -> set[tuple[str, str]]:
        return {(p, n) for t, p, n in self._ready if t == table_id}

    async def put_partition_stats(self, table_id: int, partition_id: str, stats: PartitionStats) -> None:
        self._stats[(table_id, partition_id)] = stats

    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]:
        return {p: s for (t, p), s in self._stats.items() if t == table_id}

    async def clear_partition_stats(self, table_id: int) -> None:
        self._stats = {k: s for k, s in self._stats.items() if k[0] != table_id}

    async def wait_for_change(self, timeout: float) -> bool:
        await asyncio.sleep(min(timeout, 0.01))
        return True

    async def close(self) -> None:
        return None
