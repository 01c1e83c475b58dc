"""What every action handler gets: the table cache (routes, read-only), the table
catalog (the only thing a router writes: desired table specs), storage channels,
settings.

`send` routes one keyed request to the partition owning its hash, by floor lookup in
the cached partition map, and retries with refreshed routes when the node says the
route is stale or it is unavailable. A replicated partition's writes and strongly
consistent reads go to its leader as the nodes report it: a NOT_LEADER answer names the
leader (`leader_hint`), which the router remembers per partition and retries at once,
without refreshing its routes; eventually consistent reads go to any replica, spreading
the load (a router in a storage node's process: to that node's replica when it has one).

Read-your-writes through one router: a replicated write's answer carries its entry's
index in the partition's log, and the router keeps the highest it has seen per bucket of
key hashes of the partition (and over the whole partition). An eventually consistent read
carries its key's bucket's as its floor (`read_floor`; a Scan the partition's); a
follower that has applied less answers NOT_LEADER, and the read goes to the leader. On
the common path (the follower has applied the write: the leader tells followers of a
commit at once) that costs no round trip.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from partita._proto import storage_pb2 as pb
from partita.common import errors
from partita.common.errors import DynamoError
from partita.common.metrics import CounterCell
from partita.common.partition_map import Partition
from partita.control.model import TableRecord
from partita.control.store import ImportExportLedger, TableCatalog, TransactionLedger
from partita.router import index_capacity, metrics
from partita.router.storage_client import DataPath
from partita.router.table_cache import CachedTable, TableCache

if TYPE_CHECKING:
    from partita.router.copy_jobs import CopyJobs

# Attempts and pause between them when a route is stale or a node is unavailable; the
# total (about 3 s) covers a storage node being restarted by the supervisor.
SEND_ATTEMPTS = 12
RETRY_PAUSE_SECONDS = 0.25
_RETRY = {pb.WRONG_PARTITION, pb.NOT_LEADER, pb.UNAVAILABLE}
_READS = {pb.GET, pb.QUERY, pb.SCAN}
# Read floors per partition: one per bucket of key hashes (a GetItem's key, a Query's
# partition key), so that a read waits only for writes to keys hashing alike, not for
# every write to the partition, plus the partition's own (last) for Scans.
FLOOR_BUCKETS = 64


def endpoint_address(host: str, port: int) -> str:
    """The address to advertise for a listener: a wildcard host is no address a client
    can use, so the machine's name stands in for it."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    return f"{host}:{port}"


@dataclass
class RouterSettings:
    region: str = "us-east-1"
    account_id: str = "000000000000"
    # What DescribeEndpoints answers: host[:port] clients reach this router at.
    endpoint_address: str = "127.0.0.1:8000"
    # Partitions with several replicas are replication groups (`--replication`): spread
    # eventually consistent reads over them. Off: every request goes to the leader.
    replication: bool = False
    # The storage node in this router's process, if any (`partita storage --router-port`):
    # its replicas serve this router's eventually consistent reads, with no socket between.
    local_node: str = ""


class RouterContext:
    def __init__(
        self, tables: TableCache, catalog: TableCatalog, storage: DataPath, settings: RouterSettings
    ) -> None:
        self.tables = tables
        self.catalog = catalog
        self.storage = storage
        self.settings = settings
        # Where transactions across partitions are recorded (etcd); None: such
        # transactions are refused (a context built without a cluster, in tests).
        self.ledger: TransactionLedger | None = None
        self.copy_jobs: CopyJobs | None = None  # backups', restores' and imports' copies
        self.imports: ImportExportLedger | None = None
        self._consumed: dict[str, tuple[CounterCell, CounterCell]] = {}
        # (table id, partition id) -> the node its replicas last named as leader.
        self._leaders: dict[tuple[int, str], str] = {}
        # (table id, partition id) -> the highest log index a write was acknowledged at,
        # per bucket of key hashes and (last) over the partition: the floors of the
        # partition's eventually consistent reads (read-your-writes).
        self._floors: dict[tuple[int, str], list[int]] = {}
        self._spread = 0  # rotates eventually consistent reads over the replicas

    def table_arn(self, name: str) -> str:
        return f"arn:aws:dynamodb:{self.settings.region}:{self.settings.account_id}:table/{name}"

    def user_arn(self, name: str) -> str:
        """An access key's name as an IAM user of the cluster's account."""
        return f"arn:aws:iam::{self.settings.account_id}:user/{name}"

    def meter(self, name: str, kind: int, units: float) -> None:
        """Count `units` consumed by the table (or global index: router/index_capacity.py)
        `name`; kind 0 reads, 1 writes."""
        cells = self._consumed.get(name)
        if cells is None:
            cells = self._consumed[name] = metrics.consumed_cells(name)
        cells[kind].value += units

    def _meter_indexes(self, record: TableRecord, units: Mapping[str, float]) -> None:
        """A write's index units: a global index's are its own (it is admitted on them),
        a local index's the table's, as DynamoDB charges them."""
        for index_name, used in units.items():
            index = record.index(index_name)
            if index is not None and index.kind == "GLOBAL":
                self.meter(index_capacity.index_name(record.name, index_name), 1, used)
            else:
                self.meter(record.name, 1, used)

    async def send(self, table: CachedTable, request: pb.Request) -> pb.Response:
        name = table.record.name
        skip = 0  # replicas tried without a hint, for a partition whose leader is unknown
        to_leader = False  # an eventually consistent read a lagging replica sent on
        attempt = 0
        hops = 0
        while attempt < SEND_ATTEMPTS:
            partition = table.partition_map.floor_lookup(request.key_hash)
            key = (table.record.table_id, partition.partition_id)
            node_id = self._target(key, partition, request, skip, to_leader)
            address = self.tables.address_of(node_id)
            if address is not None:
                request.table_id = table.record.table_id
                request.partition_id = partition.partition_id
                if request.op in _READS and not request.consistent:
                    floors = self._floors.get(key)
                    if floors is not None:
                        bucket = FLOOR_BUCKETS if request.op == pb.SCAN else request.key_hash % FLOOR_BUCKETS
                        request.read_floor = floors[bucket]
                response = await self.storage.channel(address).call(request)
                if response.status not in _RETRY:
                    if response.log_index:
                        self._raise_floor(key, request.key_hash, response.log_index)
                    # Metering: every answered request's units, by table; the service's
                    # own work (copies, a global index's reads of the table) is not the
                    # table's.
                    if not request.unmetered:
                        self.meter(name, 0 if request.op in _READS else 1, response.capacity_units)
                        if response.index_units:
                            self._meter_indexes(table.record, response.index_units)
                    if response.status == pb.ERROR:
                        raise _error_of(response)
                    return response
                hint = response.leader_hint if response.status == pb.NOT_LEADER else ""
                if response.status == pb.NOT_LEADER:
                    if request.op in _READS and not request.consistent:
                        metrics.READ_FLOOR_DETOUR.value += 1  # a follower behind the read's floor
                    to_leader = True
                if hint and hint != node_id and hint in partition.replicas and hops < len(partition.replicas):
                    self._leaders[key] = hint
                    hops += 1
                    skip = 0
                    continue  # follow the hint now: no pause, no route refresh
                if len(partition.replicas) > 1 and response.status != pb.WRONG_PARTITION:
                    # No leader known (an election), or the node is down: the next replica,
                    # at once while this round has not asked them all. The routes are not
                    # what is wrong, so re-reading them first only delayed the answer (a
                    # failed-over node's every partition paid for a refresh).
                    self._leaders.pop(key, None)
                    skip += 1
                    if skip % len(partition.replicas):
                        continue
            elif len(partition.replicas) > 1:
                # The node is not registered (down for longer than its lease): the next
                # replica, or a node held down would be asked for ever.
                self._leaders.pop((table.record.table_id, partition.partition_id), None)
                skip += 1
            attempt += 1
            hops = 0
            if attempt > 1:
                await asyncio.sleep(RETRY_PAUSE_SECONDS)
            await self.tables.refresh()
            # The service's own copies (unmetered) also reach backups' hidden tables and
            # restores that clients still see CREATING.
            table = (
                self.tables.require_placed(name) if request.unmetered else self.tables.require_active(name)
            )
        raise errors.internal_server_error("The storage node holding this key is unavailable; retry")

    def _raise_floor(self, key: tuple[int, str], key_hash: int, index: int) -> None:
        floors = self._floors.get(key)
        if floors is None:
            floors = self._floors[key] = [0] * (FLOOR_BUCKETS + 1)
        bucket = key_hash % FLOOR_BUCKETS
        floors[bucket] = max(floors[bucket], index)
        floors[FLOOR_BUCKETS] = max(floors[FLOOR_BUCKETS], index)

    def _target(
        self, key: tuple[int, str], partition: Partition, request: pb.Request, skip: int, to_leader: bool
    ) -> str:
        replicas = partition.replicas
        if len(replicas) == 1:
            return replicas[0]
        if request.op in _READS and not request.consistent and self.settings.replication and not to_leader:
            if skip == 0 and self.settings.local_node in replicas:
                return self.settings.local_node
            self._spread += 1
            return replicas[self._spread % len(replicas)]
        leader = self._leaders.get(key)
        if leader is not None and leader in replicas and skip == 0:
            return leader
        first = replicas.index(partition.leader) if partition.leader in replicas else 0
        return replicas[(first + skip) % len(replicas)]


def _error_of(response: pb.Response) -> DynamoError:
    extra = orjson.loads(response.error_body) if response.error_body else None
    return errors.from_code(response.error_code, response.error_message, extra)
