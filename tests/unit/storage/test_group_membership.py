"""Which replication groups a node hosts, and in which role, from the partition objects
(`sync_groups`): serving, joining and log-only members; a node removed from a group that
goes on erases its replica there; single-replica partitions are not touched."""

from __future__ import annotations

from partita._proto import storage_pb2 as pb
from partita.common.partition_map import Partition
from partita.control.model import TableRecord
from partita.storage.data_server import DataPlane
from partita.storage.group_log import group_of
from partita.storage.hosting import desired_hosting
from partita.storage.node import RETIRING_PATIENCE_SECONDS, NodeState, erase_removed, sync_groups
from partita.storage.replication.types import HardState, Role
from tests.unit import records

END = 2**64
GROUP = group_of(1, "p0")


def table(p0: Partition) -> list[TableRecord]:
    single = Partition("p1", END // 2, END, ("d",), "d")
    return [records.table_record(p0, single, name="t1", table_id=1)]


async def test_a_node_named_log_only_member_hosts_the_group_as_a_newcomer_outside_its_membership(
    node_d: NodeState,
) -> None:
    p0 = Partition("p0", 0, END // 2, ("a", "b"), "a", log_replicas=("d",))
    sync_groups(node_d, table(p0))
    assert node_d.replicas is not None and node_d.replicas.hosts(GROUP)
    assert node_d.groups == {GROUP: (1, p0)}
    assert node_d.replicas.log_member_groups == 1
    # It learns its own membership from the leader's log: until then it cannot campaign.
    assert node_d.replicas.members(GROUP) == {"a": Role.FULL, "b": Role.FULL}
    assert group_of(1, "p1") not in node_d.replicas.multi.replicas  # one replica: no group


async def test_a_joining_full_member_hosts_the_group_without_serving_the_partition(node_d: NodeState) -> None:
    p0 = Partition("p0", 0, END // 2, ("a", "b"), "a", joining=("d",))
    sync_groups(node_d, table(p0))
    assert node_d.replicas is not None and node_d.replicas.hosts(GROUP)
    assert node_d.replicas.log_member_groups == 0
    assert node_d.hosted == {}  # routers do not read from it yet (reconcile_hosting serves `replicas`)


async def test_a_node_removed_from_a_group_that_goes_on_stops_hosting_it_and_erases_its_replica(
    node_d: NodeState,
) -> None:
    p0 = Partition("p0", 0, END // 2, ("a", "b"), "a", log_replicas=("d",))
    sync_groups(node_d, table(p0))
    node_d.engine.apply(GROUP, 5, [], term=2)  # a position, as a log member keeps one
    node_d.engine.apply(group_of(1, "p1"), 3, [], term=1)  # the single-replica partition's
    sync_groups(node_d, table(Partition("p0", 0, END // 2, ("a", "b", "c"), "a")))
    assert node_d.replicas is not None and not node_d.replicas.hosts(GROUP)
    await erase_removed(node_d)
    assert node_d.engine.applied_index(GROUP) == 0 and GROUP not in node_d.engine.groups()
    assert node_d.engine.applied_index(group_of(1, "p1")) == 3  # untouched
    # Added back later, it starts as a new member again.
    sync_groups(node_d, table(p0))
    assert node_d.replicas.members(GROUP) == {"a": Role.FULL, "b": Role.FULL}


PARENT = Partition("p0", 0, END // 2, ("a", "b", "d"), "a")
CHILD_GROUP = group_of(1, "p0-0")


async def test_a_group_lowered_to_one_member_stays_a_group_of_one_and_the_removed_member_erases(
    node_d: NodeState,
) -> None:
    """A replication factor lowered to 1 leaves the leader alone in its group: it goes on
    as a group of one (its writes stay in the group's log, so a later raise catches new
    members up from it), and a member the group removed still erases its replica."""
    assert node_d.replicas is not None
    sync_groups(node_d, table(Partition("p0", 0, END // 2, ("d", "a"), "d", replication_factor=2)))
    await node_d.engine.append_entries(GROUP, [], HardState(2, "d", 0))
    alone = Partition("p0", 0, END // 2, ("d",), "d", replication_factor=1)
    sync_groups(node_d, table(alone))
    assert node_d.replicas.hosts(GROUP) and node_d.groups == {GROUP: (1, alone)}
    assert node_d.replicated_group(1, alone) == GROUP
    # The same object seen from a node the group removed: it erases its replica.
    sync_groups(node_d, table(Partition("p0", 0, END // 2, ("a",), "a", replication_factor=1)))
    assert not node_d.replicas.hosts(GROUP)
    await erase_removed(node_d)
    assert GROUP not in node_d.engine.groups()


async def test_a_single_replica_raised_to_a_group_makes_the_data_it_holds_its_logs_base(
    node_d: NodeState,
) -> None:
    """Raised from one replica, a partition's group starts from what the replica holds:
    with no position of its own (a half cut in place from a single-replica parent holds
    its items at position 0) index 1 stands for that data, so new members get a snapshot."""
    assert node_d.replicas is not None
    raised = Partition("p0", 0, END // 2, ("d",), "d", replication_factor=3)
    sync_groups(node_d, table(raised))
    replica = node_d.replicas.multi.replicas[GROUP]
    assert (replica.log.base.index, replica.log.base.term) == (1, 1)
    assert node_d.replicated_group(1, raised) == GROUP


def children(index: int) -> list[TableRecord]:
    left = Partition("p0-0", 0, END // 4, ("a", "b", "d"), "a", parent="p0", parent_index=index)
    right = Partition("p0-1", END // 4, END // 2, ("a", "b", "d"), "a", parent="p0", parent_index=index)
    single = Partition("p1", END // 2, END, ("d",), "d")
    return [records.table_record(left, right, single, name="t1", table_id=1)]


async def test_a_split_child_starts_only_once_this_replica_applied_the_parent_up_to_the_split(
    node_d: NodeState,
) -> None:
    sync_groups(node_d, table(PARENT))
    assert node_d.replicas is not None and node_d.replicas.hosts(GROUP)
    node_d.engine.apply(GROUP, 3, [], term=1)  # behind the SPLIT entry at 5
    sync_groups(node_d, children(5))
    assert node_d.replicas.hosts(GROUP) and not node_d.replicas.hosts(CHILD_GROUP)
    assert node_d.retiring == {GROUP}  # kept running to catch up, neither repaired nor split
    assert node_d.awaits_group(children(5)[0].partitions[0])
    node_d.engine.apply(GROUP, 5, [], term=1)
    sync_groups(node_d, children(5))
    assert node_d.replicas.hosts(CHILD_GROUP) and not node_d.replicas.hosts(GROUP)
    assert node_d.retiring == set()
    # The child's log starts after index 1, which stands for the inherited data.
    assert node_d.engine.applied_position(CHILD_GROUP) == (1, 1)
    assert node_d.replicas.members(CHILD_GROUP) == {n: Role.FULL for n in ("a", "b", "d")}


async def test_a_replica_that_missed_the_split_joins_the_child_as_a_newcomer(node_d: NodeState) -> None:
    # Down through the split: the parent's group is gone and was never applied that far.
    sync_groups(node_d, children(5))
    assert node_d.replicas is not None and node_d.replicas.hosts(CHILD_GROUP)
    # Outside its own membership and with a log at 0: the leader sends it a snapshot.
    assert node_d.replicas.members(CHILD_GROUP) == {"a": Role.FULL, "b": Role.FULL}
    assert node_d.engine.applied_index(CHILD_GROUP) == 0


async def test_a_retiring_parent_with_no_one_left_to_catch_up_from_gives_way_to_newcomer_children(
    node_d: NodeState,
) -> None:
    # Stopped through the split: the other members started the children and dropped the
    # parent's group, so this replica's parent can never reach its SPLIT entry.
    sync_groups(node_d, table(PARENT), now=100.0)
    assert node_d.replicas is not None
    node_d.engine.apply(GROUP, 3, [], term=1)  # behind the SPLIT entry at 5
    sync_groups(node_d, children(5), now=101.0)
    assert node_d.retiring == {GROUP}
    sync_groups(node_d, children(5), now=101.0 + RETIRING_PATIENCE_SECONDS)
    assert node_d.retiring == {GROUP}  # still within its patience
    sync_groups(node_d, children(5), now=101.5 + RETIRING_PATIENCE_SECONDS)
    assert node_d.retiring == set() and node_d.retiring_since == {}
    assert not node_d.replicas.hosts(GROUP) and node_d.replicas.hosts(CHILD_GROUP)
    # Joined as a newcomer (outside its own membership, log at 0): sent a snapshot of
    # the child's range, which replaces its stale copy of the parent's data.
    assert node_d.replicas.members(CHILD_GROUP) == {"a": Role.FULL, "b": Role.FULL}
    assert node_d.engine.applied_index(CHILD_GROUP) == 0


async def test_a_newcomer_to_a_split_child_serves_no_read_before_its_snapshot(node_d: NodeState) -> None:
    # It missed the split: what it holds of the child's range is the parent's, stale.
    tables = children(5)
    sync_groups(node_d, tables)
    node_d.hosted = desired_hosting(tables, "d")
    plane = DataPlane(node_d)
    read = pb.Request(id=9, op=pb.GET, table_id=1, partition_id="p0-0", key_hash=1, key=b"k")
    assert plane.plan(read).response.status == pb.NOT_LEADER
    # Once the snapshot is in (its log past 0), it serves like any other member.
    node_d.engine.apply(CHILD_GROUP, 1, [], term=1)
    assert plane.plan(read).response.status == pb.NOT_FOUND  # served: no item "k"
