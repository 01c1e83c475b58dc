"""Write sharding for hot partition keys, over boto3 (Partita or DynamoDB alike).

- `ShardedTable`: a fixed shard count per partition key, random or computed suffix;
- `DynamicShardedTable`: shard counts kept in a partition-key metadata table and raised
  when writes hit a partition's limit (cooldown, random back-off, optimistic locking);
- readers of both query every shard concurrently and merge in sort-key order, with an
  opaque cursor across pages.

See docs/sharding.md.
"""

from partita.client.sharding.dynamic import DynamicShardedTable, ShardsInUse, WriterStats
from partita.client.sharding.fixed import ShardedTable
from partita.client.sharding.keys import Suffix, computed_shard, sharded_key
from partita.client.sharding.metadata import HistoryEntry, ShardMetadata
from partita.client.sharding.policy import GrowthPolicy, RetryDelays
from partita.client.sharding.reader import Page
from partita.client.sharding.signals import (
    Constraint,
    ConsumedCapacityMeter,
    FirstKnown,
    NullSignal,
    ProvisionedCapacitySignal,
    ThrottleSignal,
    ThrottlingReasonsSignal,
)

__all__ = [
    "Constraint",
    "ConsumedCapacityMeter",
    "DynamicShardedTable",
    "FirstKnown",
    "GrowthPolicy",
    "HistoryEntry",
    "NullSignal",
    "Page",
    "ProvisionedCapacitySignal",
    "RetryDelays",
    "ShardMetadata",
    "ShardedTable",
    "ShardsInUse",
    "Suffix",
    "ThrottleSignal",
    "ThrottlingReasonsSignal",
    "WriterStats",
    "computed_shard",
    "sharded_key",
]
