"""Shuffle-sharded placement: each new table on a few nodes per zone, chosen so that two
tables share as few nodes as the fleet allows (DESIGN.md section 6)."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partita.autoadmin import reconcile
from partita.autoadmin.placement import ShardPolicy, initial_placement, shuffle_shard
from partita.control.model import NodeRecord
from tests.unit import records

ZONES = ("a", "b", "c")


def fleet(per_zone: int) -> list[NodeRecord]:
    return [
        NodeRecord(f"node-{zone}{i}", zone, f"127.0.0.1:{7000 + 10 * k + i}")
        for k, zone in enumerate(ZONES)
        for i in range(per_zone)
    ]


def ids(nodes: list[NodeRecord]) -> frozenset[str]:
    return frozenset(n.node_id for n in nodes)


def place_tables(
    count: int, nodes: list[NodeRecord], policy: ShardPolicy, partitions: int = 1
) -> list[list[tuple[str, ...]]]:
    """Replica sets of `count` tables created one after another, each placed seeing the
    earlier ones' partitions."""
    tables: list[list[tuple[str, ...]]] = []
    for seed in range(count):
        others = [frozenset(replicas) for table in tables for replicas in table]
        shard = shuffle_shard(1000 + seed, nodes, partitions, policy, others)
        tables.append(initial_placement(partitions, shard, 1000 + seed, 3))
    return tables


def holds_a_quorum_of(a: list[tuple[str, ...]], b: list[tuple[str, ...]]) -> bool:
    """Whether table a's nodes hold two or more replicas of some partition of table b."""
    nodes = {n for replicas in a for n in replicas}
    return any(len(nodes & set(replicas)) >= 2 for replicas in b)


def test_a_fleet_of_one_node_per_zone_is_every_tables_shard() -> None:
    # The local cluster's three nodes: every table on all of them, placed exactly as
    # before sharding (round-robin from the seed).
    nodes = fleet(1)
    for seed in range(20):
        shard = shuffle_shard(seed, nodes, 4, ShardPolicy(), [ids(nodes)])
        assert ids(shard) == ids(nodes)
        ring = sorted(ids(nodes))  # node-a0, node-b0, node-c0
        offset = random.Random(seed).randrange(3)
        expected = [tuple(ring[(offset + i + k) % 3] for k in range(3)) for i in range(4)]
        assert initial_placement(4, shard, seed, 3) == expected


def test_sharding_off_gives_every_node() -> None:
    nodes = fleet(5)
    assert ids(shuffle_shard(7, nodes, 1, ShardPolicy(enabled=False), [])) == ids(nodes)


@pytest.mark.parametrize("partitions", [1, 2, 3, 7])
def test_a_shard_has_one_node_per_partition_in_every_zone(partitions: int) -> None:
    nodes = fleet(6)
    shard = shuffle_shard(42, nodes, partitions, ShardPolicy(), [])
    assert sorted(n.zone for n in shard) == sorted(ZONES * min(partitions, 6))


def test_each_partition_of_a_shard_gets_nodes_of_its_own() -> None:
    # Five partitions on a shard of five nodes per zone: one replica on each node, and
    # the first replicas (preferred leaders) on five nodes over the three zones.
    nodes = fleet(8)
    shard = shuffle_shard(3, nodes, 5, ShardPolicy(), [])
    placement = initial_placement(5, shard, 3, 3)
    replicas = [r for partition in placement for r in partition]
    assert sorted(replicas) == sorted(ids(shard))
    leaders = [partition[0] for partition in placement]
    assert len(set(leaders)) == 5
    assert {leader[5] for leader in leaders} == set(ZONES)


def test_small_tables_never_hold_a_quorum_of_each_other_while_the_fleet_allows() -> None:
    # Eight nodes per zone, one-partition tables: forty fit with no table's nodes holding
    # two replicas of another's partition. Round-robin from seeded offsets (the
    # placement before sharding) exposed most of them to a neighbour.
    nodes = fleet(8)
    sharded = place_tables(40, nodes, ShardPolicy())
    for a, b in itertools.permutations(sharded, 2):
        assert not holds_a_quorum_of(a, b), (a, b)
    round_robin = place_tables(40, nodes, ShardPolicy(enabled=False))
    assert sum(holds_a_quorum_of(a, b) for a, b in itertools.permutations(round_robin, 2)) > 100


def test_a_crowded_fleet_exposes_fewer_pairs_than_round_robin() -> None:
    # Six nodes per zone and two-partition tables: no placement keeps forty tables
    # apart, but the shards leave far fewer pairs exposed than round-robin.
    nodes = fleet(6)
    sharded = place_tables(40, nodes, ShardPolicy(), partitions=2)
    round_robin = place_tables(40, nodes, ShardPolicy(enabled=False), partitions=2)
    exposed = sum(holds_a_quorum_of(a, b) for a, b in itertools.permutations(sharded, 2))
    before = sum(holds_a_quorum_of(a, b) for a, b in itertools.permutations(round_robin, 2))
    assert exposed < 0.8 * before, (exposed, before)


def test_the_same_inputs_choose_the_same_shard() -> None:
    nodes = fleet(6)
    others = [frozenset(r) for table in place_tables(4, nodes, ShardPolicy()) for r in table]
    one = shuffle_shard(99, nodes, 2, ShardPolicy(), others)
    again = shuffle_shard(99, list(reversed(nodes)), 2, ShardPolicy(), others)
    assert ids(one) == ids(again)


@settings(max_examples=60, deadline=None)
@given(
    per_zone=st.integers(1, 7),
    enabled=st.booleans(),
    partitions=st.integers(1, 6),
    tables=st.integers(0, 6),
    seed=st.integers(0, 2**63 - 1),
)
def test_every_partition_keeps_one_replica_per_zone_inside_its_shard(
    per_zone: int, enabled: bool, partitions: int, tables: int, seed: int
) -> None:
    nodes = fleet(per_zone)
    policy = ShardPolicy(enabled=enabled)
    others = [frozenset(r) for table in place_tables(tables, nodes, policy) for r in table]
    shard = shuffle_shard(seed, nodes, partitions, policy, others)
    assert ids(shard) <= ids(nodes)
    placement = initial_placement(partitions, shard, seed, 3)
    zone_of = {n.node_id: n.zone for n in nodes}
    for replicas in placement:
        assert set(replicas) <= ids(shard)
        assert sorted(zone_of[r] for r in replicas) == list(ZONES)


def test_the_core_places_a_new_table_on_its_shard_away_from_the_others() -> None:
    nodes = fleet(4)
    settings_ = reconcile.Settings(placement=lambda count, ns, seed: initial_placement(count, ns, seed, 3))
    spec = records.table_spec(
        table_id=77, billing_mode="PROVISIONED", read_capacity=5, write_capacity=5
    )  # one partition
    taken = (frozenset({"node-a0", "node-b0", "node-c0"}), frozenset({"node-a1", "node-b1", "node-c1"}))
    assert reconcile.needs_others(spec, (), nodes, settings_)
    observed = reconcile.Observed(spec, None, (), frozenset(), {}, taken)
    [change, _] = reconcile.decide(observed, nodes, settings_)
    assert isinstance(change, reconcile.ChangePartitions)
    used = {r for p in change.put for r in p.replicas}
    assert all(len(used & other) <= 1 for other in taken)
    assert change.exposed == 0
    # Two nodes per zone and partitions there already on every mix of one node per
    # zone: any one-node-per-zone shard holds two replicas of one of
    # them, and the change says how many.
    crowded = tuple(
        frozenset({f"node-a{i}", f"node-b{j}", f"node-c{k}"})
        for i in range(2)
        for j in range(2)
        for k in range(2)
    )
    observed = reconcile.Observed(spec, None, (), frozenset(), {}, crowded)
    [change, _] = reconcile.decide(observed, fleet(2), settings_)
    assert isinstance(change, reconcile.ChangePartitions)
    used = {r for p in change.put for r in p.replicas}
    assert change.exposed == sum(1 for other in crowded if len(used & other) > 1) > 0
    # A fleet of one node per zone needs no other table's placement read.
    assert not reconcile.needs_others(spec, (), fleet(1), settings_)


@pytest.mark.parametrize("seed", range(10))
def test_replicas_spread_over_every_node_of_a_zone(seed: int) -> None:
    # Six partitions of three replicas on two nodes per zone: three replicas on each
    # node and one preferred leader each. The ring sorted by node id before put five of
    # the six replicas of a zone on its first node.
    placement = initial_placement(6, fleet(2), seed, 3)
    per_node = Counter(r for replicas in placement for r in replicas)
    assert sorted(per_node.values()) == [3] * 6
    assert sorted(Counter(replicas[0] for replicas in placement).values()) == [1] * 6
