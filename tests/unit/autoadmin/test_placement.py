"""Initial placement (P1): one replica per partition, round-robin from a seeded offset."""

from __future__ import annotations

from collections import Counter

import pytest

from partita.autoadmin.placement import initial_placement
from partita.common.errors import DynamoError
from partita.control.model import NodeRecord

NODES = [NodeRecord(f"node-{c}", c, f"127.0.0.1:{i}") for i, c in enumerate("cab")]
IDS = sorted(n.node_id for n in NODES)


def test_no_registered_nodes_is_service_unavailable() -> None:
    with pytest.raises(DynamoError) as err:
        initial_placement(4, [], seed=1)
    assert err.value.code == "ServiceUnavailable"
    assert err.value.status == 503
    assert err.value.retriable


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 8])
def test_every_partition_gets_one_registered_node(count: int) -> None:
    placement = initial_placement(count, NODES, seed=99)
    assert len(placement) == count
    assert all(len(replicas) == 1 and replicas[0] in IDS for replicas in placement)


@pytest.mark.parametrize("seed", range(12))
def test_consecutive_partitions_go_to_consecutive_nodes_in_id_order(seed: int) -> None:
    placement = [r[0] for r in initial_placement(7, NODES, seed=seed)]
    first = IDS.index(placement[0])
    assert placement == [IDS[(first + i) % len(IDS)] for i in range(7)]


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_load_is_spread_evenly_when_partitions_fill_whole_rounds(rounds: int) -> None:
    placement = initial_placement(rounds * len(NODES), NODES, seed=3)
    assert Counter(r[0] for r in placement) == {node_id: rounds for node_id in IDS}


def test_placement_is_a_function_of_the_seed_not_of_the_node_list_order() -> None:
    assert initial_placement(5, NODES, seed=1234) == initial_placement(5, list(reversed(NODES)), seed=1234)


def test_different_tables_start_on_different_nodes() -> None:
    firsts = {initial_placement(1, NODES, seed=seed)[0][0] for seed in range(64)}
    assert firsts == set(IDS)


def test_zero_partitions_place_nothing() -> None:
    assert initial_placement(0, NODES, seed=5) == []
