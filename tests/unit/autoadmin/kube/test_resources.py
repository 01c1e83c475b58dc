"""Table and Partition resources as the reconcile core's objects: the mapping in and
out, and the core's decisions on resources (one core, two drivers)."""

from __future__ import annotations

from typing import Any

import pytest

from partita.autoadmin import reconcile
from partita.autoadmin.kube import decisions, naming, resources
from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.replicas import PartitionReport
from partita.common.partition_map import HASH_SPACE, Partition
from partita.control.model import KeyElement, PartitionStats, TableState, table_status

FLEET = Fleet(release="r", namespace="ns", image="i", zones=("a", "b", "c"), replicas_per_zone=2)
NODES = FLEET.nodes()
SPEC = {
    "tableName": "Music",
    "attributeDefinitions": [
        {"attributeName": "Artist", "attributeType": "S"},
        {"attributeName": "Year", "attributeType": "N"},
    ],
    "keySchema": [
        {"attributeName": "Artist", "keyType": "HASH"},
        {"attributeName": "Year", "keyType": "RANGE"},
    ],
    "billingMode": "PROVISIONED",
    "provisionedThroughput": {"readCapacityUnits": 5, "writeCapacityUnits": 3200},
    "tags": [{"key": "team", "value": "a"}],
}
META = {"generation": 3, "resourceVersion": "812", "creationTimestamp": "2026-01-02T03:04:05Z"}


def test_a_table_resource_is_the_cores_table_spec() -> None:
    spec = resources.table_spec("ns", "music", SPEC, META)
    assert (spec.name, spec.partition_key, spec.sort_key) == (
        "Music",
        KeyElement("Artist", "S"),
        KeyElement("Year", "N"),
    )
    assert (spec.billing_mode, spec.read_capacity, spec.write_capacity) == ("PROVISIONED", 5, 3200)
    assert (spec.generation, spec.revision, spec.tags, spec.deleting) == (3, "812", (("team", "a"),), False)
    assert spec.table_id == decisions.table_seed("ns", "music")  # stable: names and seeds placement
    assert spec.created_at == 1767323045.0
    assert resources.table_spec("ns", "music", SPEC, {**META, "deletionTimestamp": "x"}).deleting


@pytest.mark.parametrize(
    ("status", "phase", "generation", "shown"),
    [
        ({}, None, None, "CREATING"),
        ({"tableStatus": "CREATING", "observedGeneration": 3}, "CREATING", 3, "CREATING"),
        ({"tableStatus": "ACTIVE", "observedGeneration": 3}, "ACTIVE", 3, "ACTIVE"),
        ({"tableStatus": "UPDATING", "observedGeneration": 2}, "ACTIVE", 2, "UPDATING"),  # spec is at 3
        ({"tableStatus": "ACTIVE", "observedGeneration": 2}, "ACTIVE", 2, "UPDATING"),  # a new spec arrived
    ],
)
def test_the_table_status_holds_the_cores_state_and_shows_dynamodbs_status(
    status: dict[str, Any], phase: str | None, generation: int | None, shown: str
) -> None:
    spec = resources.table_spec("ns", "music", SPEC, META)
    state = resources.table_state(spec, status)
    assert (state.phase if state else None, state.observed_generation if state else None) == (
        phase,
        generation,
    )
    assert table_status(spec, state) == shown


def test_a_state_written_then_read_back_is_the_same_state() -> None:
    spec = resources.table_spec("ns", "music", SPEC, META)
    for phase in ("CREATING", "ACTIVE"):
        state = TableState("Music", spec.table_id, phase, 3)  # type: ignore[arg-type]
        written = {**resources.state_status(state), "tableStatus": table_status(spec, state)}
        assert resources.table_state(spec, written) == state


def partition_obj(
    start: int, last: int, members: list[tuple[str, str]], status: dict[str, Any] | None = None
) -> Any:
    return {
        "metadata": {"name": naming.partition_name("music", start)},
        "spec": {
            "hashRange": {"start": f"{start:016x}", "last": f"{last:016x}"},
            "members": [{"node": n, "zone": z, "role": "full"} for n, z in members],
        },
        "status": status or {},
    }


def test_a_partition_resource_is_a_half_open_core_partition_and_back() -> None:
    obj = partition_obj(
        0, 2**63 - 1, [("r-storage-a-0", "a"), ("r-storage-b-1", "b")], {"leader": "r-storage-b-1"}
    )
    p = resources.partition(obj)
    assert p == Partition(
        "music-0000000000000000", 0, 2**63, ("r-storage-a-0", "r-storage-b-1"), "r-storage-b-1"
    )
    plan = resources.partition_plan(p, NODES)
    assert (plan.start, plan.last) == (0, 2**63 - 1)
    assert plan.members == (decisions.Member("r-storage-a-0", "a"), decisions.Member("r-storage-b-1", "b"))


def test_serving_members_are_ready_and_a_degraded_partition_counts_as_served() -> None:
    members = [("x", "a"), ("y", "b")]
    objs = [
        partition_obj(
            0,
            9,
            members,
            {
                "state": "Pending",
                "members": [{"node": "x", "state": "Serving"}, {"node": "y", "state": "Requested"}],
            },
        ),
        partition_obj(
            10,
            19,
            members,
            {
                "state": "Degraded",
                "members": [{"node": "x", "state": "Serving"}, {"node": "y", "state": "Failed"}],
            },
        ),
        partition_obj(20, 29, members),  # never reported
    ]
    first, second = naming.partition_name("music", 0), naming.partition_name("music", 10)
    assert resources.ready_replicas(objs) == {(first, "x"), (second, "x"), (second, "y")}


def test_the_core_places_a_new_table_one_replica_per_zone() -> None:
    spec = resources.table_spec("ns", "music", SPEC, META)
    observed = reconcile.Observed(spec, None, (), frozenset())
    settings = reconcile.Settings(placement=resources.zoned_placement(2))
    place, creating = reconcile.decide(observed, NODES, settings)
    assert isinstance(place, reconcile.ChangePartitions) and isinstance(creating, reconcile.PutState)
    assert len(place.put) == 4  # 3200 WCU: the seed's example
    for p in place.put:
        assert len({z for n in p.replicas for z in [n.split("-")[2]]}) == 2  # two zones
    assert creating.state.phase == "CREATING"


def test_a_split_patches_each_parent_and_creates_only_the_right_halves() -> None:
    quarters = [
        Partition(
            naming.partition_name("music", i * HASH_SPACE // 4),
            i * HASH_SPACE // 4,
            (i + 1) * HASH_SPACE // 4,
            ("x",),
            "x",
        )
        for i in range(4)
    ]
    spec = resources.table_spec(
        "ns",
        "music",
        {**SPEC, "provisionedThroughput": {"readCapacityUnits": 5, "writeCapacityUnits": 6000}},
        META,
    )
    ready = frozenset((p.partition_id, "x") for p in quarters)
    state = TableState("Music", spec.table_id, "ACTIVE", 2)
    [split] = reconcile.decide(
        reconcile.Observed(spec, state, tuple(quarters), ready), NODES, reconcile.Settings()
    )
    assert isinstance(split, reconcile.ChangePartitions)
    put, deleted = resources.resource_changes(split, "music")
    assert deleted == []  # every parent keeps its name (its first hash) and shrinks
    names = sorted(naming.partition_name("music", p.start) for p in put)
    assert len(names) == 8 and {q.partition_id for q in quarters} <= set(names)


def test_a_removed_partition_no_new_one_keeps_is_deleted() -> None:
    change = reconcile.ChangePartitions(
        1, (Partition("whatever", 0, HASH_SPACE, ("x",), "x"),), ("music-00000000000000ff",)
    )
    assert resources.resource_changes(change, "music")[1] == ["music-00000000000000ff"]


def _reported(generation: int, observed: int, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "orders-0000000000000000", "generation": generation},
        "spec": {},
        "status": {"observedGeneration": observed, **status},
    }


def test_partition_figures_become_the_cores_statistics_and_stale_ones_are_estimates() -> None:
    current = _reported(2, 2, itemCount=5, sizeBytes=500, splitHash="00000000000000ff", singleKey=False)
    stats = resources.partition_stats([current])
    assert stats == {"orders-0000000000000000": PartitionStats(5, 500, 0.0, 0xFF, False, estimated=False)}
    # Reported for the range before a split shortened it: the core must not split on it.
    stale = _reported(3, 2, itemCount=5, sizeBytes=500, splitHash="00000000000000ff")
    assert resources.partition_stats([stale])["orders-0000000000000000"].estimated
    one_key = _reported(1, 1, itemCount=9, sizeBytes=900, singleKey=True)
    assert resources.partition_stats([one_key])["orders-0000000000000000"].single_key
    assert resources.partition_stats([_reported(1, 1)]) == {}  # never reported: no figures


def test_a_partitions_heat_goes_to_status_and_back_to_the_cores_statistics() -> None:
    """Split for consumption on Kubernetes: the leader's heat, through the Partition."""
    report = PartitionReport({}, item_count=3, size_bytes=30, hot_seconds=301.5, hot_split_hash=0x8000)
    fields = resources.report_status(report)
    assert (fields["hotSeconds"], fields["hotSplitHash"], fields["hotSingleKey"]) == (
        301.5,
        "0000000000008000",
        False,
    )
    (stats,) = resources.partition_stats([_reported(1, 1, **fields)]).values()
    assert (stats.hot_seconds, stats.hot_split_hash, stats.hot_single_key) == (301.5, 0x8000, False)


def test_a_replica_report_becomes_status_fields_that_clear_a_split_hash_no_longer_reported() -> None:
    report = PartitionReport({}, item_count=3, size_bytes=30, split_hash=0xAB)
    assert resources.report_status(report) == {
        "itemCount": 3,
        "sizeBytes": 30,
        "splitHash": "00000000000000ab",
        "singleKey": False,
        "hotSeconds": 0.0,
        "hotSplitHash": None,
        "hotSingleKey": False,
        "term": None,
        "commitIndex": None,
    }
    assert resources.report_status(PartitionReport({}, item_count=3, size_bytes=30))["splitHash"] is None
    grouped = resources.report_status(PartitionReport({}, term=4, commit_index=120))
    assert (grouped["term"], grouped["commitIndex"]) == (4, 120)


def test_other_placements_are_the_member_sets_of_the_other_tables_partitions() -> None:
    def partition(table: str | None, *nodes: str) -> dict[str, Any]:
        labels = {naming.TABLE_LABEL: table} if table is not None else {}
        return {
            "metadata": {"labels": labels},
            "spec": {"members": [{"node": n, "zone": n[-1]} for n in nodes]},
        }

    objs = [
        partition("music", "p-a", "p-b", "p-c"),
        partition("orders", "q-a", "q-b", "q-c"),
        partition("orders", "r-a", "q-b", "r-c"),
        partition(None, "x-a"),  # not a Table's: ignored
    ]
    assert resources.other_placements(objs, "music") == (
        frozenset({"q-a", "q-b", "q-c"}),
        frozenset({"r-a", "q-b", "r-c"}),
    )
    assert resources.other_placements(objs, "orders") == (frozenset({"p-a", "p-b", "p-c"}),)
