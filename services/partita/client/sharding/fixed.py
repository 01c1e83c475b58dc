"""A table whose partition keys are spread over a fixed number of shards.

The seed's second and third methods: the writer appends `_<shard>` to the partition key,
choosing the shard at random (`Suffix.RANDOM`) or from md5(partition key + sort key)
(`Suffix.COMPUTED`, so single-item reads, updates and deletes touch one shard).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from partita.client.sharding.keys import (
    AttributeValue,
    Item,
    Suffix,
    computed_shard,
    random_shard,
    sharded_key,
)
from partita.client.sharding.reader import DEFAULT_PAGE_SIZE, Page, ShardedReader

DEFAULT_WORKERS = 16


class ShardedTable:
    """A boto3 DynamoDB client's view of one table with write-sharded partition keys.

    The table's partition key must be a String (it holds `<logical key>_<shard>`); items
    go in and come out with the logical key. Works against Partita and DynamoDB alike.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        partition_key: str,
        sort_key: str,
        shards: int,
        suffix: Suffix = Suffix.RANDOM,
        rng: random.Random | None = None,
        max_workers: int = DEFAULT_WORKERS,
    ) -> None:
        if shards < 1:
            raise ValueError("a sharded table has at least one shard per partition key")
        self.client = client
        self.table_name = table_name
        self.partition_key = partition_key
        self.sort_key = sort_key
        self.shards = shards
        self.suffix = suffix
        self._rng = rng or random.Random()
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sharded-read")
        self._reader = ShardedReader(client, table_name, partition_key, sort_key, self._executor)

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def __enter__(self) -> ShardedTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def shard_of(self, partition_key: str, sort_key: AttributeValue) -> int:
        """The shard a new item goes to."""
        if self.suffix is Suffix.COMPUTED:
            return computed_shard(partition_key, sort_key, self.shards)
        return random_shard(self.shards, self._rng)

    def put_item(self, item: Item, **kwargs: Any) -> dict[str, Any]:
        partition_key, sort_key = split_key(item, self.partition_key, self.sort_key)
        shard = self.shard_of(partition_key, sort_key)
        physical = {**item, self.partition_key: {"S": sharded_key(partition_key, shard)}}
        out: dict[str, Any] = self.client.put_item(TableName=self.table_name, Item=physical, **kwargs)
        return out

    def get_item(self, partition_key: str, sort_key: AttributeValue, **kwargs: Any) -> Item | None:
        """The item with this key: one GetItem when computed, one per shard (concurrent) when random."""
        shards = self._candidate_shards(partition_key, sort_key)
        if len(shards) == 1:
            return self._get(partition_key, shards[0], sort_key, kwargs)
        found = self._executor.map(lambda shard: self._get(partition_key, shard, sort_key, kwargs), shards)
        for item in found:
            if item is not None:
                return item
        return None

    def update_item(self, partition_key: str, sort_key: AttributeValue, **kwargs: Any) -> dict[str, Any]:
        """UpdateItem on the item's shard (computed suffix only: a random shard is unknown)."""
        shard = self._computed_only(partition_key, sort_key, "update_item")
        out: dict[str, Any] = self.client.update_item(
            TableName=self.table_name, Key=self._key(partition_key, shard, sort_key), **kwargs
        )
        return out

    def delete_item(self, partition_key: str, sort_key: AttributeValue, **kwargs: Any) -> dict[str, Any]:
        """DeleteItem on the item's shard (computed suffix only: a random shard is unknown)."""
        shard = self._computed_only(partition_key, sort_key, "delete_item")
        out: dict[str, Any] = self.client.delete_item(
            TableName=self.table_name, Key=self._key(partition_key, shard, sort_key), **kwargs
        )
        return out

    def query(self, partition_key: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None,
              forward: bool = True, sort_key_condition: str | None = None, **kwargs: Any) -> Page:  # fmt: skip
        """One page of the partition key's items from all shards, in sort-key order."""
        return self._reader.query(
            partition_key, self.shards, limit=limit, cursor=cursor, forward=forward,
            sort_key_condition=sort_key_condition, **kwargs,
        )  # fmt: skip

    def query_all(self, partition_key: str, **kwargs: Any) -> Iterator[Item]:
        """Every item of the key in sort-key order, one stream (see ShardedReader.query_all)."""
        return self._reader.query_all(partition_key, self.shards, **kwargs)

    def _candidate_shards(self, partition_key: str, sort_key: AttributeValue) -> list[int]:
        if self.suffix is Suffix.COMPUTED:
            return [computed_shard(partition_key, sort_key, self.shards)]
        return list(range(1, self.shards + 1))

    def _computed_only(self, partition_key: str, sort_key: AttributeValue, operation: str) -> int:
        if self.suffix is not Suffix.COMPUTED:
            raise TypeError(
                f"{operation} needs the computed suffix: with random shards the item's shard is unknown"
            )
        return computed_shard(partition_key, sort_key, self.shards)

    def _key(self, partition_key: str, shard: int, sort_key: AttributeValue) -> Item:
        return {self.partition_key: {"S": sharded_key(partition_key, shard)}, self.sort_key: sort_key}

    def _get(
        self, partition_key: str, shard: int, sort_key: AttributeValue, kwargs: dict[str, Any]
    ) -> Item | None:
        out = self.client.get_item(
            TableName=self.table_name, Key=self._key(partition_key, shard, sort_key), **kwargs
        )
        item: Item | None = out.get("Item")
        return None if item is None else {**item, self.partition_key: {"S": partition_key}}


def split_key(item: Item, partition_key: str, sort_key: str) -> tuple[str, AttributeValue]:
    """(logical partition key, sort key value) of an item; the partition key must be a String."""
    try:
        pk_value = item[partition_key]
        sk_value = item[sort_key]
    except KeyError as err:
        raise ValueError(f"the item lacks the key attribute {err.args[0]!r}") from err
    if set(pk_value) != {"S"}:
        raise ValueError(f"a sharded partition key is a String, got {sorted(pk_value)}")
    return str(pk_value["S"]), sk_value
