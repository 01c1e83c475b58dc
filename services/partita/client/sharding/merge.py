"""Reading one logical partition key from all its shards, in sort-key order, by pages.

`ShardMerge` is the pure core of a sharded Query: it holds, per shard, the items fetched
but not yet returned and where that shard's next Query starts; it says which shards
must be fetched before the next item can be chosen (a shard with nothing buffered may
hold the smallest key), and picks items in merged order. Ties on the sort key (one
timestamp in two shards) go to the lower shard number ascending, the higher one
descending, so a descending read is exactly the reverse of an ascending one.

The cursor records, per shard, the sort key of the last item returned from it, so the
next page resumes every shard with ExclusiveStartKey
exactly where the merged order stopped; items fetched beyond a page are fetched again.
"""

from __future__ import annotations

import base64
import json
from collections import deque
from dataclasses import dataclass, field

from partita.client.sharding.keys import AttributeValue, Item, sort_position

CURSOR_VERSION = 1


@dataclass
class ShardCursor:
    """Where a sharded read stopped: per shard, the last sort key returned (None: none yet).

    A shard that had nothing more is still resumed after its last key, not skipped: an
    item written to it since then belongs to the rest of the read.
    """

    partition_key: str
    forward: bool
    positions: dict[int, AttributeValue | None]

    def encode(self) -> str:
        """An opaque, URL-safe token."""
        shards = {str(n): None if p is None else _encode_value(p) for n, p in sorted(self.positions.items())}
        body = {"v": CURSOR_VERSION, "pk": self.partition_key, "fwd": self.forward, "shards": shards}
        return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()

    @classmethod
    def decode(cls, token: str) -> ShardCursor:
        try:
            body = json.loads(base64.urlsafe_b64decode(token.encode()))
            if body["v"] != CURSOR_VERSION:
                raise ValueError(f"cursor version {body['v']} is not {CURSOR_VERSION}")
            positions: dict[int, AttributeValue | None] = {}
            for shard_text, position in body["shards"].items():
                shard = int(shard_text)
                if shard < 1:
                    raise ValueError(f"shard {shard}")
                positions[shard] = None if position is None else _decode_value(position)
            return cls(str(body["pk"]), bool(body["fwd"]), positions)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"not a sharded-read cursor: {err}") from err


def _encode_value(value: AttributeValue) -> dict[str, str]:
    (kind, raw), *_ = value.items()
    if kind == "B":
        data = bytes(raw) if isinstance(raw, bytes | bytearray) else base64.b64decode(str(raw))
        return {"B": base64.b64encode(data).decode()}
    return {kind: str(raw)}


def _decode_value(encoded: dict[str, str]) -> AttributeValue:
    (kind, raw), *_ = encoded.items()
    if kind == "B":
        return {"B": base64.b64decode(raw)}
    if kind not in ("S", "N"):
        raise ValueError(f"sort keys are S, N or B, got {kind}")
    return {kind: raw}


@dataclass
class _Shard:
    start: AttributeValue | None  # the next Query starts after this sort key (None: the beginning)
    returned: AttributeValue | None  # the cursor's position: the last sort key returned
    exhausted: bool = False  # the last Query had no LastEvaluatedKey
    buffer: deque[Item] = field(default_factory=deque)


class ShardMerge:
    """The merged, paged read of shards 1..span of one partition key."""

    def __init__(self, partition_key: str, sort_key: str, span: int, forward: bool = True,
                 cursor: ShardCursor | None = None) -> None:  # fmt: skip
        if cursor is not None and (cursor.partition_key != partition_key or cursor.forward != forward):
            raise ValueError("the cursor belongs to another partition key or direction")
        self.partition_key = partition_key
        self.sort_key = sort_key
        self.forward = forward
        self._shards: dict[int, _Shard] = {}
        widest_seen = _widest(cursor, forward) if cursor is not None else None
        for shard in range(1, max([span, *(cursor.positions if cursor else [])]) + 1):
            if cursor is not None and shard in cursor.positions:
                start = cursor.positions[shard]
            else:
                # A shard added after the read began: its items before the cursor's
                # furthest key are behind the reader already, so start after that key.
                start = widest_seen
            self._shards[shard] = _Shard(start, start)

    @property
    def width(self) -> int:
        """How many shards this read covers."""
        return len(self._shards)

    def needs(self) -> list[int]:
        """Shards that must be fetched before the next item can be chosen."""
        return [n for n, s in sorted(self._shards.items()) if not s.buffer and not s.exhausted]

    def start_of(self, shard: int) -> AttributeValue | None:
        """Sort key after which the next Query of `shard` starts (None: the beginning)."""
        return self._shards[shard].start

    def feed(self, shard: int, items: list[Item], last_evaluated: AttributeValue | None) -> None:
        """One Query page of `shard`: its items (in the read's direction) and LastEvaluatedKey's sort key."""
        state = self._shards[shard]
        state.buffer.extend(items)
        if last_evaluated is None:
            state.exhausted = True
        else:
            state.start = last_evaluated

    def pop(self) -> Item | None:
        """The next item in merged order; None when finished. Call only when needs() is empty."""
        if self.needs():
            raise RuntimeError("shards must be fetched first")
        candidates = [(n, s) for n, s in self._shards.items() if s.buffer]
        if not candidates:
            return None
        pick = min if self.forward else max
        _, state = pick(candidates, key=lambda c: (sort_position(c[1].buffer[0][self.sort_key]), c[0]))
        item = state.buffer.popleft()
        state.returned = item[self.sort_key]
        return item

    def finished(self) -> bool:
        return all(s.exhausted and not s.buffer for s in self._shards.values())

    def cursor(self) -> ShardCursor:
        """Where the next page starts: after the last item returned from each shard."""
        positions = {shard: state.returned for shard, state in self._shards.items()}
        return ShardCursor(self.partition_key, self.forward, positions)


def _widest(cursor: ShardCursor, forward: bool) -> AttributeValue | None:
    keys = [p for p in cursor.positions.values() if p is not None]
    if not keys:
        return None
    pick = max if forward else min
    return pick(keys, key=sort_position)
