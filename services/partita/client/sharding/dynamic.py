"""Dynamic write sharding: the shard count of each partition key grows with demand.

The seed's mechanism over a boto3 client:
- writers read the key's shard count from the partition-key metadata table (cached for
  a few seconds), write to a random shard, and insert the metadata item (one shard) for
  a key they are the first to write;
- on a throttle they ask the signal whether the partition or the table is the limit;
  for a partition limit, once the cooldown and their random back-off have passed, they
  raise the count with a conditional UpdateItem on `last_updated` and retry the write;
- readers query every shard the key may have used and merge in sort-key order.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from partita.client.sharding.fixed import DEFAULT_WORKERS, split_key
from partita.client.sharding.keys import AttributeValue, Item, random_shard, sharded_key
from partita.client.sharding.metadata import DEFAULT_HISTORY_LIMIT, ShardMetadata
from partita.client.sharding.policy import GrowthPlanner, GrowthPolicy, RetryDelays, Verdict
from partita.client.sharding.reader import DEFAULT_PAGE_SIZE, Page, ShardedReader
from partita.client.sharding.signals import (
    Constraint,
    ConsumedCapacityMeter,
    ThrottleSignal,
    ThrottlingReasonsSignal,
)
from partita.client.sharding.store import CachedMetadata, MetadataStore

# The errors DynamoDB throttles with: PROVISIONED tables answer the first, on-demand
# tables (and control-plane limits) the second.
THROTTLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException"})


class ShardsInUse(RuntimeError):
    """Shards cannot be retired yet: writers may still use them, or they hold items."""


@dataclass
class WriterStats:
    """What this writer did, for logs and tests (counts since creation)."""

    writes: int = 0
    throttles: int = 0
    table_throttles: int = 0  # throttles the signal blamed on the table
    changes: int = 0  # conditional updates of the count this writer won
    lost_races: int = 0  # conditional updates another writer won first
    adopted: int = 0  # growth skipped: a fresh read showed someone else had grown


class DynamicShardedTable:
    """A write-sharded table whose shard counts live in a partition-key metadata table.

    `metadata_table` is keyed by a String attribute (`metadata_key`, by default the main
    table's partition key name, as in the seed). Time (`clock`, epoch seconds), sleeping
    and randomness are injected so tests can drive them.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        metadata_table: str,
        *,
        partition_key: str,
        sort_key: str,
        metadata_key: str | None = None,
        policy: GrowthPolicy | None = None,
        signal: ThrottleSignal | None = None,
        grow_when_unknown: bool = True,
        initial_shards: int = 1,
        cache_ttl: float = 5.0,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        retry: RetryDelays | None = None,
        write_timeout: float = 30.0,
        max_attempts: int = 100,
        meter: ConsumedCapacityMeter | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        max_workers: int = DEFAULT_WORKERS,
    ) -> None:
        if max_attempts < 1 or write_timeout <= 0:
            raise ValueError("max_attempts must be at least 1 and write_timeout positive")
        self.client = client
        self.table_name = table_name
        self.partition_key = partition_key
        self.sort_key = sort_key
        self.policy = policy or GrowthPolicy()
        self.signal: ThrottleSignal = signal or ThrottlingReasonsSignal()
        # With no evidence either way, growing is the seed's default reaction to a
        # throttle; set False where table-level throttling is the common case.
        self.grow_when_unknown = grow_when_unknown
        self.history_limit = history_limit
        self.retry = retry or RetryDelays()
        self.write_timeout = write_timeout
        self.max_attempts = max_attempts
        self.meter = meter
        self.stats = WriterStats()
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._store = MetadataStore(client, metadata_table, metadata_key or partition_key)
        self._cache = CachedMetadata(self._store, clock, initial_shards, cache_ttl)
        self._planner = GrowthPlanner(self.policy)
        self._lock = threading.Lock()  # guards the planner and the stats
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sharded-read")
        self._reader = ShardedReader(client, table_name, partition_key, sort_key, self._executor)

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def __enter__(self) -> DynamicShardedTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writers ---------------------------------------------------------------------

    def put_item(self, item: Item, **kwargs: Any) -> dict[str, Any]:
        """PutItem on a random shard of the item's partition key, growing the count on throttles.

        Gives up after `write_timeout` seconds or `max_attempts` throttled attempts and
        raises the last throttle. Any other error is raised at once.
        """
        partition_key, _ = split_key(item, self.partition_key, self.sort_key)
        if self.meter is not None:
            kwargs = {**kwargs, "ReturnConsumedCapacity": "TOTAL"}
        deadline = self._clock() + self.write_timeout
        throttle: ClientError | None = None
        for attempt in range(self.max_attempts):
            meta = self._cache.get_or_create(partition_key)
            shard = random_shard(meta.number_of_shards, self._rng)
            physical = {**item, self.partition_key: {"S": sharded_key(partition_key, shard)}}
            try:
                out: dict[str, Any] = self.client.put_item(TableName=self.table_name, Item=physical, **kwargs)
            except ClientError as err:
                if _code(err) not in THROTTLE_CODES:
                    raise
                throttle = err
            else:
                self._record(out)
                return out
            wait = self._after_throttle(meta, throttle, attempt)
            if self._clock() + wait >= deadline:
                break
            if wait > 0:
                self._sleep(wait)
        if throttle is None:  # unreachable: max_attempts >= 1 and every attempt was throttled
            raise RuntimeError("no write attempt was made")
        raise throttle

    def _after_throttle(self, meta: ShardMetadata, err: ClientError, attempt: int) -> float:
        """React to one throttle; the seconds to wait before the next attempt."""
        constraint = self.signal.classify(self.table_name, err.response)
        with self._lock:
            self.stats.throttles += 1
            if constraint is Constraint.TABLE or (
                constraint is Constraint.UNKNOWN and not self.grow_when_unknown
            ):
                self.stats.table_throttles += 1
                return self.retry.delay(attempt, self._rng)
            decision = self._planner.on_partition_throttle(meta, self._clock(), self._rng)
        if decision.verdict is Verdict.GROW_NOW:
            self.grow(meta.partition_key, seen=meta)
            return 0.0
        if decision.verdict is Verdict.RETRY_WRITE:
            return min(self.retry.delay(attempt, self._rng), decision.grow_in)
        return self.retry.delay(attempt, self._rng)  # at max_shards: only waiting helps

    def grow(self, partition_key: str, *, seen: ShardMetadata | None = None) -> ShardMetadata:
        """Raise the shard count once, up to max_shards (ignoring cooldown and back-off).

        Reads the item (strongly consistent) and updates it on condition that
        `last_updated` is unchanged. If `seen` is given and the item has moved past it,
        another writer already grew the count: adopt that instead of growing again.
        Losing the conditional update to a rival is not an error either.
        """
        fresh = self._store.read(partition_key) or self._cache.get_or_create(partition_key)
        if seen is not None and fresh.last_updated != seen.last_updated:
            self._cache.put(fresh)
            self._count("adopted")
            return fresh
        count = self.policy.next_count(fresh.number_of_shards)
        if count <= fresh.number_of_shards:  # at max_shards: a change would only restart the cooldown
            self._cache.put(fresh)
            return fresh
        return self._replace(fresh, fresh.changed_to(count, int(self._clock()), self.history_limit))

    def resize(self, partition_key: str, count: int) -> ShardMetadata:
        """Set the shard count (e.g. shrink it when demand fell), recorded in the history.

        Readers keep querying the widest count in the history, since the items written
        to the shards above the new count stay there. Returns the item afterwards, which
        is a rival's if another writer changed it first.
        """
        fresh = self._store.read(partition_key) or self._cache.get_or_create(partition_key)
        return self._replace(fresh, fresh.changed_to(count, int(self._clock()), self.history_limit))

    def retire_shards(self, partition_key: str) -> ShardMetadata:
        """After a shrink, stop reading the shards above the count once they are empty.

        Refused (ShardsInUse) within `cache_ttl` of the last change, while writers may
        still use the wider count they cached, and while any retired shard holds an
        item (delete or expire them first). Returns the item afterwards.
        """
        fresh = self._store.read(partition_key)
        if fresh is None or fresh.read_span == fresh.number_of_shards:
            return fresh or self._cache.get_or_create(partition_key)
        if self._clock() - fresh.last_updated <= self._cache.ttl:
            raise ShardsInUse(f"writers may use the wider count for {self._cache.ttl} s after a change")
        busy = [
            n
            for n in range(fresh.number_of_shards + 1, fresh.read_span + 1)
            if self._holds_items(partition_key, n)
        ]
        if busy:
            raise ShardsInUse(f"shards {busy} of {partition_key!r} still hold items")
        return self._replace(fresh, fresh.retired(int(self._clock())))

    def _holds_items(self, partition_key: str, shard: int) -> bool:
        out = self.client.query(
            TableName=self.table_name,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": self.partition_key},
            ExpressionAttributeValues={":pk": {"S": sharded_key(partition_key, shard)}},
            ConsistentRead=True,
            Limit=1,
        )
        return bool(out.get("Items"))

    def _replace(self, fresh: ShardMetadata, wanted: ShardMetadata) -> ShardMetadata:
        if self._store.replace(fresh, wanted):
            self._cache.put(wanted)
            self._count("changes")
            return wanted
        self._count("lost_races")
        return self._cache.refresh(fresh.partition_key)

    # --- readers ---------------------------------------------------------------------

    def metadata(self, partition_key: str) -> ShardMetadata | None:
        """The key's metadata item as cached (at most `cache_ttl` seconds old)."""
        return self._cache.get(partition_key)

    def query(self, partition_key: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None,
              forward: bool = True, sort_key_condition: str | None = None, **kwargs: Any) -> Page:  # fmt: skip
        """One page of the key's items from every shard it may have used, in sort-key order."""
        return self._reader.query(
            partition_key, self._read_span(partition_key), limit=limit, cursor=cursor, forward=forward,
            sort_key_condition=sort_key_condition, **kwargs,
        )  # fmt: skip

    def query_all(self, partition_key: str, **kwargs: Any) -> Iterator[Item]:
        """Every item of the key in sort-key order, one stream (shards as of its start)."""
        return self._reader.query_all(partition_key, self._read_span(partition_key), **kwargs)

    def get_item(self, partition_key: str, sort_key: AttributeValue, **kwargs: Any) -> Item | None:
        """The item with this key, looked up in every shard concurrently."""
        shards = range(1, self._read_span(partition_key) + 1)

        def get(shard: int) -> Item | None:
            key = {self.partition_key: {"S": sharded_key(partition_key, shard)}, self.sort_key: sort_key}
            found: Item | None = self.client.get_item(TableName=self.table_name, Key=key, **kwargs).get(
                "Item"
            )
            return None if found is None else {**found, self.partition_key: {"S": partition_key}}

        found = [get(1)] if len(shards) == 1 else self._executor.map(get, shards)
        return next((item for item in found if item is not None), None)

    def _read_span(self, partition_key: str) -> int:
        meta = self._cache.get(partition_key)
        return meta.read_span if meta is not None else self._cache.initial_shards

    def _record(self, out: dict[str, Any]) -> None:
        self._count("writes")
        if self.meter is not None:
            units = out.get("ConsumedCapacity", {}).get("CapacityUnits")
            if units is not None:
                self.meter.record(self.table_name, float(units))

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))
