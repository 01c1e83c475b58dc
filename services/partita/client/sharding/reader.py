"""Queries every shard of a logical partition key concurrently and merges the results.

boto3 is a blocking client, so shards are queried from a small thread pool (a boto3
client is safe to share between threads); the order, paging and cursor logic is the
pure `ShardMerge`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from partita.client.sharding.keys import AttributeValue, Item, sharded_key
from partita.client.sharding.merge import ShardCursor, ShardMerge

DEFAULT_PAGE_SIZE = 100
# Query rounds (one Query per shard that ran dry) before a page is returned early. A
# FilterExpression can make many rounds return nothing; the cursor stays exact, so a
# short page loses nothing and bounds the time one call takes.
MAX_ROUNDS_PER_PAGE = 200
# Query parameters the sharded read sets itself.
_RESERVED = frozenset(
    {"TableName", "KeyConditionExpression", "ExclusiveStartKey", "Limit", "ScanIndexForward", "Select",
     "KeyConditions", "IndexName"}
)  # fmt: skip


def fetch_limit(remaining: int, width: int, previous: int | None) -> int:
    """The Limit of one shard's next Query while `remaining` items are still wanted.

    DynamoDB charges a Query for every item it reads, so asking each of `width` shards for
    the whole page would read up to `width` times what the page returns. A shard's first
    Query asks for its even share (plus one, and a quarter more for unevenness); each
    refill within the page doubles, so a shard holding most of the page (the only shard
    before the count grew) needs a few rounds, not one per share.
    """
    share = -(-remaining * 5 // (4 * max(1, width))) + 1
    wanted = share if previous is None else max(share, 2 * previous)
    return max(1, min(remaining, wanted))


def _check_kwargs(query_kwargs: Mapping[str, Any]) -> None:
    reserved = _RESERVED & set(query_kwargs)
    if reserved:
        raise ValueError(f"the sharded read sets {sorted(reserved)} itself")


@dataclass(frozen=True)
class Page:
    """Items in sort-key order (partition key shown as the logical key) and the next cursor."""

    items: list[Item]
    cursor: str | None  # None: nothing more to read


@dataclass
class ShardedReader:
    client: Any  # boto3 DynamoDB client
    table_name: str
    partition_key_name: str
    sort_key_name: str
    executor: Executor

    def query(
        self,
        partition_key: str,
        span: int,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        forward: bool = True,
        sort_key_condition: str | None = None,
        **query_kwargs: Any,
    ) -> Page:
        """One page of at most `limit` items of shards 1..span, merged in sort-key order.

        `sort_key_condition` is the sort-key half of a KeyConditionExpression (e.g.
        "#ts BETWEEN :a AND :b", with its names and values in the usual
        ExpressionAttributeNames/Values); FilterExpression, ProjectionExpression (which
        must keep the sort key) and ConsistentRead pass through to every shard's Query.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        _check_kwargs(query_kwargs)
        previous = ShardCursor.decode(cursor) if cursor is not None else None
        merge = ShardMerge(partition_key, self.sort_key_name, span, forward, previous)
        items: list[Item] = []
        stream = self._merged(
            merge, lambda: limit - len(items), MAX_ROUNDS_PER_PAGE, sort_key_condition, query_kwargs
        )
        for item in stream:
            items.append(item)
            if len(items) >= limit:
                break
        return Page(items, None if merge.finished() else merge.cursor().encode())

    def query_all(
        self,
        partition_key: str,
        span: int,
        *,
        page: int = DEFAULT_PAGE_SIZE,
        forward: bool = True,
        sort_key_condition: str | None = None,
        **query_kwargs: Any,
    ) -> Iterator[Item]:
        """Every item of shards 1..span in sort-key order, as one stream.

        Unlike following cursors, no item is read twice: the merge stays open, and each
        shard is asked for about `page` items at a time.
        """
        if page < 1:
            raise ValueError("page must be at least 1")
        _check_kwargs(query_kwargs)
        merge = ShardMerge(partition_key, self.sort_key_name, span, forward)
        yield from self._merged(merge, lambda: page, None, sort_key_condition, query_kwargs)

    def _merged(
        self,
        merge: ShardMerge,
        wanted: Callable[[], int],
        max_rounds: int | None,
        sort_key_condition: str | None,
        query_kwargs: Mapping[str, Any],
    ) -> Iterator[Item]:
        """Items in merged order, querying the shards that ran dry as the merge needs them.

        Every round advances each queried shard (or finds its end), so the rounds are
        bounded by the data; `max_rounds` also bounds them for one page (see
        MAX_ROUNDS_PER_PAGE).
        """
        sizes: dict[int, int] = {}  # per shard, the Limit of its last Query

        def fetch(shard: int) -> tuple[list[Item], AttributeValue | None]:
            return self._query_shard(
                merge.partition_key, shard, merge.start_of(shard), sizes[shard], merge.forward,
                sort_key_condition, query_kwargs,
            )  # fmt: skip

        rounds = 0
        while True:
            needed = merge.needs()
            if needed:
                if max_rounds is not None and rounds >= max_rounds:
                    return
                rounds += 1
                for shard in needed:
                    sizes[shard] = fetch_limit(wanted(), merge.width, sizes.get(shard))
                # One shard has no fan-out to wait for: skip the pool's hand-off.
                pages = [fetch(needed[0])] if len(needed) == 1 else list(self.executor.map(fetch, needed))
                for shard, (shard_items, last) in zip(needed, pages, strict=True):
                    merge.feed(shard, shard_items, last)
                continue
            item = merge.pop()
            if item is None:
                return
            yield {**item, self.partition_key_name: {"S": merge.partition_key}}

    def _query_shard(
        self,
        partition_key: str,
        shard: int,
        start: AttributeValue | None,
        limit: int,
        forward: bool,
        sort_key_condition: str | None,
        query_kwargs: Mapping[str, Any],
    ) -> tuple[list[Item], AttributeValue | None]:
        physical = sharded_key(partition_key, shard)
        names = {**query_kwargs.get("ExpressionAttributeNames", {}), "#shard_pk": self.partition_key_name}
        values = {**query_kwargs.get("ExpressionAttributeValues", {}), ":shard_pk": {"S": physical}}
        condition = "#shard_pk = :shard_pk"
        if sort_key_condition:
            condition += f" AND {sort_key_condition}"
        request: dict[str, Any] = {
            **query_kwargs,
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": forward,
            "Limit": limit,
        }
        if start is not None:
            request["ExclusiveStartKey"] = {
                self.partition_key_name: {"S": physical},
                self.sort_key_name: start,
            }
        out = self.client.query(**request)
        items: list[Item] = out.get("Items", [])
        for item in items:
            if self.sort_key_name not in item:
                raise ValueError(f"a sharded read needs the sort key {self.sort_key_name!r} in every item")
        last = out.get("LastEvaluatedKey")
        return items, None if last is None else last[self.sort_key_name]
