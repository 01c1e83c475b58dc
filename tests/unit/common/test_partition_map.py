"""The partition map: validation, floor/ceiling lookups, iteration, even splits."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.common.partition_map import HASH_SPACE, Partition, PartitionMap, split_evenly

hashes = st.one_of(st.integers(0, HASH_SPACE - 1), st.sampled_from([0, 1, HASH_SPACE // 2, HASH_SPACE - 1]))


@st.composite
def maps(draw: st.DrawFn) -> PartitionMap:
    cuts = draw(st.sets(st.integers(1, HASH_SPACE - 1), max_size=40))
    # Tiny ranges next to each other are where an off-by-one in a lookup shows.
    cuts |= draw(st.sets(st.integers(1, 40), max_size=5))
    bounds = [0, *sorted(cuts), HASH_SPACE]
    parts = [
        Partition(f"p{i}", start, end, ("n1", "n2", "n3"), "n1")
        for i, (start, end) in enumerate(itertools.pairwise(bounds))
    ]
    shuffled = draw(st.permutations(parts))  # the constructor must not rely on input order
    return PartitionMap(shuffled, version=draw(st.integers(0, 100)))


def linear_floor(pmap: PartitionMap, h: int) -> Partition:
    return [p for p in pmap.partitions if p.start <= h][-1]


@given(maps(), st.lists(hashes, min_size=1, max_size=20))
def test_floor_lookup_matches_a_linear_search(pmap: PartitionMap, hs: list[int]) -> None:
    boundaries = [p.start for p in pmap] + [p.end - 1 for p in pmap]
    for h in hs + boundaries:
        found = pmap.floor_lookup(h)
        assert found == linear_floor(pmap, h)
        assert found.start <= h < found.end


@given(maps(), st.lists(hashes, min_size=1, max_size=20))
def test_ceiling_lookup_matches_a_linear_search(pmap: PartitionMap, hs: list[int]) -> None:
    for h in hs + [p.start for p in pmap]:
        expected = next((p for p in pmap.partitions if p.start >= h), None)
        assert pmap.ceiling_lookup(h) == expected


@given(maps(), hashes)
def test_partitions_from_walks_in_hash_order_from_the_holder(pmap: PartitionMap, h: int) -> None:
    walked = list(pmap.partitions_from(h))
    assert walked[0] == pmap.floor_lookup(h)
    assert walked[-1].end == HASH_SPACE
    assert all(a.end == b.start for a, b in itertools.pairwise(walked))


@given(maps())
def test_map_keeps_partitions_sorted_by_start(pmap: PartitionMap) -> None:
    starts = [p.start for p in pmap]
    assert starts == sorted(starts)
    assert len(pmap) == len(starts)


def part(pid: str, start: int, end: int) -> Partition:
    return Partition(pid, start, end)


@pytest.mark.parametrize(
    ("partitions", "reason"),
    [
        ([], "empty"),
        ([part("a", 1, HASH_SPACE)], "does not start at 0"),
        ([part("a", 0, HASH_SPACE - 1)], "does not reach 2**64"),
        ([part("a", 0, 10), part("b", 11, HASH_SPACE)], "gap"),
        ([part("a", 0, 11), part("b", 10, HASH_SPACE)], "overlap"),
        ([part("a", 0, 10), part("b", 10, 20), part("c", 10, HASH_SPACE)], "duplicate start"),
        ([part("a", 0, 10), part("a", 10, HASH_SPACE)], "duplicate id"),
    ],
)
def test_invalid_maps_are_rejected(partitions: list[Partition], reason: str) -> None:
    with pytest.raises(ValueError):
        PartitionMap(partitions)


@pytest.mark.parametrize(("start", "end"), [(5, 5), (6, 5), (-1, 5), (0, HASH_SPACE + 1)])
def test_partitions_with_empty_or_out_of_space_ranges_are_rejected(start: int, end: int) -> None:
    with pytest.raises(ValueError):
        Partition("p", start, end)


def test_a_leader_must_be_one_of_the_replicas() -> None:
    with pytest.raises(ValueError):
        Partition("p", 0, HASH_SPACE, ("n1", "n2"), "n9")


@pytest.mark.parametrize("h", [-1, HASH_SPACE])
def test_lookups_reject_hashes_outside_the_space(h: int) -> None:
    pmap = PartitionMap([part("a", 0, HASH_SPACE)])
    for lookup in (pmap.floor_lookup, pmap.ceiling_lookup, pmap.partitions_from):
        with pytest.raises(ValueError):
            lookup(h)


@given(st.integers(1, 5000))
def test_split_evenly_covers_the_space_exactly_in_near_equal_ranges(n: int) -> None:
    ranges = split_evenly(n)
    assert len(ranges) == n
    assert ranges[0][0] == 0 and ranges[-1][1] == HASH_SPACE
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    sizes = {end - start for start, end in ranges}
    assert max(sizes) - min(sizes) <= 1


def test_split_evenly_rejects_zero_ranges() -> None:
    with pytest.raises(ValueError):
        split_evenly(0)


def test_split_evenly_into_four_cuts_at_quarters() -> None:
    q = HASH_SPACE // 4
    assert split_evenly(4) == [(0, q), (q, 2 * q), (2 * q, 3 * q), (3 * q, HASH_SPACE)]


def test_evenly_builds_a_valid_map_with_the_given_replicas() -> None:
    pmap = PartitionMap.evenly(["a", "b", "c"], replicas=[("n1",), ("n2",), ("n3",)], version=3)
    assert [p.partition_id for p in pmap] == ["a", "b", "c"]
    assert [p.replicas for p in pmap] == [("n1",), ("n2",), ("n3",)]
    assert pmap.version == 3
    assert pmap.floor_lookup(HASH_SPACE - 1).partition_id == "c"


def test_maps_and_partitions_are_immutable() -> None:
    pmap = PartitionMap.evenly(["a"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        pmap.version = 9  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        pmap.partitions[0].leader = "x"  # type: ignore[misc]


def test_with_partition_changes_leadership_in_a_newer_map() -> None:
    pmap = PartitionMap(
        [Partition("a", 0, 100, ("n1", "n2")), Partition("b", 100, HASH_SPACE, ("n1", "n2"))],
        version=7,
    )
    newer = pmap.with_partition(dataclasses.replace(pmap.by_id("b"), leader="n2"))
    assert newer.version == 8
    assert newer.floor_lookup(500).leader == "n2"
    assert pmap.floor_lookup(500).leader is None  # the old map is untouched
    assert newer.by_id("a") is pmap.by_id("a")


def test_with_partition_refuses_to_change_a_range() -> None:
    pmap = PartitionMap([part("a", 0, 100), part("b", 100, HASH_SPACE)])
    with pytest.raises(ValueError):
        pmap.with_partition(part("b", 101, HASH_SPACE))


def test_split_replaces_a_partition_by_two_children_in_a_newer_map() -> None:
    pmap = PartitionMap(
        [Partition("a", 0, 100, ("n1",), "n1"), Partition("b", 100, HASH_SPACE, ("n2",), "n2")],
        version=1,
    )
    newer = pmap.split("b", 1000, "b1", "b2")
    assert newer.version == 2
    assert [(p.partition_id, p.start, p.end) for p in newer] == [
        ("a", 0, 100),
        ("b1", 100, 1000),
        ("b2", 1000, HASH_SPACE),
    ]
    assert newer.floor_lookup(999).partition_id == "b1"
    assert newer.floor_lookup(1000).partition_id == "b2"
    assert newer.by_id("b2").replicas == ("n2",) and newer.by_id("b2").leader == "n2"


@pytest.mark.parametrize("at", [100, 99, HASH_SPACE])
def test_split_point_must_be_strictly_inside_the_partition(at: int) -> None:
    pmap = PartitionMap([part("a", 0, 100), part("b", 100, HASH_SPACE)])
    with pytest.raises(ValueError):
        pmap.split("b", at, "b1", "b2")


def test_by_id_raises_key_error_for_unknown_partition() -> None:
    with pytest.raises(KeyError):
        PartitionMap.evenly(["a"]).by_id("zz")
