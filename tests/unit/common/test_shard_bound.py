"""The shuffle-shard bound's counts: which other partitions a table's nodes hold past the
bound, and how many more a node added to them would."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from partita.common.shard_bound import added_exposure, exposed_partitions, sharing

NODES = [f"n{i}" for i in range(8)]


def test_a_partition_is_exposed_once_the_shard_holds_more_than_the_bound_of_its_replicas() -> None:
    others = [frozenset({"a", "b", "c"}), frozenset({"a", "d", "e"})]
    assert sharing({"a", "b"}, others, 1) == (1, 2, 3)
    assert exposed_partitions({"a", "b"}, others, 2) == 0
    assert exposed_partitions({"x"}, others, 0) == 0


def test_a_node_adds_the_partitions_it_would_take_past_the_bound() -> None:
    # The shard {a, d} holds one replica of each other partition: with b, the first one
    # has two (past the bound of one); with f, none; a node of the shard adds nothing.
    others = [frozenset({"a", "b", "c"}), frozenset({"d", "e", "f"}), frozenset({"b", "g", "h"})]
    assert added_exposure({"a", "d"}, ["b", "g", "a"], others, 1) == {"b": 1, "g": 0}
    assert added_exposure({"a", "d"}, ["f"], others, 1) == {"f": 1}
    assert added_exposure({"a", "d"}, ["f"], others, 2) == {"f": 0}


@given(
    shard=st.frozensets(st.sampled_from(NODES), max_size=5),
    candidates=st.lists(st.sampled_from(NODES), max_size=8),
    others=st.lists(st.frozensets(st.sampled_from(NODES), min_size=1, max_size=3), max_size=12),
    bound=st.integers(0, 3),
)
def test_what_a_node_adds_is_the_exposure_with_it_less_the_exposure_without_it(
    shard: frozenset[str], candidates: list[str], others: list[frozenset[str]], bound: int
) -> None:
    added = added_exposure(shard, candidates, others, bound)
    assert set(added) == set(candidates) - shard
    before = exposed_partitions(shard, others, bound)
    for node, count in added.items():
        assert count == exposed_partitions(shard | {node}, others, bound) - before
