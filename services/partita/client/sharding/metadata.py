"""The partition-key metadata item of the seed, and its pure transitions.

One item per logical partition key, in a separate table keyed by that partition key:

    file_path               number_of_shards  last_updated  shard_history
    /shared/firetvGen2.txt  2                 1562858912    {"1561758912:1", "1562858912:2"}

`last_updated` (epoch seconds) drives the cooldown and is the optimistic lock: every
change is a conditional UpdateItem on the value the writer read. `shard_history` is a
String Set of "epoch:count" entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from partita.client.sharding.keys import AttributeValue, Item

NUMBER_OF_SHARDS = "number_of_shards"
LAST_UPDATED = "last_updated"
SHARD_HISTORY = "shard_history"

# Entries kept in shard_history. The seed keeps "a reasonable number of" updates; this
# bounds the item's size while leaving room to see whether growth is too fast or slow.
DEFAULT_HISTORY_LIMIT = 20


@dataclass(frozen=True, order=True)
class HistoryEntry:
    """One change of the shard count: at `epoch` the count became `count`."""

    epoch: int
    count: int

    def __str__(self) -> str:
        return f"{self.epoch}:{self.count}"

    @classmethod
    def parse(cls, text: str) -> HistoryEntry:
        epoch, sep, count = text.partition(":")
        if not sep or not epoch.isdigit() or not count.isdigit() or int(count) < 1:
            raise ValueError(f"shard_history entries are 'epoch:count', got {text!r}")
        return cls(int(epoch), int(count))


@dataclass(frozen=True)
class ShardMetadata:
    """What readers and writers know about one logical partition key."""

    partition_key: str
    number_of_shards: int
    last_updated: int
    history: tuple[HistoryEntry, ...]  # oldest first

    @property
    def read_span(self) -> int:
        """How many shards a reader must query: the most any writer may have used.

        After a shrink, writers use fewer shards but items stay where they were written,
        so readers keep covering the largest count still in the history.
        """
        return max([self.number_of_shards, *(entry.count for entry in self.history)])

    def changed_to(self, count: int, now: int, history_limit: int = DEFAULT_HISTORY_LIMIT) -> ShardMetadata:
        """The item after the shard count becomes `count` at time `now`.

        `last_updated` strictly increases even when two changes fall in one second, so the
        optimistic lock on it can never mistake a newer item for the one a writer read.
        """
        if count < 1:
            raise ValueError(f"a partition key has at least one shard, got {count}")
        epoch = max(now, self.last_updated + 1)
        history = pruned((*self.history, HistoryEntry(epoch, count)), history_limit)
        return ShardMetadata(self.partition_key, count, epoch, history)

    def retired(self, now: int) -> ShardMetadata:
        """The item once the shards above the current count are known to be empty.

        Drops the history entries wider than the current count (so `read_span` falls to
        it) and records the retirement as a change of the count to itself.
        """
        epoch = max(now, self.last_updated + 1)
        kept = tuple(entry for entry in self.history if entry.count <= self.number_of_shards)
        return ShardMetadata(self.partition_key, self.number_of_shards, epoch,
                             (*kept, HistoryEntry(epoch, self.number_of_shards)))  # fmt: skip


def new_metadata(partition_key: str, count: int, now: int) -> ShardMetadata:
    """The item a writer inserts for a partition key it is the first to see."""
    if count < 1:
        raise ValueError(f"a partition key has at least one shard, got {count}")
    return ShardMetadata(partition_key, count, now, (HistoryEntry(now, count),))


def pruned(history: tuple[HistoryEntry, ...], limit: int) -> tuple[HistoryEntry, ...]:
    """The newest `limit` entries, always keeping the entry with the largest count.

    The largest count decides how many shards readers query (`read_span`); dropping it
    would hide items still stored in the shards above the current count.
    """
    if limit < 2:
        raise ValueError("shard_history keeps at least two entries")
    ordered = tuple(sorted(history))
    if len(ordered) <= limit:
        return ordered
    widest = max(ordered, key=lambda entry: (entry.count, entry.epoch))
    newest = ordered[-limit:]
    if widest in newest:
        return newest
    return (widest, *ordered[-(limit - 1) :])


def to_item(meta: ShardMetadata, key_name: str) -> Item:
    return {
        key_name: {"S": meta.partition_key},
        NUMBER_OF_SHARDS: {"N": str(meta.number_of_shards)},
        LAST_UPDATED: {"N": str(meta.last_updated)},
        SHARD_HISTORY: {"SS": [str(entry) for entry in meta.history]},
    }


def from_item(item: Item, key_name: str) -> ShardMetadata:
    """Parse a metadata item; a malformed one is an error, never a guess."""
    try:
        partition_key = _text(item[key_name], "S")
        count = int(_text(item[NUMBER_OF_SHARDS], "N"))
        last_updated = int(_text(item[LAST_UPDATED], "N"))
        raw_history = item.get(SHARD_HISTORY, {"SS": []}).get("SS")
    except (KeyError, ValueError) as err:
        raise ValueError(f"malformed shard metadata item {item!r}: {err}") from err
    if not isinstance(raw_history, list):
        raise ValueError(f"{SHARD_HISTORY} must be a String Set, got {item.get(SHARD_HISTORY)!r}")
    if count < 1:
        raise ValueError(f"{NUMBER_OF_SHARDS} must be at least 1, got {count}")
    history = tuple(sorted(HistoryEntry.parse(str(text)) for text in raw_history))
    return ShardMetadata(partition_key, count, last_updated, history)


def _text(value: AttributeValue, kind: str) -> str:
    if kind not in value:
        raise ValueError(f"expected type {kind}, got {sorted(value)}")
    return str(value[kind])
