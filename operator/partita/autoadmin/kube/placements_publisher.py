"""Publishing every table's placement for the storage pods (Kubernetes).

When a group's leader must put a new member outside its table's shard (repair, drains,
moves), it takes the free node that exposes the fewest other tables' partitions past the
shuffle-shard bound (`common/shard_bound.py`). A storage pod reads only the tables the
operator assigned to it, so the operator publishes every table's replica sets in the
control store (one key, `control/store.py` PLACEMENTS), and the pods read them as they
follow the published memberships. Level-based: each pass lists every Table and
Partition and writes the whole placement only when it differs from the last written, so
a missed event or an operator restart leaves nothing stale for longer than a pass.

Started by the Partition handler, like the membership watch, and alive while the
operator runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from partita.autoadmin.kube.background import PassesInBackground
from partita.control.store import Memberships, Placements, encode_placements

log = logging.getLogger(__name__)

# Seconds between passes. A placement changes when a table is created, split or dropped
# and when repair or migration moves a member; the bound is a preference of those
# choices, so a placement a few seconds old is good enough.
PUBLISH_SECONDS = 10.0


class PlacementsPublisher(PassesInBackground):
    doing = "publishing the tables' placements"

    def __init__(
        self,
        store: Memberships,
        list_placements: Callable[[], Awaitable[Placements]],
        interval: float = PUBLISH_SECONDS,
    ) -> None:
        self.store = store
        self.list_placements = list_placements
        self.interval = interval
        self._written: bytes | None = None
        self.published = 0  # writes (tests wait on it)

    async def wait(self) -> None:
        await asyncio.sleep(self.interval)

    async def pass_once(self) -> bool:
        """List and publish the placements if they changed; whether they were written."""
        placements = await self.list_placements()
        encoded = encode_placements(placements)
        if encoded == self._written:
            return False
        await self.store.put_placements(placements)
        self._written = encoded
        self.published += 1
        log.info("placements of %d tables published", len(placements))
        return True
