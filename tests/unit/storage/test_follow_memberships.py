"""A storage pod hosting by assignment takes the placements the operator published as it
follows the published memberships (the shard bound of its repair counts them)."""

from __future__ import annotations

import asyncio
from typing import Any

from partita.control.store import MemoryControlStore
from partita.storage.membership_publisher import follow_memberships
from partita.storage.node import NodeState


class _Hosting:
    """What the follower uses of AdminHosting: the node's state and the two callbacks."""

    def __init__(self) -> None:
        self.state = NodeState("pt-storage-a-0", "a", engine=None)  # type: ignore[arg-type]
        self.applied: list[dict[str, bytes]] = []

    async def apply_published(self, records: dict[str, bytes]) -> None:
        self.applied.append(records)

    def start_waiting_children(self) -> None:
        pass


async def test_the_published_placements_reach_the_nodes_state_and_follow_changes() -> None:
    store = MemoryControlStore()
    hosting = _Hosting()
    first = {7: (frozenset({"pt-storage-a-0", "pt-storage-b-0", "pt-storage-c-0"}),)}
    await store.put_placements(first)
    following = asyncio.create_task(follow_memberships(hosting, store))  # type: ignore[arg-type]

    async def holds(expected: Any) -> None:
        async with asyncio.timeout(5):
            while hosting.state.published_placements != expected:
                await asyncio.sleep(0.01)

    try:
        await holds(first)
        later = {**first, 8: (frozenset({"pt-storage-a-1", "pt-storage-b-0", "pt-storage-c-0"}),)}
        await store.put_placements(later)
        await holds(later)
        assert hosting.applied  # the memberships were followed too
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
