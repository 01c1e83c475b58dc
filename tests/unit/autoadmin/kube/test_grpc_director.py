"""`GrpcReplicaDirector` against real storage node processes (admin hosting mode, real
etcd, gRPC on 127.0.0.1; node names resolved to their ports): members asked to host a
replica report it, a killed member is reported as asked but unconfirmed, a restarted
one still hosts what it was given, and a drop is done only once every member dropped."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import orjson
import pytest

from partita._proto import admin_pb2 as pb
from partita._proto import admin_pb2_grpc as pb_grpc
from partita.autoadmin.kube.decisions import Member
from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.grpc_director import (
    GrpcReplicaDirector,
    fleet_replication_resolver,
    host_request,
    summarize,
)
from partita.autoadmin.kube.replicas import PartitionRef
from partita.control.model import PointInTimeRecovery
from tests.unit.autoadmin.kube.storage_nodes import StorageNode, storage_nodes
from tests.unit.control.conftest import Etcd, etcd, table  # noqa: F401 (the etcd fixture)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def fleet(tmp_path: Path, etcd: Etcd) -> AsyncIterator[list[StorageNode]]:  # noqa: F811
    with storage_nodes(tmp_path, etcd.port) as nodes:
        for n in nodes:
            await n.wait_serving()
        yield nodes


@pytest.fixture
async def director(fleet: list[StorageNode]) -> AsyncIterator[GrpcReplicaDirector]:
    addresses = {n.node_id: n.address for n in fleet}
    d = GrpcReplicaDirector(addresses.get, timeout=2.0)
    yield d
    await d.close()


def ref(name: str = "orders-0000000000000000") -> PartitionRef:
    return PartitionRef("db", name, "orders", 0, (1 << 64) - 1, table_spec=table("Orders", 7))


def members(fleet: list[StorageNode]) -> list[Member]:
    return [Member(n.node_id, n.zone) for n in fleet]


async def reported(node: StorageNode, partition: str) -> str:
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = pb_grpc.StorageAdminStub(channel)  # type: ignore[no-untyped-call]
        answer = await stub.Report(pb.ReportRequest(partitions=[partition]), timeout=5)
        return str(answer.replicas[0].state)


async def test_every_member_hosts_the_replica_and_the_placements_first_member_leads(
    fleet: list[StorageNode], director: GrpcReplicaDirector
) -> None:
    report = await director.host(ref(), members(fleet))
    again = await director.host(ref(), members(fleet))

    assert report == again
    assert {node: r.state for node, r in report.replicas.items()} == {n.node_id: "Serving" for n in fleet}
    assert report.leader == fleet[0].node_id
    for n in fleet:
        assert await reported(n, ref().name) == "Hosted"


async def test_a_node_outside_the_fleet_is_failed_and_nothing_is_asked_without_the_table(
    fleet: list[StorageNode], director: GrpcReplicaDirector
) -> None:
    stranger = [*members(fleet), Member("pt-storage-z-9", "z")]
    report = await director.host(ref(), stranger)
    assert report.replicas["pt-storage-z-9"].state == "Failed"
    assert await director.drop(ref(), stranger)  # its volume went with it

    bare = PartitionRef("db", "orphan-0", "gone", 0, 10)
    report = await director.host(bare, members(fleet))
    assert {r.state for r in report.replicas.values()} == {"Requested"}
    assert await reported(fleet[0], "orphan-0") == "Unknown"


async def test_a_killed_member_is_requested_and_a_restarted_one_still_hosts(
    fleet: list[StorageNode], director: GrpcReplicaDirector
) -> None:
    await director.host(ref(), members(fleet))
    fleet[1].kill()

    report = await director.host(ref(), members(fleet))
    assert report.replicas[fleet[1].node_id].state == "Requested"
    assert report.replicas[fleet[0].node_id].state == "Serving"

    fleet[1].start()
    await fleet[1].wait_serving()
    # Before anyone asks again: the assignment was kept on its disk.
    assert await reported(fleet[1], ref().name) == "Hosted"


async def test_a_drop_is_done_only_once_every_member_dropped(
    fleet: list[StorageNode], director: GrpcReplicaDirector
) -> None:
    await director.host(ref(), members(fleet))
    fleet[2].kill()
    assert not await director.drop(ref(), members(fleet))
    assert await reported(fleet[0], ref().name) == "Unknown"

    fleet[2].start()
    await fleet[2].wait_serving()
    assert await director.drop(ref(), members(fleet))
    assert await director.drop(ref(), members(fleet))  # idempotent
    for n in fleet:
        assert await reported(n, ref().name) == "Unknown"


def _report(leader: str = "", lag: int = 0, state: str = "Hosted", items: int = 0) -> pb.ReplicaReport:
    return pb.ReplicaReport(partition="p", state=state, leader=leader, lag=lag, item_count=items)


@pytest.mark.parametrize(
    ("reports", "failed", "states", "leader", "items"),
    [
        # every member names the same leader; figures are the leader's own count
        ({"a": _report("a", items=7), "b": _report("a"), "c": _report("a")}, set(), "SSS", "a", 7),
        # the member that claims leadership wins over what stale followers name
        ({"a": _report("b"), "b": _report("b", items=3), "c": _report("a")}, set(), "SSS", "b", 3),
        # electing (no leader known) or far behind: catching up; no answer: requested
        ({"a": _report(""), "b": _report("b", lag=500), "c": None}, set(), "CCR", "b", 0),
        # a few entries behind (applying a round under writes): serving
        ({"a": _report("a"), "b": _report("a", lag=4)}, set(), "SS", "a", 0),
        # not a pod of the fleet or refused: failed; nobody hosts: no leader
        ({"a": None, "b": _report(state="Unknown")}, {"a"}, "FR", None, 0),
    ],
    ids=["agreed", "self-claimed", "catching-up", "applying", "failed"],
)
def test_member_answers_are_summarized_into_partition_status(
    reports: dict[str, pb.ReplicaReport | None], failed: set[str], states: str, leader: str | None, items: int
) -> None:
    names = {"S": "Serving", "C": "CatchingUp", "R": "Requested", "F": "Failed"}
    summary = summarize(reports, failed)
    assert [summary.replicas[n].state for n in reports] == [names[c] for c in states]
    assert (summary.leader, summary.item_count) == (leader, items)


def test_the_leaders_term_and_commit_index_are_the_partitions() -> None:
    follower = pb.ReplicaReport(state="Hosted", leader="b", term=3, commit_index=90, lag=2)
    leader = pb.ReplicaReport(state="Hosted", leader="b", term=3, commit_index=95)
    summary = summarize({"a": follower, "b": leader}, set())
    assert (summary.leader, summary.term, summary.commit_index) == ("b", 3, 95)


def test_the_leaders_split_points_and_heat_are_the_partitions() -> None:
    follower = pb.ReplicaReport(state="Hosted", leader="b", hot_seconds=1.0, split_hash=7)
    leader = pb.ReplicaReport(
        state="Hosted",
        leader="b",
        split_hash=2**63,
        hot_seconds=301.0,
        hot_split_hash=2**62,
        hot_single_key=True,
    )
    summary = summarize({"a": follower, "b": leader}, set())
    assert (summary.split_hash, summary.single_key) == (2**63, False)
    assert (summary.hot_seconds, summary.hot_split_hash, summary.hot_single_key) == (301.0, 2**62, True)
    uncounted = summarize({"b": pb.ReplicaReport(state="Hosted", leader="b")}, set())
    assert (uncounted.split_hash, uncounted.hot_split_hash, uncounted.hot_seconds) == (None, None, 0.0)


def test_every_member_is_sent_the_same_membership_with_each_members_replication_address() -> None:
    """The operator fills each member's replication address from its pod DNS name; a
    node outside the fleet gets none (its registration, if any, says)."""
    fleet = Fleet(release="pt", namespace="db", image="partita:1", zones=("a", "b", "c"))
    spec = table("Orders", 7)
    members = [Member("pt-storage-a-0", "a"), Member("pt-storage-b-0", "b"), Member("stranger", "c")]
    request = host_request(ref(), spec, members, fleet_replication_resolver(fleet))
    assert [(m.node, m.replication_address) for m in request.members] == [
        ("pt-storage-a-0", "pt-storage-a-0.pt-storage-a.db.svc:7400"),
        ("pt-storage-b-0", "pt-storage-b-0.pt-storage-b.db.svc:7400"),
        ("stranger", ""),
    ]


def test_a_tables_point_in_time_recovery_is_sent_to_its_members_once_it_has_been_on() -> None:
    """The members' leaders add TTL deletes to the recovery history: they must know it."""
    spec = table("Orders", 7)
    assert host_request(ref(), spec, [Member("n1", "a")]).table.point_in_time == ""
    recovering = dataclasses.replace(spec, point_in_time=PointInTimeRecovery(True, 2.5, 9))
    sent = host_request(ref(), recovering, [Member("n1", "a")]).table.point_in_time
    assert PointInTimeRecovery.from_json(orjson.loads(sent)) == recovering.point_in_time
