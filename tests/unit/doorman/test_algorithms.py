"""Doorman's algorithms, table-driven from the documented examples (seed 002 and
youtube/doorman's algorithm tests), with sum(has) <= capacity checked after every grant."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from partita._proto import doorman_pb2 as pb
from partita.doorman.algorithms import Request, algorithm_for, learn, water_level
from partita.doorman.leases import MemoryLeaseStore

EPS = 1e-9
NOW = 1000.0
CONFIG = {
    kind: pb.Algorithm(kind=kind, lease_length=300, refresh_interval=5)  # type: ignore[arg-type]
    for kind in pb.Algorithm.Kind.values()
}


@dataclass(frozen=True)
class Case:
    client: str
    wants: float
    should_get: float
    subclients: int = 1


def run(
    kind: int, capacity: float, cases: list[Case], *, preload: bool, bounded: bool = True
) -> MemoryLeaseStore:
    """Each case asks once, in order; `preload` first records every client's wants
    (with nothing granted), as a server that has heard from all of them would."""
    store = MemoryLeaseStore()
    algorithm = algorithm_for(CONFIG[kind])
    if preload:
        for c in cases:
            store.assign(
                c.client, expiry=NOW + 300, refresh_interval=5, has=0, wants=c.wants, subclients=c.subclients
            )
    for c in cases:
        lease = algorithm(store, capacity, Request(c.client, 0.0, c.wants, c.subclients), NOW)
        assert lease.has == pytest.approx(c.should_get), c
        if bounded:
            assert store.sum_has() <= capacity + EPS
            assert sum(lease.has for _, lease in store.items()) <= capacity + EPS
    return store


def test_none_gives_everyone_what_it_wants_even_beyond_capacity() -> None:
    store = run(
        pb.Algorithm.NO_ALGORITHM, 0, [Case("a", 10, 10), Case("b", 100, 100)], preload=False, bounded=False
    )
    assert store.sum_has() == 110


def test_static_caps_each_client_at_capacity_on_its_own() -> None:
    run(
        pb.Algorithm.STATIC,
        100,
        [Case("a", 100, 100), Case("b", 10, 10), Case("c", 120, 100)],
        preload=False,
        bounded=False,
    )


FAIR_SHARE_CASES = {
    "documented: 120 over wants 1000/50/10 -> 60/50/10": (
        120,
        [Case("c0", 1000, 60), Case("c1", 50, 50), Case("c2", 10, 10)],
    ),
    "two over their share split what the modest one leaves": (
        120,
        [Case("c0", 1000, 55), Case("c1", 60, 55), Case("c2", 10, 10)],
    ),
    "subclients: shares per subclient": (
        120,
        [Case("c0", 1000, 60, 6), Case("c1", 500, 40, 4), Case("c2", 200, 20, 2)],
    ),
    "subclients: a server wanting less than its share frees it": (
        1000,
        [Case("c0", 2000, 200, 10), Case("c1", 500, 200, 10), Case("c2", 700, 600, 30)],
    ),
    "under-subscribed: everyone gets what it wants": (
        500,
        [Case("c0", 100, 100), Case("c1", 200, 200), Case("c2", 150, 150)],
    ),
}


@pytest.mark.parametrize("capacity,cases", FAIR_SHARE_CASES.values(), ids=FAIR_SHARE_CASES.keys())
def test_fair_share_documented_examples(capacity: float, cases: list[Case]) -> None:
    run(pb.Algorithm.FAIR_SHARE, capacity, cases, preload=True)


def test_fair_share_first_round_gives_no_more_than_is_unused() -> None:
    # Nothing preloaded: the first asker sees only itself and takes all it wants;
    # the later ones get what is left, never more.
    run(
        pb.Algorithm.FAIR_SHARE,
        120,
        [Case("c0", 100, 100), Case("c1", 50, 20), Case("c2", 10, 0)],
        preload=False,
    )


def test_fair_share_converges_to_the_documented_split_as_clients_refresh() -> None:
    store = MemoryLeaseStore()
    algorithm = algorithm_for(CONFIG[pb.Algorithm.FAIR_SHARE])
    wants = {"c0": 1000.0, "c1": 50.0, "c2": 10.0}
    for _ in range(4):
        for client, w in wants.items():
            algorithm(store, 120, Request(client, store.get(client).has, w), NOW)
            assert store.sum_has() <= 120 + EPS
    assert {c: round(lease.has, 6) for c, lease in store.items()} == {"c0": 60, "c1": 50, "c2": 10}


PROPORTIONAL_CASES = {
    "documented: top-up in proportion to the excess": (
        120,
        [Case("c0", 60, 55), Case("c1", 60, 55), Case("c2", 10, 10)],
        True,
    ),
    "first round: the late asker gets what is left": (
        120,
        [Case("c0", 60, 60), Case("c1", 75, 60), Case("c2", 10, 0)],
        False,
    ),
    "subclients": (
        120,
        [Case("c0", 65, 60, 3), Case("c1", 45, 40, 2), Case("c2", 20, 20, 1)],
        True,
    ),
}


@pytest.mark.parametrize("capacity,cases,preload", PROPORTIONAL_CASES.values(), ids=PROPORTIONAL_CASES.keys())
def test_proportional_share_documented_examples(capacity: float, cases: list[Case], preload: bool) -> None:
    run(pb.Algorithm.PROPORTIONAL_SHARE, capacity, cases, preload=preload)


@pytest.mark.parametrize("kind", [pb.Algorithm.FAIR_SHARE, pb.Algorithm.PROPORTIONAL_SHARE])
def test_random_traffic_never_grants_more_than_capacity(kind: int) -> None:
    rng = random.Random(kind)
    store = MemoryLeaseStore()
    algorithm = algorithm_for(CONFIG[kind])
    now = 0.0
    for _ in range(3000):
        now += rng.random()
        store.clean(now)
        client = f"c{rng.randrange(12)}"
        capacity = rng.choice([0.0, 50.0, 500.0])
        request = Request(client, store.get(client).has, rng.uniform(0, 200), rng.randint(1, 4))
        # A capacity cut leaves earlier grants in place until they refresh; what is
        # never allowed is a new grant that takes the total further over.
        before = store.sum_has()
        lease = algorithm(store, capacity, request, now)
        assert lease.has >= 0
        assert store.sum_has() <= max(capacity, before) + EPS


def test_learning_mode_echoes_what_the_client_says_it_has() -> None:
    store = MemoryLeaseStore()
    learner = learn(CONFIG[pb.Algorithm.FAIR_SHARE])
    assert learner(store, 10, Request("a", 40, 100), NOW).has == 40
    assert learner(store, 10, Request("b", 0, 100), NOW).has == 0  # new client: nothing
    assert store.sum_wants() == 200


def test_leases_carry_the_configured_length_and_refresh_interval() -> None:
    store = MemoryLeaseStore()
    lease = algorithm_for(CONFIG[pb.Algorithm.STATIC])(store, 10, Request("a", 0, 5), NOW)
    assert (lease.expiry, lease.refresh_interval) == (NOW + 300, 5)


def test_unknown_kind_falls_back_to_none() -> None:
    config = pb.Algorithm(kind=42, lease_length=10, refresh_interval=1)  # type: ignore[arg-type]
    assert algorithm_for(config)(MemoryLeaseStore(), 1, Request("a", 0, 7), NOW).has == 7


@pytest.mark.parametrize(
    "capacity,demands,level",
    [
        (120, [(1000, 1), (50, 1), (10, 1)], 60),
        (120, [(30, 1), (30, 1)], float("inf")),
        (0, [(5, 1)], 0),
        (100, [(100, 4), (100, 1)], 20),
    ],
)
def test_water_level(capacity: float, demands: list[tuple[float, int]], level: float) -> None:
    assert water_level(capacity, demands) == pytest.approx(level)


def reference_water_level(capacity: float, demands: list[tuple[float, int]]) -> float:
    """Water-filling done the slow, obvious way: satisfy the smallest appetite while
    it is below the equal share of what is left, repeat."""
    if sum(w for w, _ in demands) <= capacity:
        return float("inf")
    pending = sorted(demands, key=lambda d: d[0] / d[1])
    remaining, subclients = capacity, sum(s for _, s in pending)
    while pending and pending[0][0] / pending[0][1] <= remaining / subclients:
        w, s = pending.pop(0)
        remaining -= w
        subclients -= s
    return remaining / subclients


def test_the_fast_water_level_matches_the_obvious_one_on_random_demands() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        demands = [
            (rng.choice([0.0, rng.uniform(0, 100)]), rng.randint(1, 5)) for _ in range(rng.randint(1, 30))
        ]
        capacity = rng.uniform(0, 400)
        assert water_level(capacity, demands) == pytest.approx(reference_water_level(capacity, demands))


def test_the_store_keeps_demands_sorted_through_assign_and_release() -> None:
    rng = random.Random(3)
    store = MemoryLeaseStore()
    for step in range(3000):
        client = f"c{rng.randrange(20)}"
        if rng.random() < 0.2:
            store.release(client)
        else:
            store.assign(
                client,
                expiry=step,
                refresh_interval=1,
                has=0,
                wants=rng.uniform(0, 50),
                subclients=rng.randint(1, 3),
            )
        expected = sorted(
            (lease.wants / lease.subclients, lease.wants, lease.subclients, c) for c, lease in store.items()
        )
        assert store.demands() == expected
