"""The control store, split by concern, and its two implementations (etcd; in-memory
for tests). A Kubernetes implementation maps each concern onto objects: the catalog's
spec and state onto a Table resource's spec and status, partitions onto Partition
resources, node membership onto Pods, statistics onto Partition status.

Who uses what:
- routers: `TableCatalog` (write the desired spec) and `RouteSource` (read routes);
- the autoadmin: `AutoadminStore`, everything but registering nodes;
- storage nodes: `RouteSource`, `NodeMembership`, `Statistics`.

Keys (etcd):
  /partita/tables/<name>                       TableSpec JSON (routers)
  /partita/state/<name>                        TableState JSON (autoadmin)
  /partita/partitions/<table_id>/<partition>   Partition JSON (autoadmin)
  /partita/nodes/<node_id>                     NodeRecord JSON, attached to a lease (liveness)
  /partita/ready/<table_id>/<partition>/<node> replica hosted and serving ("1")
  /partita-stats/<table_id>/<partition>        PartitionStats JSON, from the leader
Statistics live outside /partita/ because routers and nodes watch that prefix: a
leader publishing a new count must not make every process re-read every table.
Every update of a spec or a state is a compare-and-swap on its revision, so several
routers and autoadmins can act on the same table safely. Nothing here is written per
request: specs change with table-admin calls, the rest with placement and hosting.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar, cast

import orjson

from partita.common.partition_map import Partition, data_members
from partita.control.model import (
    NO_REVISION,
    NodeLoad,
    NodeRecord,
    PartitionStats,
    ReplicaMove,
    Revision,
    TableRecord,
    TableSpec,
    TableState,
    partition_from_json,
    partition_to_json,
)

PREFIX = b"/partita/"
TABLES = PREFIX + b"tables/"
STATES = PREFIX + b"state/"
PARTITIONS = PREFIX + b"partitions/"
NODES = PREFIX + b"nodes/"
READY = PREFIX + b"ready/"
# Replication groups' memberships as their leaders decided them, by partition (resource)
# name, on Kubernetes: under /partita/ so that the storage nodes' watch wakes for them.
MEMBERSHIP = PREFIX + b"membership/"
# Storage nodes being drained (`partita node drain`): their replicas move to other nodes,
# each group's leader replacing them as it repairs a dead member (docs/replication.md).
DRAINING = PREFIX + b"draining/"
STATS = b"/partita-stats/"
# Storage nodes' load reports (every few seconds each): outside /partita/ so that they
# wake no watcher; the autoadmin reads them when it looks for busy nodes.
LOADS = b"/partita-load/"
# Replica moves the autoadmin asked for (load-based migration), by group: under
# /partita/ so that storage nodes' watches wake for them.
MOVES = PREFIX + b"moves/"
# Every table's replica sets as the operator last published them (Kubernetes): one key,
# outside /partita/ so that publishing wakes no watcher (storage pods read it as they
# follow the memberships).
PLACEMENTS = b"/partita-placements"
# Who leads a role (the local autoadmin): outside /partita/ so that campaigning and
# keeping a lease alive wake no watcher.
LEADERS = b"/partita-leaders/"
# The transaction ledger (router/actions/transactions.py): each TransactWriteItems that
# spans partitions, its participants and outcome, until every participant has resolved
# it; and ClientRequestTokens of finished transactions. Outside /partita/ so that
# transactions wake no watcher.
TRANSACTIONS = b"/partita-tx/ledger/"
TOKENS = b"/partita-tx/tokens/"
# ImportTable's records, by import id: they outlive a failed import's table.
IMPORTS = b"/partita/imports/"
# ExportTableToPointInTime's records, by export id.
EXPORTS = b"/partita/exports/"
# A key nothing writes: reading it costs etcd next to nothing and its answer's header
# carries the store's revision, which moves with every write anywhere.
REVISION_PROBE = b"/partita-revision-probe"

log = logging.getLogger(__name__)

T = TypeVar("T")
CAS_TRIES = 5


class Watchable(Protocol):
    async def wait_for_change(self, timeout: float) -> bool:
        """Return when anything in the store may have changed (True) or after `timeout` (False)."""

    async def close(self) -> None: ...


class TableCatalog(Protocol):
    """The desired table specs: all a router may write."""

    async def get_table_spec(self, name: str) -> TableSpec | None: ...
    async def create_table_spec(self, spec: TableSpec) -> bool:
        """Store a new spec; False if the name is taken."""

    async def replace_table_spec(self, spec: TableSpec) -> bool:
        """Store `spec` if the stored one still has `spec.revision`; False otherwise."""

    async def get_table_state(self, name: str) -> TableState | None: ...


class RouteSource(Watchable, Protocol):
    """What routers and storage nodes route with."""

    async def list_tables(self) -> list[TableRecord]:
        """Every table joined with its state and partitions, as of one moment."""

    async def list_nodes(self) -> list[NodeRecord]: ...
    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]: ...


class PartitionMapStore(Protocol):
    async def list_partitions(self, table_id: int) -> list[Partition]: ...
    async def change_partitions(
        self,
        table_id: int,
        put: Sequence[Partition],
        remove: Sequence[str],
        stats: Sequence[tuple[str, PartitionStats]] = (),
    ) -> None:
        """Store `put` and delete the partitions with ids `remove`, with their ready
        markers and statistics, in one step (a split replaces a parent by its children);
        `stats` are estimated counts of new partitions, until their leaders count them."""


class NodeMembership(Protocol):
    async def register_node(self, node: NodeRecord, ttl: int) -> None: ...
    async def list_nodes(self) -> list[NodeRecord]: ...
    async def set_draining(self, node_id: str, draining: bool, by: str = "hand") -> None:
        """Mark a storage node as being drained (its replicas move elsewhere), saying
        who asked (`by`: "hand" for `partita node drain`, "scale-down" for the operator),
        or clear the mark."""

    async def list_draining(self) -> frozenset[str]: ...
    async def draining_marks(self) -> dict[str, str]:
        """Who set each drain mark, by node."""

    async def mark_ready(self, table_id: int, partition_id: str, node_id: str) -> None: ...
    async def clear_ready(self, table_id: int, partition_id: str, node_id: str) -> None: ...
    async def list_ready(self, table_id: int) -> set[tuple[str, str]]: ...
    async def put_node_load(self, load: NodeLoad, ttl: int) -> None:
        """A storage node's load report, kept `ttl` seconds unless replaced (a node that
        stops reporting stops counting)."""

    async def list_node_loads(self) -> list[NodeLoad]: ...
    async def put_move(self, move: ReplicaMove) -> None: ...
    async def delete_move(self, table_id: int, partition_id: str) -> None: ...
    async def list_moves(self) -> list[ReplicaMove]: ...


class Statistics(Protocol):
    async def put_partition_stats(self, table_id: int, partition_id: str, stats: PartitionStats) -> None: ...
    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]: ...
    async def clear_partition_stats(self, table_id: int) -> None: ...


class AutoadminStore(TableCatalog, PartitionMapStore, NodeMembership, Statistics, Watchable, Protocol):
    async def list_table_specs(self) -> list[TableSpec]: ...
    async def list_all_partition_stats(self) -> dict[int, dict[str, PartitionStats]]:
        """Every table's partition statistics, by table id (one read, not one a table)."""

    async def list_placements(self) -> dict[int, tuple[frozenset[str], ...]]:
        """Every table's partitions' replica sets (full members and those being built),
        by table id (one read)."""

    async def list_table_states(self) -> list[TableState]: ...
    async def put_table_state(self, state: TableState) -> bool:
        """Create the state (revision NO_REVISION: only if absent) or replace it (only
        if the stored one still has `state.revision`)."""

    async def remove_table(self, spec: TableSpec) -> bool:
        """Remove a table entirely (spec, state, partitions, ready markers, statistics)
        if the stored spec still has `spec.revision`."""


# Each table's partitions' replica sets, by table id.
Placements = dict[int, tuple[frozenset[str], ...]]


def encode_placements(placements: Placements) -> bytes:
    """Placements as JSON, the same bytes for the same placements (so an unchanged
    publication is seen as such)."""
    return orjson.dumps(
        {str(t): sorted(sorted(members) for members in sets) for t, sets in sorted(placements.items())}
    )


def decode_placements(data: bytes) -> Placements:
    return {int(t): tuple(frozenset(m) for m in sets) for t, sets in orjson.loads(data).items()}


class Memberships(Protocol):
    """Replication groups' memberships their leaders published (Kubernetes repair),
    by partition name, as opaque records (admin.proto `PublishedMembership`)."""

    async def put_membership(self, partition: str, record: bytes) -> None: ...
    async def get_membership(self, partition: str) -> bytes | None: ...
    async def delete_membership(self, partition: str) -> None: ...
    async def list_memberships(self) -> dict[str, bytes]: ...
    async def put_placements(self, placements: Placements) -> None:
        """Publish every table's partitions' replica sets (the operator, on Kubernetes,
        where a storage pod reads no table it does not host; the shuffle-shard bound of
        repair counts them)."""

    async def get_placements(self) -> Placements:
        """What was last published (empty if nothing was)."""


class WatchedMemberships(Memberships, Watchable, Protocol):
    """Published memberships and a wake-up when any may have changed (their followers)."""


class NodeStore(RouteSource, NodeMembership, Statistics, PartitionMapStore, Memberships, Protocol):
    """What a storage node uses: it follows the partition objects through the joined
    view, registers itself, reports the replicas it serves and their counts; a group's
    leader writes its partition object's members when it repairs the group."""


class TransactionLedger(Protocol):
    """Where a transaction's coordinator records it across partitions, so that any
    router can finish it if the coordinator dies: records are JSON objects whose
    "state" is "pending", "committed" or "aborted"."""

    async def put_transaction(self, tx_id: str, record: dict[str, Any]) -> None: ...
    async def decide_transaction(self, tx_id: str, outcome: str) -> str | None:
        """Move a pending transaction to `outcome`, once: the outcome it has after
        (another decider's, if it came first); None if there is no record."""

    async def get_transaction(self, tx_id: str) -> dict[str, Any] | None: ...
    async def delete_transaction(self, tx_id: str) -> None: ...
    async def list_transactions(self) -> list[tuple[str, dict[str, Any]]]: ...
    async def get_token(self, token: str) -> dict[str, Any] | None: ...
    async def put_token(self, token: str, record: dict[str, Any]) -> None: ...
    async def claim_token(self, token: str, record: dict[str, Any]) -> bool:
        """Store `record` for a token none holds; False if one does (a request with the
        same token got there first)."""

    async def delete_token(self, token: str) -> None: ...
    async def list_tokens(self) -> list[tuple[str, dict[str, Any]]]: ...


class ImportExportLedger(Protocol):
    """ImportTable's and ExportTableToPointInTime's records (JSON objects), each changed
    by compare-and-swap on the revision it was read at, so two routers never both take
    over one import or export."""

    async def get_import(self, import_id: str) -> tuple[dict[str, Any], Revision] | None: ...
    async def put_import(self, import_id: str, record: dict[str, Any], revision: Revision) -> bool:
        """Store `record` if the stored one is still at `revision` (NO_REVISION: if none
        is stored); False otherwise."""

    async def list_imports(self) -> list[tuple[dict[str, Any], Revision]]: ...

    # ExportTableToPointInTime's records, kept and changed the same way.
    async def get_export(self, export_id: str) -> tuple[dict[str, Any], Revision] | None: ...
    async def put_export(self, export_id: str, record: dict[str, Any], revision: Revision) -> bool: ...
    async def list_exports(self) -> list[tuple[dict[str, Any], Revision]]: ...


class ControlStore(AutoadminStore, RouteSource, Statistics, Protocol):
    """Every concern at once: what one store implementation provides."""


def _id_range(prefix: bytes, table_id: int) -> tuple[bytes, bytes]:
    """The key range of one table's keys under `prefix` ('0' is the byte after '/')."""
    return prefix + f"{table_id}/".encode(), prefix + f"{table_id}0".encode()


def _move_key(table_id: int, partition_id: str) -> bytes:
    return MOVES + f"{table_id}/{partition_id}".encode()


def _ready_key(table_id: int, partition_id: str, node_id: str) -> bytes:
    return READY + f"{table_id}/{partition_id}/{node_id}".encode()


def _partition_key(table_id: int, partition_id: str) -> bytes:
    return PARTITIONS + f"{table_id}/{partition_id}".encode()


def _stats_key(table_id: int, partition_id: str) -> bytes:
    return _id_range(STATS, table_id)[0] + partition_id.encode()


def _join(
    specs: list[TableSpec], states: list[TableState], parts: dict[int, list[Partition]]
) -> list[TableRecord]:
    by_name = {s.name: s for s in states}
    return [TableRecord.of(s, by_name.get(s.name), parts.get(s.table_id, [])) for s in specs]


def _prefix_end(prefix: bytes) -> bytes:
    """The end of the key range of every key that starts with `prefix`."""
    return prefix[:-1] + bytes([prefix[-1] + 1])


# Decoders of one etcd key-value each. The specs and states the autoadmin compares and
# swaps carry their key's revision; the joined table records do not need it.
def _spec_of(kv: Any) -> TableSpec:
    return TableSpec.from_json(orjson.loads(kv.value))


def _state_of(kv: Any) -> TableState:
    return TableState.from_json(orjson.loads(kv.value))


def _partition_of(kv: Any) -> Partition:
    return partition_from_json(orjson.loads(kv.value))


def _revised_spec_of(kv: Any) -> TableSpec:
    return TableSpec.from_json(orjson.loads(kv.value), Revision(str(kv.mod_revision)))


def _revised_state_of(kv: Any) -> TableState:
    return TableState.from_json(orjson.loads(kv.value), Revision(str(kv.mod_revision)))


class DecodedKeys:
    """The records decoded from one listing's etcd keys, each decoded again only when its
    key's mod revision moved."""

    def __init__(self) -> None:
        self._known: dict[bytes, tuple[int, Any]] = {}
        self._seen: dict[bytes, tuple[int, Any]] = {}

    def record(self, kv: Any, decode: Callable[[Any], T]) -> T:
        known = self._known.get(kv.key)
        if known is None or known[0] != kv.mod_revision:
            known = (kv.mod_revision, decode(kv))
        self._seen[kv.key] = known
        return cast(T, known[1])

    def forget_unseen(self) -> None:
        """End of a read: keep only the keys it saw (the others were deleted)."""
        self._known, self._seen = self._seen, {}


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
        self._leadership: asyncio.Task[None] | None = None
        # Listings by name: the store's revision as of the read, and what was read; and
        # each listing's decoded keys.
        self._listings: dict[str, tuple[int, list[Any]]] = {}
        self._placements: tuple[int, Placements] | None = None
        self._decoded: dict[str, DecodedKeys] = {}

    async def _cas_put(self, key: bytes, value: dict[str, Any], revision: Revision) -> bool:
        tx = self._client.transactions
        if revision == NO_REVISION:
            compare = [tx.create(key) == 0]
        else:
            # A missing key has mod revision 0; the version check keeps a CAS from
            # turning into a create.
            compare = [tx.version(key) > 0, tx.mod(key) == int(revision)]
        ok, _ = await self._client.transaction(
            compare=compare, success=[tx.put(key, orjson.dumps(value))], failure=[]
        )
        return bool(ok)

    # --- catalog ----------------------------------------------------------------

    async def get_table_spec(self, name: str) -> TableSpec | None:
        kv = await self._client.get(TABLES + name.encode())
        if kv is None:
            return None
        return TableSpec.from_json(orjson.loads(kv.value), Revision(str(kv.mod_revision)))

    async def create_table_spec(self, spec: TableSpec) -> bool:
        return await self._cas_put(TABLES + spec.name.encode(), spec.to_json(), NO_REVISION)

    async def replace_table_spec(self, spec: TableSpec) -> bool:
        if spec.revision == NO_REVISION:
            return False
        return await self._cas_put(TABLES + spec.name.encode(), spec.to_json(), spec.revision)

    async def list_table_specs(self) -> list[TableSpec]:
        return await self._listing("specs", lambda keys: self._read_prefix(TABLES, _revised_spec_of, keys))

    async def get_table_state(self, name: str) -> TableState | None:
        kv = await self._client.get(STATES + name.encode())
        if kv is None:
            return None
        return TableState.from_json(orjson.loads(kv.value), Revision(str(kv.mod_revision)))

    async def list_table_states(self) -> list[TableState]:
        return await self._listing("states", lambda keys: self._read_prefix(STATES, _revised_state_of, keys))

    async def put_table_state(self, state: TableState) -> bool:
        return await self._cas_put(STATES + state.name.encode(), state.to_json(), state.revision)

    async def remove_table(self, spec: TableSpec) -> bool:
        if spec.revision == NO_REVISION:
            return False
        key = TABLES + spec.name.encode()
        tx = self._client.transactions
        ranges = [_id_range(prefix, spec.table_id) for prefix in (PARTITIONS, READY, STATS)]
        ok, _ = await self._client.transaction(
            compare=[tx.version(key) > 0, tx.mod(key) == int(spec.revision)],
            success=[
                tx.delete(key),
                tx.delete(STATES + spec.name.encode()),
                *(tx.delete(start, range_end=end) for start, end in ranges),
            ],
            failure=[],
        )
        return bool(ok)

    async def list_tables(self) -> list[TableRecord]:
        # Specs, states and partitions as of one revision (one transaction), so no
        # reader sees a state without its partitions; not the ready markers, three times
        # as many keys, which nobody here needs.
        return await self._listing("tables", self._read_tables)

    async def _read_tables(self, keys: DecodedKeys) -> tuple[int | None, list[TableRecord]]:
        tx = self._client.transactions
        ranges = [(prefix, _prefix_end(prefix)) for prefix in (TABLES, STATES, PARTITIONS)]
        _, responses = await self._client.transaction(
            compare=[], success=[tx.get(start, range_end=end) for start, end in ranges], failure=[]
        )
        specs: list[TableSpec] = []
        states: list[TableState] = []
        parts: dict[int, list[Partition]] = {}
        revision: int | None = None
        for (start, _), found in zip(ranges, responses, strict=True):
            for _, kv in found:
                revision = kv.header.revision
                if start == TABLES:
                    specs.append(keys.record(kv, _spec_of))
                elif start == STATES:
                    states.append(keys.record(kv, _state_of))
                else:
                    table_id = int(kv.key[len(PARTITIONS) :].split(b"/", 1)[0])
                    parts.setdefault(table_id, []).append(keys.record(kv, _partition_of))
        return revision, _join(specs, states, parts)

    async def _read_prefix(
        self, prefix: bytes, decode: Callable[[Any], T], keys: DecodedKeys
    ) -> tuple[int | None, list[T]]:
        result = await self._client.get_prefix(prefix)
        return result.header.revision, [keys.record(kv, decode) for kv in result]

    async def _listing(
        self, name: str, read: Callable[[DecodedKeys], Awaitable[tuple[int | None, list[T]]]]
    ) -> list[T]:
        """A listing of many keys, read again only when the store has changed since the
        last read (its revision moved), and each key decoded again only when it changed:
        routers, nodes and the autoadmin re-list every table every second or so, and at
        a thousand tables reading and decoding them all was a tenth of a core per
        process, at idle. Returns a new list of the same (immutable) records."""
        probe = await self._client.get_range(REVISION_PROBE, REVISION_PROBE + b"\0")
        now = probe.header.revision
        cached = self._listings.get(name)
        if cached is not None and cached[0] == now:
            return list(cached[1])
        keys = self._decoded.setdefault(name, DecodedKeys())
        revision, records = await read(keys)
        keys.forget_unseen()
        # The read is as of its own revision, at least the probe's: an empty read has no
        # header here, and the probe's (older or equal) revision is then the safe one.
        self._listings[name] = (revision if revision is not None else now, records)
        return list(records)

    # --- partition map ----------------------------------------------------------

    async def list_partitions(self, table_id: int) -> list[Partition]:
        start, end = _id_range(PARTITIONS, table_id)
        result = await self._client.get_range(start, end)
        return sorted((partition_from_json(orjson.loads(kv.value)) for kv in result), key=lambda p: p.start)

    async def change_partitions(
        self,
        table_id: int,
        put: Sequence[Partition],
        remove: Sequence[str],
        stats: Sequence[tuple[str, PartitionStats]] = (),
    ) -> None:
        tx = self._client.transactions
        ops = [
            tx.put(_partition_key(table_id, p.partition_id), orjson.dumps(partition_to_json(p))) for p in put
        ]
        for partition_id in remove:
            ready_start = _ready_key(table_id, partition_id, "")
            ops += [
                tx.delete(_partition_key(table_id, partition_id)),
                tx.delete(ready_start, range_end=ready_start[:-1] + b"0"),  # '0' follows '/'
                tx.delete(_stats_key(table_id, partition_id)),
            ]
        ops += [tx.put(_stats_key(table_id, pid), orjson.dumps(s.to_json())) for pid, s in stats]
        await self._client.transaction(compare=[], success=ops, failure=[])

    # --- published memberships (Kubernetes) --------------------------------------
    # Opaque bytes here (an admin.proto PublishedMembership): the control layer stores
    # and lists them; the storage nodes and the operator read them.

    async def put_membership(self, partition: str, record: bytes) -> None:
        await self._client.put(MEMBERSHIP + partition.encode(), record)

    async def get_membership(self, partition: str) -> bytes | None:
        value = await self._client.get(MEMBERSHIP + partition.encode())
        return None if value is None else bytes(value.value)

    async def delete_membership(self, partition: str) -> None:
        await self._client.delete(MEMBERSHIP + partition.encode())

    async def put_placements(self, placements: Placements) -> None:
        await self._client.put(PLACEMENTS, encode_placements(placements))

    async def get_placements(self) -> Placements:
        """Decoded again only when the key was written since the last read."""
        value = await self._client.get(PLACEMENTS)
        if value is None:
            return {}
        revision = int(value.mod_revision)
        if self._placements is None or self._placements[0] != revision:
            self._placements = (revision, decode_placements(bytes(value.value)))
        return dict(self._placements[1])

    async def list_memberships(self) -> dict[str, bytes]:
        """Every published membership by partition name, re-read only when the store moved."""
        listed = await self._listing(
            "memberships",
            lambda keys: self._read_prefix(MEMBERSHIP, lambda kv: (kv.key, bytes(kv.value)), keys),
        )
        return {key[len(MEMBERSHIP) :].decode(): value for key, value in listed}

    # --- nodes ------------------------------------------------------------------

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

    async def set_draining(self, node_id: str, draining: bool, by: str = "hand") -> None:
        # No lease: a drain outlives the node's restarts until it is cleared.
        if draining:
            await self._client.put(DRAINING + node_id.encode(), by.encode())
        else:
            await self._client.delete(DRAINING + node_id.encode())

    async def list_draining(self) -> frozenset[str]:
        return frozenset(await self.draining_marks())

    async def draining_marks(self) -> dict[str, str]:
        result = await self._client.get_prefix(DRAINING)
        return {kv.key[len(DRAINING) :].decode(): bytes(kv.value).decode() for kv in result}

    async def put_node_load(self, load: NodeLoad, ttl: int) -> None:
        # On the node's registration lease when it registered through this store: the
        # report then lives exactly as long as the registration, with no lease of its own
        # to grant each time; else on a lease of `ttl`.
        lease = self._node_lease if self._node_lease is not None else await self._client.lease(ttl)
        await self._client.put(LOADS + load.node_id.encode(), orjson.dumps(load.to_json()), lease=lease)

    async def list_node_loads(self) -> list[NodeLoad]:
        result = await self._client.get_prefix(LOADS)
        return sorted((NodeLoad.from_json(orjson.loads(kv.value)) for kv in result), key=lambda n: n.node_id)

    async def put_move(self, move: ReplicaMove) -> None:
        await self._client.put(_move_key(move.table_id, move.partition_id), orjson.dumps(move.to_json()))

    async def delete_move(self, table_id: int, partition_id: str) -> None:
        await self._client.delete(_move_key(table_id, partition_id))

    async def list_moves(self) -> list[ReplicaMove]:
        result = await self._client.get_prefix(MOVES)
        return [ReplicaMove.from_json(orjson.loads(kv.value)) for kv in result]

    async def mark_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        await self._client.put(_ready_key(table_id, partition_id, node_id), b"1")

    async def clear_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        await self._client.delete(_ready_key(table_id, partition_id, node_id))

    async def list_ready(self, table_id: int) -> set[tuple[str, str]]:
        start, end = _id_range(READY, table_id)
        result = await self._client.get_range(start, end)
        out = set()
        for kv in result:
            partition_id, node_id = kv.key[len(start) :].decode().split("/", 1)
            out.add((partition_id, node_id))
        return out

    # --- statistics -------------------------------------------------------------

    async def put_partition_stats(self, table_id: int, partition_id: str, stats: PartitionStats) -> None:
        await self._client.put(_stats_key(table_id, partition_id), orjson.dumps(stats.to_json()))

    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]:
        start, end = _id_range(STATS, table_id)
        result = await self._client.get_range(start, end)
        return {
            kv.key[len(start) :].decode(): PartitionStats.from_json(orjson.loads(kv.value)) for kv in result
        }

    async def list_placements(self) -> dict[int, tuple[frozenset[str], ...]]:
        sets: dict[int, list[frozenset[str]]] = {}
        for kv in await self._client.get_prefix(PARTITIONS):
            table = int(kv.key[len(PARTITIONS) :].partition(b"/")[0])
            sets.setdefault(table, []).append(data_members(partition_from_json(orjson.loads(kv.value))))
        return {table: tuple(replica_sets) for table, replica_sets in sets.items()}

    async def list_all_partition_stats(self) -> dict[int, dict[str, PartitionStats]]:
        out: dict[int, dict[str, PartitionStats]] = {}
        for kv in await self._client.get_prefix(STATS):
            table, _, partition_id = kv.key[len(STATS) :].decode().partition("/")
            out.setdefault(int(table), {})[partition_id] = PartitionStats.from_json(orjson.loads(kv.value))
        return out

    async def clear_partition_stats(self, table_id: int) -> None:
        start, end = _id_range(STATS, table_id)
        await self._client.delete_range(start, end)

    # --- maintenance (etcd only) ------------------------------------------------

    async def database_size(self) -> int:
        """Bytes of etcd's backend database file (what defragmenting shrinks)."""
        status = await self._client.status()
        return int(status.db_size)

    async def compact_and_defragment(self, keep_revisions: int) -> None:
        """Drop history older than the last `keep_revisions` revisions, then give the
        freed pages back to the file system. Defragmenting blocks etcd briefly, so the
        autoadmin does it on a schedule, not per change."""
        current = (await self._client.get_prefix(TABLES, keys_only=True)).header.revision
        if current > keep_revisions:
            try:
                await self._client.compact(current - keep_revisions, physical=True)
            except Exception as exc:  # already compacted past it (auto-compaction ran)
                log.debug("compaction to %d skipped: %s", current - keep_revisions, exc)
        await self._client.defragment()

    # --- leadership (etcd only) -------------------------------------------------

    async def campaign(self, role: str, holder: str, ttl: int, poll: float = 1.0) -> None:
        """Return once `holder` leads `role`, waiting (polling every `poll` seconds) while
        another holder's lease lives. Leadership lasts while this store keeps the lease
        alive; `leadership_lost` returns if it cannot."""
        key = LEADERS + role.encode()
        tx = self._client.transactions
        while True:
            lease = await self._client.lease(ttl)
            ok, _ = await self._client.transaction(
                compare=[tx.create(key) == 0], success=[tx.put(key, holder.encode(), lease=lease)], failure=[]
            )
            if ok:
                self._leadership = asyncio.create_task(self._keep_leading(lease, ttl))
                return
            await self._client.revoke_lease(lease.id)
            await asyncio.sleep(poll)

    async def _keep_leading(self, lease: Any, ttl: int) -> None:
        # Refresh at a third of the TTL; one refresh that finds the lease gone (or that
        # cannot reach etcd before the lease would have run out) ends the leadership.
        deadline = time.monotonic() + ttl
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                reply = await self._client.refresh_lease(lease.id)
                if reply is None or reply.TTL <= 0:
                    return
                deadline = time.monotonic() + ttl
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("could not refresh the leadership lease: %s", exc)
                if time.monotonic() >= deadline:
                    return

    async def leadership_lost(self) -> None:
        """Return when the leadership won by `campaign` has ended."""
        assert self._leadership is not None, "campaign first"
        await asyncio.shield(self._leadership)

    async def resign(self, role: str, holder: str) -> None:
        """Give the role up at once (a clean stop), so a successor need not wait out the TTL."""
        if self._leadership is not None:
            self._leadership.cancel()
        key = LEADERS + role.encode()
        tx = self._client.transactions
        await self._client.transaction(
            compare=[tx.value(key) == holder.encode()], success=[tx.delete(key)], failure=[]
        )

    # --- change notification ----------------------------------------------------

    async def wait_for_change(self, timeout: float) -> bool:
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch())
        try:
            async with asyncio.timeout(timeout):
                await self._changed.wait()
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

    # --- transaction ledger ------------------------------------------------------

    async def put_transaction(self, tx_id: str, record: dict[str, Any]) -> None:
        await self._client.put(TRANSACTIONS + tx_id.encode(), orjson.dumps(record))

    async def decide_transaction(self, tx_id: str, outcome: str) -> str | None:
        key = TRANSACTIONS + tx_id.encode()
        tx = self._client.transactions
        for _ in range(CAS_TRIES):
            kv = await self._client.get(key)
            if kv is None:
                return None
            record = orjson.loads(kv.value)
            if record["state"] != "pending":
                return str(record["state"])
            decided = orjson.dumps({**record, "state": outcome})
            ok, _ = await self._client.transaction(
                compare=[tx.mod(key) == kv.mod_revision], success=[tx.put(key, decided)], failure=[]
            )
            if ok:
                return outcome
        raise RuntimeError(f"transaction {tx_id}: its record kept changing")

    async def get_transaction(self, tx_id: str) -> dict[str, Any] | None:
        return await self._get_record(TRANSACTIONS + tx_id.encode())

    async def delete_transaction(self, tx_id: str) -> None:
        await self._client.delete(TRANSACTIONS + tx_id.encode())

    async def list_transactions(self) -> list[tuple[str, dict[str, Any]]]:
        return await self._list_records(TRANSACTIONS)

    async def get_token(self, token: str) -> dict[str, Any] | None:
        return await self._get_record(TOKENS + token.encode())

    async def put_token(self, token: str, record: dict[str, Any]) -> None:
        await self._client.put(TOKENS + token.encode(), orjson.dumps(record))

    async def claim_token(self, token: str, record: dict[str, Any]) -> bool:
        return await self._cas_put(TOKENS + token.encode(), record, NO_REVISION)

    async def delete_token(self, token: str) -> None:
        await self._client.delete(TOKENS + token.encode())

    async def list_tokens(self) -> list[tuple[str, dict[str, Any]]]:
        return await self._list_records(TOKENS)

    async def get_import(self, import_id: str) -> tuple[dict[str, Any], Revision] | None:
        kv = await self._client.get(IMPORTS + import_id.encode())
        return None if kv is None else (dict(orjson.loads(kv.value)), Revision(str(kv.mod_revision)))

    async def put_import(self, import_id: str, record: dict[str, Any], revision: Revision) -> bool:
        return await self._cas_put(IMPORTS + import_id.encode(), record, revision)

    async def list_imports(self) -> list[tuple[dict[str, Any], Revision]]:
        return await self._list_revised(IMPORTS)

    async def get_export(self, export_id: str) -> tuple[dict[str, Any], Revision] | None:
        kv = await self._client.get(EXPORTS + export_id.encode())
        return None if kv is None else (dict(orjson.loads(kv.value)), Revision(str(kv.mod_revision)))

    async def put_export(self, export_id: str, record: dict[str, Any], revision: Revision) -> bool:
        return await self._cas_put(EXPORTS + export_id.encode(), record, revision)

    async def list_exports(self) -> list[tuple[dict[str, Any], Revision]]:
        return await self._list_revised(EXPORTS)

    async def _list_revised(self, prefix: bytes) -> list[tuple[dict[str, Any], Revision]]:
        return [
            (dict(orjson.loads(kv.value)), Revision(str(kv.mod_revision)))
            for kv in await self._client.get_prefix(prefix)
        ]

    async def _get_record(self, key: bytes) -> dict[str, Any] | None:
        kv = await self._client.get(key)
        return None if kv is None else dict(orjson.loads(kv.value))

    async def _list_records(self, prefix: bytes) -> list[tuple[str, dict[str, Any]]]:
        """(name after `prefix`, record) of every JSON record under `prefix`."""
        return [
            (kv.key[len(prefix) :].decode(), orjson.loads(kv.value))
            for kv in await self._client.get_prefix(prefix)
        ]

    async def close(self) -> None:
        for task in (self._node_keepalive, self._watcher, self._leadership):
            if task is not None:
                task.cancel()
        await self._client.close()


class MemoryControlStore:
    """An in-process ControlStore with the same CAS semantics, for unit tests."""

    def __init__(self) -> None:
        self._imports: dict[str, tuple[dict[str, Any], int]] = {}
        self._exports: dict[str, tuple[dict[str, Any], int]] = {}
        self._specs: dict[str, TableSpec] = {}
        self._states: dict[str, TableState] = {}
        self._partitions: dict[int, dict[str, Partition]] = {}
        self._nodes: dict[str, NodeRecord] = {}
        self._ready: set[tuple[int, str, str]] = set()
        self._stats: dict[tuple[int, str], PartitionStats] = {}
        self._memberships: dict[str, bytes] = {}
        self._published_placements: Placements = {}
        self._draining: dict[str, str] = {}
        self._loads: dict[str, NodeLoad] = {}
        self._moves: dict[tuple[int, str], ReplicaMove] = {}
        self._revision = 0
        self.writes = 0  # every write of any kind: tests check that idle passes write nothing

    def _next_revision(self) -> Revision:
        self._revision += 1
        self.writes += 1
        return Revision(str(self._revision))

    async def put_membership(self, partition: str, record: bytes) -> None:
        self._next_revision()
        self._memberships[partition] = record

    async def get_membership(self, partition: str) -> bytes | None:
        return self._memberships.get(partition)

    async def delete_membership(self, partition: str) -> None:
        if self._memberships.pop(partition, None) is not None:
            self._next_revision()

    async def list_memberships(self) -> dict[str, bytes]:
        return dict(self._memberships)

    async def put_placements(self, placements: Placements) -> None:
        self._next_revision()
        self._published_placements = decode_placements(encode_placements(placements))

    async def get_placements(self) -> Placements:
        return dict(self._published_placements)

    async def get_table_spec(self, name: str) -> TableSpec | None:
        return self._specs.get(name)

    async def create_table_spec(self, spec: TableSpec) -> bool:
        if spec.name in self._specs:
            return False
        self._specs[spec.name] = dataclasses.replace(spec, revision=self._next_revision())
        return True

    async def replace_table_spec(self, spec: TableSpec) -> bool:
        current = self._specs.get(spec.name)
        if current is None or current.revision != spec.revision:
            return False
        self._specs[spec.name] = dataclasses.replace(spec, revision=self._next_revision())
        return True

    async def list_table_specs(self) -> list[TableSpec]:
        return list(self._specs.values())

    async def get_table_state(self, name: str) -> TableState | None:
        return self._states.get(name)

    async def list_table_states(self) -> list[TableState]:
        return list(self._states.values())

    async def put_table_state(self, state: TableState) -> bool:
        current = self._states.get(state.name)
        stored = NO_REVISION if current is None else current.revision
        if stored != state.revision:
            return False
        self._states[state.name] = dataclasses.replace(state, revision=self._next_revision())
        return True

    async def remove_table(self, spec: TableSpec) -> bool:
        current = self._specs.get(spec.name)
        if current is None or spec.revision == NO_REVISION or current.revision != spec.revision:
            return False
        self._next_revision()
        del self._specs[spec.name]
        self._states.pop(spec.name, None)
        self._partitions.pop(spec.table_id, None)
        self._ready = {r for r in self._ready if r[0] != spec.table_id}
        self._stats = {k: s for k, s in self._stats.items() if k[0] != spec.table_id}
        return True

    async def list_tables(self) -> list[TableRecord]:
        parts = {t: list(ps.values()) for t, ps in self._partitions.items()}
        return _join(list(self._specs.values()), list(self._states.values()), parts)

    async def list_partitions(self, table_id: int) -> list[Partition]:
        return sorted(self._partitions.get(table_id, {}).values(), key=lambda p: p.start)

    async def list_placements(self) -> dict[int, tuple[frozenset[str], ...]]:
        return {
            table: tuple(data_members(p) for p in parts.values())
            for table, parts in self._partitions.items()
            if parts
        }

    async def change_partitions(
        self,
        table_id: int,
        put: Sequence[Partition],
        remove: Sequence[str],
        stats: Sequence[tuple[str, PartitionStats]] = (),
    ) -> None:
        self._next_revision()
        table = self._partitions.setdefault(table_id, {})
        for p in put:
            table[p.partition_id] = p
        gone = set(remove)
        for partition_id in gone:
            table.pop(partition_id, None)
        self._ready = {r for r in self._ready if not (r[0] == table_id and r[1] in gone)}
        self._stats = {k: s for k, s in self._stats.items() if not (k[0] == table_id and k[1] in gone)}
        self._stats.update(((table_id, pid), s) for pid, s in stats)

    async def register_node(self, node: NodeRecord, ttl: int) -> None:
        self.writes += 1
        self._nodes[node.node_id] = node

    async def list_nodes(self) -> list[NodeRecord]:
        return sorted(self._nodes.values(), key=lambda n: n.node_id)

    async def set_draining(self, node_id: str, draining: bool, by: str = "hand") -> None:
        self.writes += 1
        if draining:
            self._draining[node_id] = by
        else:
            self._draining.pop(node_id, None)

    async def list_draining(self) -> frozenset[str]:
        return frozenset(self._draining)

    async def draining_marks(self) -> dict[str, str]:
        return dict(self._draining)

    async def put_node_load(self, load: NodeLoad, ttl: int) -> None:
        self.writes += 1
        self._loads[load.node_id] = load

    async def list_node_loads(self) -> list[NodeLoad]:
        return sorted(self._loads.values(), key=lambda n: n.node_id)

    async def put_move(self, move: ReplicaMove) -> None:
        self.writes += 1
        self._moves[(move.table_id, move.partition_id)] = move

    async def delete_move(self, table_id: int, partition_id: str) -> None:
        self.writes += 1
        self._moves.pop((table_id, partition_id), None)

    async def list_moves(self) -> list[ReplicaMove]:
        return list(self._moves.values())

    async def mark_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        self.writes += 1
        self._ready.add((table_id, partition_id, node_id))

    async def clear_ready(self, table_id: int, partition_id: str, node_id: str) -> None:
        self.writes += 1
        self._ready.discard((table_id, partition_id, node_id))

    async def list_ready(self, table_id: int) -> set[tuple[str, str]]:
        return {(p, n) for t, p, n in self._ready if t == table_id}

    async def put_partition_stats(self, table_id: int, partition_id: str, stats: PartitionStats) -> None:
        self.writes += 1
        self._stats[(table_id, partition_id)] = stats

    async def list_partition_stats(self, table_id: int) -> dict[str, PartitionStats]:
        return {p: s for (t, p), s in self._stats.items() if t == table_id}

    async def list_all_partition_stats(self) -> dict[int, dict[str, PartitionStats]]:
        out: dict[int, dict[str, PartitionStats]] = {}
        for (table_id, partition_id), stats in self._stats.items():
            out.setdefault(table_id, {})[partition_id] = stats
        return out

    async def clear_partition_stats(self, table_id: int) -> None:
        self.writes += 1
        self._stats = {k: s for k, s in self._stats.items() if k[0] != table_id}

    async def wait_for_change(self, timeout: float) -> bool:
        await asyncio.sleep(min(timeout, 0.01))
        return True

    async def get_import(self, import_id: str) -> tuple[dict[str, Any], Revision] | None:
        return _revised_get(self._imports, import_id)

    async def put_import(self, import_id: str, record: dict[str, Any], revision: Revision) -> bool:
        return _revised_put(self._imports, import_id, record, revision)

    async def list_imports(self) -> list[tuple[dict[str, Any], Revision]]:
        return [(dict(r), Revision(str(v))) for r, v in self._imports.values()]

    async def get_export(self, export_id: str) -> tuple[dict[str, Any], Revision] | None:
        return _revised_get(self._exports, export_id)

    async def put_export(self, export_id: str, record: dict[str, Any], revision: Revision) -> bool:
        return _revised_put(self._exports, export_id, record, revision)

    async def list_exports(self) -> list[tuple[dict[str, Any], Revision]]:
        return [(dict(r), Revision(str(v))) for r, v in self._exports.values()]

    async def close(self) -> None:
        return None


def _revised_get(
    records: dict[str, tuple[dict[str, Any], int]], name: str
) -> tuple[dict[str, Any], Revision] | None:
    found = records.get(name)
    return None if found is None else (dict(found[0]), Revision(str(found[1])))


def _revised_put(
    records: dict[str, tuple[dict[str, Any], int]], name: str, record: dict[str, Any], revision: Revision
) -> bool:
    """Compare-and-swap on an in-memory record's revision (NO_REVISION: none stored)."""
    found = records.get(name)
    if (found is None) != (revision == NO_REVISION) or (found is not None and str(found[1]) != revision):
        return False
    records[name] = (dict(record), (found[1] if found else 0) + 1)
    return True
