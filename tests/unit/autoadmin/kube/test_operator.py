"""The real kopf operator, in-process, against kmock's in-memory Kubernetes API.

kmock stores objects and serves list/watch/create/patch/delete, honours finalizers
(deletionTimestamp, then removal once they are gone) but, unlike a real API server, it
does not bump metadata.generation, assign uids, garbage-collect by owner references or
run CEL rules: the tests set uid and generation themselves where the operator reads
them, and the CRD rules are tested against the schemas elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
import kopf
import orjson
import pytest

from partita.autoadmin.kube import naming
from partita.autoadmin.kube.decisions import Member
from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.handlers import OperatorConfig
from partita.autoadmin.kube.main import run_operator
from partita.autoadmin.kube.replicas import PartitionRef, PartitionReport, ReplicaReport
from partita.control import kubernetes
from partita.control.model import StreamSpec
from partita.control.store import EtcdControlStore
from tests.unit.autoadmin.kube.emulator import (
    NS,
    PEERINGS,
    TABLES,
    TIMEOUT,
    ApiServer,
    create_peering,
    eventually,
    get,
    partitions_of,
    register_resources,
    table_manifest,
)

# Bounded: an operator that cannot stop must fail the test, not hang the suite.
pytestmark = [pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(150)]

STOP_TIMEOUT = 10.0
PARTITIONS = f"/apis/{naming.API_VERSION}/namespaces/{NS}/partitions"


class ServingDirector:
    """Stands in for the storage nodes' admin RPC (tested against real nodes in
    test_grpc_director.py and the end-to-end test): every asked member serves at once,
    and every drop succeeds. Records what it was asked."""

    def __init__(self) -> None:
        self.hosted: list[tuple[str, tuple[str, ...]]] = []
        self.dropped: list[str] = []
        self.dropped_members: list[tuple[str, str]] = []
        # What the groups' leaders published, by partition (repair); tests set it.
        self.published: dict[str, tuple[Member, ...]] = {}
        # The (cut, index) of the SPLIT entries the groups' leaders applied; tests set it.
        self.splits: dict[str, tuple[int, int]] = {}

    async def host(self, partition: PartitionRef, members: Sequence[Member]) -> PartitionReport:
        self.hosted.append((partition.name, tuple(m.node for m in members)))
        return PartitionReport(
            replicas={m.node: ReplicaReport("Serving") for m in members}, leader=members[0].node, item_count=1
        )

    async def drop(self, partition: PartitionRef, members: Sequence[Member]) -> bool:
        self.dropped.append(partition.name)
        self.dropped_members.extend((partition.name, m.node) for m in members)
        return True

    async def published_members(self, partition: PartitionRef) -> tuple[Member, ...] | None:
        return self.published.get(partition.name)

    async def published_split(self, partition: PartitionRef) -> tuple[int, int] | None:
        return self.splits.get(partition.name)

    async def forget_members(self, partition: PartitionRef) -> None:
        self.published.pop(partition.name, None)
        self.splits.pop(partition.name, None)


@pytest.fixture
async def api(kmock: Any) -> AsyncIterator[aiohttp.ClientSession]:
    register_resources(kmock)
    async with aiohttp.ClientSession(base_url=str(kmock.url)) as session:
        await create_peering(session)
        yield session


def _config(zones: tuple[str, ...] = ("a", "b", "c"), resync_seconds: float = 0.3) -> OperatorConfig:
    fleet = Fleet(release="pt", namespace=NS, image="partita:test", zones=zones, replicas_per_zone=2)
    return OperatorConfig(fleet=fleet, resync_seconds=resync_seconds, retry_seconds=0.3, progress_seconds=0.3)


@contextlib.asynccontextmanager
async def operator(
    kmock: Any,
    director: ServingDirector | None,
    priority: int,
    config: OperatorConfig | None = None,
    etcd_port: int | None = None,
) -> AsyncIterator[None]:
    """One operator in a thread with its own event loop, as in production (one process,
    one loop): on exit kopf waits for and then cancels every task of its loop that it
    did not start with, which in a shared loop would include kmock's and the other
    operator's tasks."""
    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        box["loop"], box["stop"] = asyncio.get_running_loop(), asyncio.Event()
        ready = asyncio.Event()
        watcher = asyncio.create_task(ready.wait())
        watcher.add_done_callback(lambda _: started.set())
        # With `etcd_port`: the published memberships followed there (made on this loop).
        memberships = EtcdControlStore("127.0.0.1", etcd_port) if etcd_port is not None else None
        try:
            await run_operator(
                config or _config(),
                login=kopf.ConnectionInfo(server=str(kmock.url)),
                director=director,
                priority=priority,
                identity=f"operator-{priority}",
                stop_flag=box["stop"],
                ready_flag=ready,
                memberships=memberships,
            )
        finally:
            if memberships is not None:
                await memberships.close()

    def thread_main() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            box["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=thread_main, name=f"operator-{priority}", daemon=True)
    thread.start()
    await asyncio.to_thread(started.wait, TIMEOUT)
    if "error" in box:
        raise box["error"]
    assert started.is_set() and thread.is_alive(), "the operator did not start"
    try:
        yield
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        await asyncio.to_thread(thread.join, STOP_TIMEOUT)
        assert not thread.is_alive(), f"the operator did not stop within {STOP_TIMEOUT} s"
        if "error" in box:
            raise box["error"]


async def _table_status(api: aiohttp.ClientSession, name: str, want: str, generation: int = 1) -> Any:
    async def probe() -> Any:
        body = await get(api, f"{TABLES}/{name}")
        status = (body or {}).get("status") or {}
        return (
            body
            if status.get("tableStatus") == want and status.get("observedGeneration") == generation
            else None
        )

    return await eventually(probe, f"table {name} {want}")


async def test_a_table_gets_partitions_owned_by_it_and_one_storage_statefulset_per_zone(
    api: Any, kmock: Any
) -> None:
    director = ServingDirector()
    async with operator(kmock, director, priority=10):
        await api.post(
            TABLES,
            json=table_manifest(
                "music",
                billingMode="PROVISIONED",
                provisionedThroughput={"readCapacityUnits": 3000, "writeCapacityUnits": 1000},
            ),
        )
        body = await _table_status(api, "music", "ACTIVE")
        await asyncio.sleep(1.0)  # a few more resyncs: they must change nothing
        parts = await partitions_of(api, "music")
        creations = len(kmock[f"post /apis/{naming.API_VERSION}/namespaces/{NS}/partitions"])
        fleet_creations = len(kmock[f"post /apis/apps/v1/namespaces/{NS}/statefulsets"])
        sets = await get(api, f"/apis/apps/v1/namespaces/{NS}/statefulsets")
        services = await get(api, f"/api/v1/namespaces/{NS}/services")
        pdbs = await get(api, f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets")

    # 3000 RCU + 1000 WCU -> ceil(1 + 1) = 2 partitions, each with replicas in 3 zones.
    assert len(parts) == 2
    # Idempotent: each object was created once, however often the handlers ran.
    assert creations == 2 and fleet_creations == 3
    for part in parts:
        assert part["metadata"]["ownerReferences"][0] | {} == {
            "apiVersion": naming.API_VERSION,
            "kind": "Table",
            "name": "music",
            "uid": "uid-music",
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert sorted(m["zone"] for m in part["spec"]["members"]) == ["a", "b", "c"]
        assert part["status"]["state"] == "Serving"
    assert sorted(s["metadata"]["name"] for s in sets["items"]) == [
        "pt-storage-a",
        "pt-storage-b",
        "pt-storage-c",
    ]
    assert sorted(s["metadata"]["name"] for s in services["items"]) == [
        "pt-storage-a",
        "pt-storage-b",
        "pt-storage-c",
    ]
    assert len(pdbs["items"]) == 3
    status = body["status"]
    assert status["partitionCount"] == 2 and status["itemCount"] == 2
    assert status["observedGeneration"] == 1 and status["tableId"] == "uid-music"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Available": "True",
        "Progressing": "False",
        "Degraded": "False",
    }
    assert "finalizers" in body["metadata"] and naming.FINALIZER in body["metadata"]["finalizers"]
    reasons = {
        o.raw.get("reason") for key, o in kmock.objects.items() if key[0].plural == "events" and not o.deleted
    }
    assert {"StorageCreated", "PartitionsCreated", "TableActive", "PartitionServing"} <= reasons


async def _patch(api: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> None:
    headers = {"Content-Type": "application/merge-patch+json"}
    async with api.patch(path, json=body, headers=headers) as resp:
        assert resp.status == 200, await resp.text()


def _actions(action: str, reason: str) -> float:
    from partita.common.metrics import REGISTRY

    value = REGISTRY.get_sample_value("partita_autoadmin_actions_total", {"action": action, "reason": reason})
    return value or 0.0


async def test_more_throughput_splits_every_partition_and_keeps_their_nodes(api: Any, kmock: Any) -> None:
    director = ServingDirector()
    splits = _actions("split_partitions", "throughput_raised")
    async with operator(kmock, director, priority=10):
        throughput = {"readCapacityUnits": 1, "writeCapacityUnits": 3200}
        # One replica: a replicated partition is kept whole (see the reconcile tests).
        manifest = table_manifest(
            "orders", billingMode="PROVISIONED", provisionedThroughput=throughput, replicationFactor=1
        )
        await api.post(TABLES, json=manifest)
        await _table_status(api, "orders", "ACTIVE")
        before = {
            p["spec"]["hashRange"]["start"]: p["spec"]["members"] for p in await partitions_of(api, "orders")
        }
        # The seed's worked example: 3200 WCU -> 4 partitions; 6000 WCU -> 8 (each splits).
        assert len(before) == 4
        await _patch(
            api, f"{TABLES}/orders", {"spec": {"provisionedThroughput": {"writeCapacityUnits": 6000}}}
        )

        async def eight() -> Any:
            parts = await partitions_of(api, "orders")
            return parts if len(parts) == 8 else None

        await eventually(eight, "8 partitions")
        body = await _table_status(api, "orders", "ACTIVE", generation=2)
        # Read once settled: mid-split the new halves exist before their parents shrink
        # (an overlap a restarted operator finishes, never a hole).
        after = await partitions_of(api, "orders")

    ranges = sorted(
        (int(p["spec"]["hashRange"]["start"], 16), int(p["spec"]["hashRange"]["last"], 16)) for p in after
    )
    assert ranges[0][0] == 0 and ranges[-1][1] == 2**64 - 1
    assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(7)), "ranges must tile the hash space"
    by_start = {p["spec"]["hashRange"]["start"]: p for p in after}
    for start, members in before.items():
        parent = by_start[start]
        child = by_start[f"{int(parent['spec']['hashRange']['last'], 16) + 1:016x}"]
        assert parent["spec"]["members"] == members == child["spec"]["members"]
    assert body["status"]["partitionCount"] == 8
    assert body["status"]["observedGeneration"] == 2
    # The operator counts what the core decided, as the local autoadmin does.
    assert _actions("split_partitions", "throughput_raised") == splits + 1


async def test_a_spec_change_that_needs_no_split_is_observed_by_the_core_without_new_partitions(
    api: Any, kmock: Any
) -> None:
    """The reconcile core decides in Kubernetes too: a new generation (a tag) with
    enough partitions is marked ACTIVE at that generation, and nothing is re-placed."""
    director = ServingDirector()
    async with operator(kmock, director, priority=10):
        throughput = {"readCapacityUnits": 1, "writeCapacityUnits": 1000}
        await api.post(
            TABLES, json=table_manifest("tagged", billingMode="PROVISIONED", provisionedThroughput=throughput)
        )
        await _table_status(api, "tagged", "ACTIVE")
        before = sorted(p["metadata"]["name"] for p in await partitions_of(api, "tagged"))
        await _patch(api, f"{TABLES}/tagged", {"spec": {"tags": [{"key": "team", "value": "a"}]}})
        body = await _table_status(api, "tagged", "ACTIVE", generation=2)
        after = sorted(p["metadata"]["name"] for p in await partitions_of(api, "tagged"))
        creations = len(kmock[f"post /apis/{naming.API_VERSION}/namespaces/{NS}/partitions"])

    assert (before == after, len(after), creations) == (True, 2, 2)  # ceil(1/3000 + 1000/1000)
    assert body["status"]["observedGeneration"] == 2 and body["status"]["partitionCount"] == 2


async def test_deleting_a_table_drops_its_partitions_then_releases_it(api: Any, kmock: Any) -> None:
    director = ServingDirector()
    async with operator(kmock, director, priority=10):
        await api.post(TABLES, json=table_manifest("gone"))
        await _table_status(api, "gone", "ACTIVE")
        names = sorted(p["metadata"]["name"] for p in await partitions_of(api, "gone"))
        assert len(names) == 4  # on demand: the configured starting count
        await api.delete(f"{TABLES}/gone")

        async def released() -> bool:
            return await get(api, f"{TABLES}/gone") is None

        await eventually(released, "the table to be released")
        remaining = await partitions_of(api, "gone")

    assert remaining == []
    # kopf runs handlers at least once (drop is idempotent): every partition was dropped.
    assert sorted(set(director.dropped)) == names


async def test_a_membership_the_groups_leader_published_is_adopted_into_the_partition_spec(
    api: Any, kmock: Any
) -> None:
    # Repair (docs/kubernetes.md): a group's leader replaced a member and added a log
    # member. The operator adopts the members into the spec (which routers read), hosts
    # them, drops the removed member's replica; deleting the table forgets the record
    # and drops every member.
    director = ServingDirector()
    async with operator(kmock, director, priority=10):
        await api.post(TABLES, json=table_manifest("healed"))
        await _table_status(api, "healed", "ACTIVE")
        part = (await partitions_of(api, "healed"))[0]
        name = part["metadata"]["name"]
        placed = [Member(m["node"], m["zone"]) for m in part["spec"]["members"]]
        removed = placed[-1]
        spare_ordinal = "1" if removed.node.endswith("-0") else "0"
        rebuilt = Member(f"{removed.node[:-1]}{spare_ordinal}", removed.zone)
        logged = next(
            Member(f"{m.node[:-1]}{'1' if m.node.endswith('-0') else '0'}", m.zone, "log")
            for m in placed[:-1]
        )
        director.published[name] = (*placed[:-1], rebuilt, logged)

        async def adopted() -> Any:
            current = next(p for p in await partitions_of(api, "healed") if p["metadata"]["name"] == name)
            return (
                current
                if {m["node"] for m in current["spec"]["members"]}
                == {m.node for m in director.published[name]}
                else None
            )

        current = await adopted() or await eventually(adopted, "the published members in the spec")
        roles = {m["node"]: m["role"] for m in current["spec"]["members"]}
        assert roles == {**{m.node: "full" for m in placed[:-1]}, rebuilt.node: "full", logged.node: "log"}
        assert (name, removed.node) in director.dropped_members
        await eventually(
            lambda: _async_true(any(p == name and rebuilt.node in nodes for p, nodes in director.hosted)),
            "the rebuilt member hosted",
        )
        await api.delete(f"{TABLES}/healed")

        async def released() -> bool:
            return await get(api, f"{TABLES}/healed") is None

        await eventually(released, "the table to be released")

    assert name not in director.published  # forgotten before the replicas were dropped
    assert {(name, m.node) for m in (*placed[:-1], rebuilt, logged)} <= set(director.dropped_members)


async def _async_true(value: bool) -> bool:
    return value


class RecordingDirector(ServingDirector):
    """Also keeps the replication factor each HostReplica carried, by partition."""

    def __init__(self) -> None:
        super().__init__()
        self.factors: dict[str, int] = {}

    async def host(self, partition: PartitionRef, members: Sequence[Member]) -> PartitionReport:
        self.factors[partition.name] = partition.replication_factor
        return await super().host(partition, members)


async def test_a_changed_replication_factor_reaches_every_group_and_the_table_shows_its_progress(
    api: Any, kmock: Any
) -> None:
    """replicationFactor 3 -> 2 on a serving Table: every Partition's spec takes it, its
    members are told it (HostReplica, which their group's leader keeps by adding or
    removing members), and the Table, ACTIVE throughout, says it is Progressing until
    each group's leader has published its new members and they are adopted."""
    director = RecordingDirector()
    async with operator(kmock, director, priority=10):
        await api.post(TABLES, json=table_manifest("shrunk", replicationFactor=3))
        await _table_status(api, "shrunk", "ACTIVE")
        names = sorted(p["metadata"]["name"] for p in await partitions_of(api, "shrunk"))
        assert all(p["spec"]["replicationFactor"] == 3 for p in await partitions_of(api, "shrunk"))
        await _patch(api, f"{TABLES}/shrunk", {"spec": {"replicationFactor": 2}})

        async def told() -> bool:
            parts = await partitions_of(api, "shrunk")
            return all(p["spec"]["replicationFactor"] == 2 for p in parts) and all(
                director.factors.get(n) == 2 for n in names
            )

        await eventually(told, "every group told the new replication factor")
        body = await _table_status(api, "shrunk", "ACTIVE", generation=2)

        def progressing(table: Any) -> tuple[str, str]:
            c = next(c for c in table["status"]["conditions"] if c["type"] == "Progressing")
            return c["status"], c["reason"]

        async def changing() -> Any:
            table = await get(api, f"{TABLES}/shrunk")
            return table if progressing(table) == ("True", "ChangingMembers") else None

        body = await eventually(changing, "the table progressing while members change")
        assert body["status"]["tableStatus"] == "ACTIVE"
        # Each group's leader removed a member; the operator adopts the two left.
        for part in await partitions_of(api, "shrunk"):
            kept = part["spec"]["members"][:2]
            director.published[part["metadata"]["name"]] = tuple(Member(m["node"], m["zone"]) for m in kept)

        async def settled() -> Any:
            table = await get(api, f"{TABLES}/shrunk")
            return table if progressing(table) == ("False", "Reconciled") else None

        await eventually(settled, "the table settled at two replicas per partition")
        parts = await partitions_of(api, "shrunk")

    assert all(len(p["spec"]["members"]) == 2 for p in parts)
    reasons = [
        o.raw.get("reason") for key, o in kmock.objects.items() if key[0].plural == "events" and not o.deleted
    ]
    assert reasons.count("ReplicationFactorChanging") == 1


async def test_deletion_protection_keeps_the_table_until_it_is_switched_off(api: Any, kmock: Any) -> None:
    director = ServingDirector()
    async with operator(kmock, director, priority=10):
        await api.post(TABLES, json=table_manifest("kept", deletionProtectionEnabled=True))
        await _table_status(api, "kept", "ACTIVE")
        await api.delete(f"{TABLES}/kept")

        async def warned() -> bool:
            return any(
                key[0].plural == "events" and not o.deleted and o.raw.get("reason") == "DeletionProtected"
                for key, o in kmock.objects.items()
            )

        await eventually(warned, "a DeletionProtected event")
        # Several retry periods later the table and its partitions are all still there.
        await asyncio.sleep(1.0)
        body = await get(api, f"{TABLES}/kept")
        assert body is not None and body["metadata"].get("deletionTimestamp")
        assert len(await partitions_of(api, "kept")) == 4
        assert director.dropped == []

        await _patch(api, f"{TABLES}/kept", {"spec": {"deletionProtectionEnabled": False}})

        async def released() -> bool:
            return await get(api, f"{TABLES}/kept") is None

        await eventually(released, "the table to be released")
    assert len(set(director.dropped)) == 4


async def test_a_stream_asked_for_with_kubectl_is_recorded_when_asked_and_a_new_view_type_starts_another(
    api: Any, kmock: Any
) -> None:
    """Routers and storage pods read a Table's streams from its annotation; the operator
    records there the stream a spec.streamSpecification asks for, timed when it saw it."""
    async with operator(kmock, ServingDirector(), priority=10):
        before = time.time()
        wanted = {"streamEnabled": True, "streamViewType": "NEW_IMAGE"}
        await api.post(TABLES, json=table_manifest("streamed", streamSpecification=wanted))

        async def recorded(enabled: bool, view: str | None) -> Any:
            body = await get(api, f"{TABLES}/streamed")
            note = ((body or {}).get("metadata", {}).get("annotations") or {}).get(
                kubernetes.STREAM_ANNOTATION
            )
            stream = StreamSpec.from_json(orjson.loads(note)) if note else None
            return (
                stream
                if stream is not None and (stream.enabled, stream.view_type) == (enabled, view)
                else None
            )

        first = await eventually(lambda: recorded(True, "NEW_IMAGE"), "the stream recorded")
        assert first.created_at is not None and before <= first.created_at <= time.time()
        await _patch(
            api,
            f"{TABLES}/streamed",
            {"spec": {"streamSpecification": {"streamEnabled": True, "streamViewType": "KEYS_ONLY"}}},
        )
        second = await eventually(lambda: recorded(True, "KEYS_ONLY"), "a new stream recorded")
        assert second.created_at is not None and second.created_at > first.created_at
        assert [s.created_at for s in second.earlier] == [first.created_at] and not second.earlier[0].enabled
        await _patch(
            api,
            f"{TABLES}/streamed",
            {"spec": {"streamSpecification": {"streamEnabled": False, "streamViewType": None}}},
        )
        third = await eventually(lambda: recorded(False, "KEYS_ONLY"), "the stream disabled")
        assert third.created_at == second.created_at and third.disabled_at is not None


async def test_a_second_operator_stays_passive_until_the_active_one_leaves(api: Any, kmock: Any) -> None:
    active, passive = ServingDirector(), ServingDirector()
    async with operator(kmock, passive, priority=5):
        async with operator(kmock, active, priority=50):

            async def peered() -> bool:
                body = await get(api, f"{PEERINGS}/partita")
                return len((body or {}).get("status") or {}) >= 2

            await eventually(peered, "both operators in the peering object")
            await asyncio.sleep(0.5)
            await api.post(TABLES, json=table_manifest("shared"))
            await _table_status(api, "shared", "ACTIVE")
            await asyncio.sleep(1.0)  # several resync periods in which the passive one could act
            assert {name for name, _ in active.hosted} == {f"shared-{i * 2**62:016x}" for i in range(4)}
            assert passive.hosted == []

        # The active operator left (and withdrew from the peering object): the other resumes.
        async def took_over() -> bool:
            return bool(passive.hosted)

        await eventually(took_over, "the passive operator to take over")


async def test_with_no_storage_node_reachable_a_table_stays_creating_and_says_why(
    api: Any, kmock: Any
) -> None:
    """The production director (gRPC to the pods' DNS names, which resolve nowhere here):
    members are recorded as Requested, nothing claims they serve; two zones for
    replicationFactor 3 is reported as Degraded."""
    async with operator(kmock, None, priority=10, config=_config(zones=("a", "b"))):
        await api.post(TABLES, json=table_manifest("waiting"))

        async def reported() -> Any:
            body = await get(api, f"{TABLES}/waiting")
            status = (body or {}).get("status") or {}
            return body if status.get("partitionCount") == 4 and status.get("conditions") else None

        body = await eventually(reported, "the table's first status")
        await asyncio.sleep(1.0)
        body = await get(api, f"{TABLES}/waiting")
        parts = await partitions_of(api, "waiting")

    status = body["status"]
    assert status["tableStatus"] == "CREATING"
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "Available": ("False", "NotReady"),
        "Progressing": ("True", "CreatingPartitions"),
        "Degraded": ("True", "NotEnoughZones"),
    }
    for part in parts:
        assert sorted(m["zone"] for m in part["spec"]["members"]) == ["a", "b"]
        assert part["status"]["state"] == "Pending"
        assert {m["state"] for m in part["status"]["members"]} == {"Requested"}


class SizedDirector(ServingDirector):
    """Serving members, reporting the figures of a fixed set of 100-byte items: 39 of
    them, all in the lowest sixth of the hash space (so the middle of the range would
    cut nothing off), and the leader's split point (the first hash of the upper half)."""

    ITEMS = [k * 2**56 for k in range(1, 40)]

    async def host(self, partition: PartitionRef, members: Sequence[Member]) -> PartitionReport:
        self.hosted.append((partition.name, tuple(m.node for m in members)))
        mine = [h for h in self.ITEMS if partition.start <= h <= partition.last]
        return PartitionReport(
            replicas={m.node: ReplicaReport("Serving") for m in members},
            leader=members[0].node,
            item_count=len(mine),
            size_bytes=100 * len(mine),
            split_hash=mine[len(mine) // 2] if len(mine) > 1 else None,
        )


async def test_a_partition_past_the_split_size_becomes_two_partitions_cut_at_its_median(
    api: Any, kmock: Any
) -> None:
    director = SizedDirector()
    splits = _actions("split_partitions", "size_exceeded")
    # 3,900 bytes in one partition; the split size is 2,000: one cut at the median leaves
    # 1,900 and 2,000 (no further split); a cut at the middle of the range would not.
    config = dataclasses.replace(_config(), split_size_bytes=2000)
    async with operator(kmock, director, priority=10, config=config):
        throughput = {"readCapacityUnits": 1, "writeCapacityUnits": 1}
        # One replica: split in place. The second table's partition is replicated: it is
        # marked for a split at the same median, which its group's leader then commits
        # at a log index (see the replicated split test below).
        await api.post(
            TABLES,
            json=table_manifest(
                "growing", billingMode="PROVISIONED", provisionedThroughput=throughput, replicationFactor=1
            ),
        )
        await api.post(
            TABLES,
            json=table_manifest("replicated", billingMode="PROVISIONED", provisionedThroughput=throughput),
        )

        async def two() -> Any:
            parts = await partitions_of(api, "growing")
            served = all(
                (p.get("status") or {}).get("observedGeneration") == p["metadata"]["generation"]
                for p in parts
            )
            return parts if len(parts) == 2 and served else None

        await eventually(two, "2 partitions")
        await asyncio.sleep(1.5)  # several resyncs: the halves are under the limit, nothing more
        after = await partitions_of(api, "growing")
        body = await get(api, f"{TABLES}/growing")
        replicated = await partitions_of(api, "replicated")

    assert len(after) == 2
    by_start = sorted(after, key=lambda p: p["spec"]["hashRange"]["start"])
    median = SizedDirector.ITEMS[19]
    assert (by_start[0]["spec"]["hashRange"]["start"], by_start[0]["spec"]["hashRange"]["last"]) == (
        "0" * 16,
        f"{median - 1:016x}",
    )
    assert (by_start[1]["spec"]["hashRange"]["start"], by_start[1]["spec"]["hashRange"]["last"]) == (
        f"{median:016x}",
        "f" * 16,
    )
    assert by_start[0]["spec"]["members"] == by_start[1]["spec"]["members"]  # the same nodes: no item moves
    assert [p["status"]["sizeBytes"] for p in by_start] == [1900, 2000]
    assert body["status"]["tableStatus"] == "ACTIVE" and body["status"]["partitionCount"] == 2
    assert _actions("split_partitions", "size_exceeded") == splits + 1
    reasons = {
        (o.raw.get("reason"), o.raw.get("message"))
        for key, o in kmock.objects.items()
        if key[0].plural == "events" and not o.deleted
    }
    assert ("PartitionsSplit", "1 -> 2 partitions (a partition passed the split size)") in reasons
    assert len(replicated) == 1 and len(replicated[0]["spec"]["members"]) == 3
    assert replicated[0]["spec"]["splitAt"] == f"{median:016x}"
    assert any(reason == "PartitionsSplitting" for reason, _ in reasons)
    assert not any(reason == "PartitionKeptWhole" for reason, _ in reasons)


class HotDirector(ServingDirector):
    """Serving members whose leader reports each partition's heat (`heat`, by table
    name: seconds hot, the load's median hash, one key carrying it); tests set it."""

    def __init__(self) -> None:
        super().__init__()
        self.heat: dict[str, tuple[float, int | None, bool]] = {}

    async def host(self, partition: PartitionRef, members: Sequence[Member]) -> PartitionReport:
        report = await super().host(partition, members)
        seconds, at, one_key = self.heat.get(partition.table, (0.0, None, False))
        return dataclasses.replace(report, hot_seconds=seconds, hot_split_hash=at, hot_single_key=one_key)


async def test_a_partition_hot_for_long_enough_is_marked_for_a_split_at_its_loads_median(
    api: Any, kmock: Any
) -> None:
    # Split for consumption on Kubernetes: the leader measures the heat on the data path
    # and reports it through HostReplica; past splitHotSeconds the operator marks the
    # replicated partition for a split at the load's median (a log-index split follows,
    # as in the test above). One key carrying the load keeps its partition whole.
    director = HotDirector()
    config = dataclasses.replace(_config(), split_hot_seconds=60.0)
    async with operator(kmock, director, priority=10, config=config):
        throughput = {"readCapacityUnits": 1, "writeCapacityUnits": 100}
        for name in ("busy", "onekey"):
            await api.post(
                TABLES, json=table_manifest(name, billingMode="PROVISIONED", provisionedThroughput=throughput)
            )
            await _table_status(api, name, "ACTIVE")
        ((busy,), (onekey,)) = [await partitions_of(api, t) for t in ("busy", "onekey")]
        await asyncio.sleep(1.0)  # cool, or hot for less than 60 s: nothing is marked
        assert not (await get(api, f"{PARTITIONS}/{busy['metadata']['name']}"))["spec"].get("splitAt")
        director.heat["busy"] = (30.0, 2**62, False)
        await asyncio.sleep(1.0)
        assert not (await get(api, f"{PARTITIONS}/{busy['metadata']['name']}"))["spec"].get("splitAt")

        director.heat["busy"] = (75.0, 2**62, False)
        director.heat["onekey"] = (75.0, None, True)

        async def marked() -> Any:
            current = await get(api, f"{PARTITIONS}/{busy['metadata']['name']}")
            return current if (current or {}).get("spec", {}).get("splitAt") else None

        current = await eventually(marked, "the hot partition marked for a split")

        async def kept_whole() -> Any:
            return [
                o.raw
                for key, o in kmock.objects.items()
                if key[0].plural == "events" and not o.deleted and o.raw.get("reason") == "PartitionKeptWhole"
            ] or None

        kept = await eventually(kept_whole, "the one-key partition kept whole")

    assert current["spec"]["splitAt"] == f"{2**62:016x}"
    assert not (await get(api, f"{PARTITIONS}/{onekey['metadata']['name']}"))["spec"].get("splitAt")
    assert [onekey["metadata"]["name"] in e["message"] for e in kept] == [True]
    reasons = {
        (o.raw.get("reason"), o.raw.get("message"))
        for key, o in kmock.objects.items()
        if key[0].plural == "events" and not o.deleted
    }
    splitting = f"splitting {busy['metadata']['name']} at a log index (consumption hot)"
    assert ("PartitionsSplitting", splitting) in reasons


@pytest.mark.parametrize("resync_seconds", [0.3, 3600.0], ids=["with-resyncs", "progress-timers-alone"])
async def test_a_replicated_partition_is_split_at_its_groups_log_index(
    api: Any, kmock: Any, resync_seconds: float
) -> None:
    # docs/kubernetes.md, "Splits": more throughput than one partition carries. The
    # operator marks the replicated partition (spec.splitAt); its group's leader commits
    # a SPLIT entry and publishes its index; the operator then creates the two children,
    # which name the parent and that index and keep its members, and deletes the parent
    # once the children are hosted. Without resyncs (an hour apart) the steps that wait
    # for the storage pods are still seen at once: the Table is UPDATING and the children
    # Pending, so the progress timers follow them.
    director = ServingDirector()
    async with operator(kmock, director, priority=10, config=_config(resync_seconds=resync_seconds)):
        one = {"readCapacityUnits": 1, "writeCapacityUnits": 999}
        await api.post(
            TABLES, json=table_manifest("hot", billingMode="PROVISIONED", provisionedThroughput=one)
        )
        await _table_status(api, "hot", "ACTIVE")
        (parent,) = await partitions_of(api, "hot")
        name = parent["metadata"]["name"]
        raised = {"spec": {"provisionedThroughput": {"readCapacityUnits": 1, "writeCapacityUnits": 1500}}}
        await _patch(api, f"{TABLES}/hot", raised)

        async def marked() -> Any:
            current = await get(api, f"{PARTITIONS}/{name}")
            return current if (current or {}).get("spec", {}).get("splitAt") else None

        current = await eventually(marked, "the partition marked for a split")
        middle = 2**63
        assert current["spec"]["splitAt"] == f"{middle:016x}"
        await asyncio.sleep(1.0)  # resyncs: nothing more happens until the leader publishes
        assert [p["metadata"]["name"] for p in await partitions_of(api, "hot")] == [name]
        assert (await get(api, f"{TABLES}/hot"))["status"]["tableStatus"] == "UPDATING"

        director.splits[name] = (middle, 42)

        async def children() -> Any:
            parts = await partitions_of(api, "hot")
            done = len(parts) == 2 and all(p["spec"].get("parent") == name for p in parts)
            return parts if done else None

        parts = await eventually(children, "the children in the parent's place")
        await _table_status(api, "hot", "ACTIVE", generation=2)

    by_start = sorted(parts, key=lambda p: p["spec"]["hashRange"]["start"])
    assert [p["metadata"]["name"] for p in by_start] == [f"{name}-0", f"{name}-1"]
    assert [(p["spec"]["hashRange"]["start"], p["spec"]["hashRange"]["last"]) for p in by_start] == [
        ("0" * 16, f"{middle - 1:016x}"),
        (f"{middle:016x}", "f" * 16),
    ]
    assert all(p["spec"]["parentIndex"] == 42 for p in by_start)
    assert by_start[0]["spec"]["members"] == by_start[1]["spec"]["members"] == parent["spec"]["members"]
    assert name in director.dropped  # the parent's members were told to drop it
    assert name not in director.splits  # its record forgotten first
    reasons = {
        (o.raw.get("reason"), o.raw.get("message"))
        for key, o in kmock.objects.items()
        if key[0].plural == "events" and not o.deleted
    }
    assert ("PartitionsSplitting", f"splitting {name} at a log index (throughput raised)") in reasons
    # The children first; the parent once they are hosted.
    assert ("PartitionsSplit", "1 -> 3 partitions (a replicated split at a log index)") in reasons
    assert ("PartitionsSplit", "3 -> 2 partitions (a replicated split at a log index)") in reasons


async def test_a_new_table_is_placed_on_pods_apart_from_the_other_tables(api: Any, kmock: Any) -> None:
    # Two pods per zone and one-partition Tables: the second Table's shard (one pod per
    # zone) holds at most one of the first one's three members, from the Partitions of
    # every Table the operator lists for it.
    director = ServingDirector()
    throughput = {"readCapacityUnits": 5, "writeCapacityUnits": 5}
    async with operator(kmock, director, priority=10):
        for name in ("first", "second", "third"):
            await api.post(
                TABLES, json=table_manifest(name, billingMode="PROVISIONED", provisionedThroughput=throughput)
            )
            await _table_status(api, name, "ACTIVE")
        members = {
            name: {m["node"] for p in await partitions_of(api, name) for m in p["spec"]["members"]}
            for name in ("first", "second", "third")
        }
    assert len(members["first"]) == len(members["second"]) == 3
    assert len(members["first"] & members["second"]) <= 1, members
    # A third cannot keep apart from both (one of two pods in each zone: two of its
    # three are the first's or the second's): placed anyway, with a warning Event.
    warnings = [
        o.raw
        for key, o in kmock.objects.items()
        if key[0].plural == "events" and not o.deleted and o.raw.get("reason") == "ShardOverlaps"
    ]
    assert [w["involvedObject"]["name"] for w in warnings] == ["third"], warnings
    assert warnings[0]["type"] == "Warning"
    # The namespace-wide list was made, selected by the labels every Partition carries.
    selectors = [r.params.get("labelSelector", "") for r in kmock[f"get {PARTITIONS}"]]
    assert any(naming.TABLE_LABEL not in s and "partita" in s for s in selectors), selectors
