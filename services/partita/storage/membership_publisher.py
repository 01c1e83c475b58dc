"""Repair on Kubernetes: where a group's leader writes the membership it decided.

In the local cluster the repair driver (`repair_driver.py`) writes partition objects in
the control store, and every node hosts what they name. Under the operator (admin
hosting) the Partition resources are the operator's, so the leader publishes the
group's membership instead: a `PublishedMembership` (admin.proto) under
/partita/membership/<partition>, holding the HostReplica request that gives the new
members. Every storage node follows those records (`follow_memberships`): a node a
record names hosts the replica at once (a member added by repair starts within the
store's watch, not the operator's resync), and one it no longer names erases its copy.
The operator adopts the members into the Partition's spec at its next reconcile.

Only membership is published: a record differing from the held assignment in its
recorded leader alone is not written (every leader's pass would write one otherwise).
And the split of a replicated partition: once the leader has applied the group's SPLIT
entry (`group_split.SplitDriver`), the record carries its cut and index, which the
operator reads to replace the Partition by its children (docs/kubernetes.md, "Splits").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from partita._proto import admin_pb2 as pb
from partita.common.partition_map import Partition
from partita.control.model import PartitionStats
from partita.control.store import WatchedMemberships
from partita.storage.admin_server import AdminHosting, request_of
from partita.storage.assignments import FULL, JOINING, LOG, Assignment
from partita.storage.group_log import group_of
from partita.storage.replication.types import GroupId

log = logging.getLogger(__name__)

# Seconds a follower waits on the store's watch before listing the records anyway.
FOLLOW_TIMEOUT_SECONDS = 5.0
# ... and while a split child waits for its parent's group to reach the split here (as
# the local cluster's control loop does, `node.RETIRING_RESYNC_SECONDS`).
SPLIT_WAIT_SECONDS = 0.5


def with_members(
    held: Assignment, partition: Partition, address_of: Callable[[str], str | None]
) -> Assignment:
    """`held` with the members (and roles) the partition object names, each member's
    replication address the held one or else the one `address_of` knows."""
    roles = [(m, FULL) for m in partition.replicas]
    roles += [(m, JOINING) for m in partition.joining] + [(m, LOG) for m in partition.log_replicas]
    known = dict(held.addresses)
    addresses = []
    for node, _ in roles:
        address = known.get(node) or address_of(node)
        if address:
            addresses.append((node, address))
    return replace(
        held,
        members=tuple(node for node, _ in roles),
        addresses=tuple(addresses),
        roles=tuple((node, role) for node, role in roles if role != FULL),
    )


class MembershipPublisher:
    """The repair driver's `PartitionWriter` under the operator: publishes what the
    leader decided, then adopts it on this node."""

    def __init__(
        self,
        store: WatchedMemberships,
        hosting: AdminHosting,
        zones: Callable[[], Mapping[str, str]],
        address_of: Callable[[str], str | None],
        term_of: Callable[[GroupId], int],
    ) -> None:
        self.store = store
        self.hosting = hosting
        self.zones = zones
        self.address_of = address_of
        self.term_of = term_of

    async def change_partitions(
        self,
        table_id: int,
        put: Sequence[Partition],
        remove: Sequence[str],
        stats: Sequence[tuple[str, PartitionStats]] = (),
    ) -> None:
        if remove:
            # Under the operator a split's children replace their parent by the operator's
            # hand (the leader publishes the SPLIT entry's index, below).
            raise NotImplementedError("partitions are not removed by a leader under the operator")
        for partition in put:
            held = self.hosting.book.assignments.get(partition.partition_id)
            if held is None:
                continue
            wanted = with_members(held, partition, self.address_of)
            if partition.split_index:
                await self._publish(table_id, wanted, partition.split_at, partition.split_index)
                log.info(
                    "published the split of %s at %#x, index %d",
                    partition.partition_id,
                    partition.split_at,
                    partition.split_index,
                )
                continue
            if held.membership() == wanted.membership():
                continue
            await self._publish(table_id, wanted)
            log.info(
                "published the membership of %s: %s",
                partition.partition_id,
                ", ".join(f"{m} {wanted.role_of(m)}" for m in wanted.members),
            )
            self.hosting.adopt(wanted)

    async def _publish(
        self, table_id: int, wanted: Assignment, split_at: int = 0, split_index: int = 0
    ) -> None:
        record = pb.PublishedMembership(
            term=self.term_of(group_of(table_id, wanted.partition)),
            leader=self.hosting.state.node_id,
            assignment=request_of(wanted, self.zones()),
            split_at=split_at,
            split_index=split_index,
        )
        await self.store.put_membership(wanted.partition, record.SerializeToString())


async def follow_memberships(hosting: AdminHosting, store: WatchedMemberships) -> None:
    """Apply the published memberships whenever the store changes (and at least every
    FOLLOW_TIMEOUT_SECONDS), take the operator's latest placements of every table (for
    the shard bound of repair), and start the split children waiting for their parents."""
    while True:
        try:
            await hosting.apply_published(await store.list_memberships())
            hosting.state.published_placements = await store.get_placements()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store is down: the held assignments stand
            log.warning("published memberships unavailable: %s", exc)
        hosting.start_waiting_children()
        await store.wait_for_change(SPLIT_WAIT_SECONDS if hosting.state.retiring else FOLLOW_TIMEOUT_SECONDS)
