"""The partition-key metadata table over a boto3 client, with a short-lived cache.

Writes to the metadata item are conditional: creation on `attribute_not_exists`, every
change on `last_updated` still being the value the writer read (the seed's optimistic
lock). A lost race is not an error: the caller re-reads and adopts the winner's count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from partita.client.sharding.metadata import (
    LAST_UPDATED,
    NUMBER_OF_SHARDS,
    SHARD_HISTORY,
    ShardMetadata,
    from_item,
    new_metadata,
    to_item,
)

CONDITION_FAILED = "ConditionalCheckFailedException"


@dataclass
class MetadataStore:
    """Reads and conditionally writes the metadata items of one metadata table."""

    client: Any  # boto3 DynamoDB client
    table_name: str
    key_name: str  # the metadata table's partition key (the main table's, in the seed)

    def read(self, partition_key: str) -> ShardMetadata | None:
        """The item as it is now (a strongly consistent read), or None."""
        out = self.client.get_item(
            TableName=self.table_name, Key={self.key_name: {"S": partition_key}}, ConsistentRead=True
        )
        item = out.get("Item")
        return None if item is None else from_item(item, self.key_name)

    def create(self, partition_key: str, count: int, now: int) -> ShardMetadata:
        """Insert the first item for a partition key, or return the one a rival inserted."""
        meta = new_metadata(partition_key, count, now)
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=to_item(meta, self.key_name),
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": self.key_name},
            )
            return meta
        except ClientError as err:
            if _code(err) != CONDITION_FAILED:
                raise
        current = self.read(partition_key)
        if current is None:  # created and deleted in between: rare enough to refuse
            raise RuntimeError(f"shard metadata of {partition_key!r} vanished while being created")
        return current

    def replace(self, seen: ShardMetadata, wanted: ShardMetadata) -> bool:
        """Write `wanted` if the item still has `seen`'s last_updated; False if it moved on.

        The whole history is written (not ADDed): the condition guarantees `seen` was
        current, so `wanted`, computed from it, loses nothing.
        """
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key={self.key_name: {"S": seen.partition_key}},
                UpdateExpression="SET #n = :n, #t = :t, #h = :h",
                ConditionExpression="#t = :seen",
                ExpressionAttributeNames={"#n": NUMBER_OF_SHARDS, "#t": LAST_UPDATED, "#h": SHARD_HISTORY},
                ExpressionAttributeValues={
                    ":n": {"N": str(wanted.number_of_shards)},
                    ":t": {"N": str(wanted.last_updated)},
                    ":h": {"SS": [str(entry) for entry in wanted.history]},
                    ":seen": {"N": str(seen.last_updated)},
                },
            )
            return True
        except ClientError as err:
            if _code(err) == CONDITION_FAILED:
                return False
            raise


@dataclass
class CachedMetadata:
    """Metadata items cached for `ttl` seconds, so writers do not read the item per write.

    A stale count only costs a little: writers spread over fewer shards than exist for
    up to `ttl` seconds, and readers see the new shards' items after at most `ttl`
    seconds. Shared by the threads of one sharded table, hence the lock.
    """

    store: MetadataStore
    clock: Callable[[], float]
    initial_shards: int = 1
    ttl: float = 5.0
    _items: dict[str, tuple[float, ShardMetadata]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, partition_key: str) -> ShardMetadata | None:
        """The key's item, from the cache while it is younger than `ttl`; None if it has none."""
        now = self.clock()
        with self._lock:
            cached = self._items.get(partition_key)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        meta = self.store.read(partition_key)
        if meta is not None:
            self.put(meta)
        return meta

    def get_or_create(self, partition_key: str) -> ShardMetadata:
        """The key's item; a key seen for the first time gets one with `initial_shards`."""
        meta = self.get(partition_key)
        if meta is None:
            meta = self.store.create(partition_key, self.initial_shards, int(self.clock()))
            self.put(meta)
        return meta

    def refresh(self, partition_key: str) -> ShardMetadata:
        """The item as stored now (it exists: the caller saw it)."""
        with self._lock:
            self._items.pop(partition_key, None)
        return self.get_or_create(partition_key)

    def put(self, meta: ShardMetadata) -> None:
        """Adopt `meta` unless the cache already holds a newer version."""
        now = self.clock()
        with self._lock:
            cached = self._items.get(meta.partition_key)
            if cached is None or cached[1].last_updated <= meta.last_updated:
                self._items[meta.partition_key] = (now, meta)


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))
