"""Splits a replicated partition at a log index (CockroachDB's split trigger, TiKV's
BatchSplit; docs/replication.md, "Splits").

The autoadmin never replaces a replicated parent directly: it marks the partition object
with the cut it wants (`Partition.split_at`). The group's leader then stops taking writes
for it and proposes one SPLIT entry into the parent's log. Every replica applies the
parent's writes, then the SPLIT entry, at the same index, so at that index every
replica's data for the parent's range is the same. Once the leader has applied the
entry it records the index in the partition object (`split_index`); the autoadmin then
replaces the parent by its children, which name the parent and that index, and a member
creates a child's group only once it has applied the parent that far (`node.sync_groups`).

The SPLIT entry is a NORMAL entry whose payload no write can produce (a leading zero
byte: effect records start with their kind, 1 to 4). Every replica that applies it seals
the group (`ReplicaHost.split_entry`): a leader elected after it has applied it before it
plans any write (`ready_to_plan`), so no write lands in the parent's log after the split
even if that leader has not yet seen the mark in the control store.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from partita.common.partition_map import Partition
from partita.control.model import PartitionStats
from partita.storage.replication.types import GroupId

if TYPE_CHECKING:
    from partita.storage.replica_host import ReplicaHost

log = logging.getLogger(__name__)

_SPLIT = struct.Struct(">B5sQQ")  # 0, b"SPLIT", the cut's hash as two 64-bit halves
_MAGIC = b"SPLIT"


def encode_split(at: int) -> bytes:
    """The SPLIT entry's payload for a cut at key hash `at` (0 < at < 2**64)."""
    return _SPLIT.pack(0, _MAGIC, at >> 64, at & ((1 << 64) - 1))


def decode_split(data: bytes) -> int | None:
    """The cut of a SPLIT entry's payload; None for any other entry (a write)."""
    if len(data) != _SPLIT.size or data[0] != 0:
        return None
    _zero, magic, high, low = _SPLIT.unpack(data)
    return (high << 64) | low if magic == _MAGIC else None


def published(partition: Partition, at: int, index: int) -> Partition:
    """The parent's object once its SPLIT entry (cut at `at`) is applied at `index`."""
    return replace(partition, split_at=at, split_index=index)


class PartitionWriter(Protocol):
    async def change_partitions(
        self,
        table_id: int,
        put: Sequence[Partition],
        remove: Sequence[str],
        stats: Sequence[tuple[str, PartitionStats]] = (),
    ) -> None: ...


class SplitDriver:
    """On the groups this node leads: propose the SPLIT entry of a partition marked for
    a split, and publish its index once applied here. Run by the repair loop's pass
    (`repair_driver.py`) on the groups it leads instead of repairing them."""

    def __init__(self, replicas: ReplicaHost, store: PartitionWriter) -> None:
        self.replicas = replicas
        self.store = store
        self._proposing: dict[GroupId, asyncio.Task[None]] = {}
        self._published: dict[GroupId, tuple[int, int]] = {}
        self.splits_proposed = 0

    async def drive(self, group: GroupId, table_id: int, partition: Partition) -> None:
        """One step on a group this node leads whose partition is marked or sealed."""
        if partition.split_index:
            return  # published: the autoadmin replaces the parent by its children
        applied = self.replicas.split_entry(group)
        if applied is not None:
            # Once only: a parent's object written again after the autoadmin removed it
            # (a stale view here) would bring the parent back.
            if self._published.get(group) != applied:
                at, index = applied
                await self.store.change_partitions(table_id, [published(partition, at, index)], [])
                self._published[group] = applied
                log.info("group %s: split at %#x committed at index %d", group, at, index)
            return
        running = self._proposing.get(group)
        if partition.split_at and (running is None or running.done()):
            self._proposing[group] = asyncio.get_running_loop().create_task(
                self._propose(group, partition.split_at)
            )

    async def _propose(self, group: GroupId, at: int) -> None:
        try:
            await self.replicas.propose_split(group, at)
            self.splits_proposed += 1
        except Exception as exc:  # superseded, or leadership lost: the next pass retries
            log.info("group %s: SPLIT entry not committed: %r", group, exc)
