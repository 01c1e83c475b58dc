"""Capacity-sharing algorithms: plain functions over a lease store, chosen by kind.

Each algorithm decides what one requester gets and records it with `store.assign`. They
never hand out more than is unused (`capacity - sum_has + own has`), so the sum of the
grants stays within capacity whatever order requests arrive in; the only exception is
learning mode, which echoes leases granted by a previous master (seed 002, "学习模式").
Capacity freed by a client asking less is handed to the others as they refresh.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter

from partita._proto import doorman_pb2 as pb
from partita.doorman.leases import Demand, Lease, LeaseStore


@dataclass(frozen=True, slots=True)
class Request:
    client: str
    has: float  # what the client says it holds (0 without a lease)
    wants: float
    subclients: int = 1  # clients behind a downstream server; 1 for a client


# (store, capacity, request, now) -> the lease just assigned
Algorithm = Callable[[LeaseStore, float, Request, float], Lease]


def _terms(config: pb.Algorithm) -> tuple[float, float]:
    return float(config.lease_length), float(config.refresh_interval)


def _grant(store: LeaseStore, config: pb.Algorithm, r: Request, has: float, now: float) -> Lease:
    length, interval = _terms(config)
    return store.assign(
        r.client,
        expiry=now + length,
        refresh_interval=interval,
        has=has,
        wants=r.wants,
        subclients=r.subclients,
    )


def _unused(store: LeaseStore, capacity: float, client: str) -> float:
    """Capacity nobody else holds: the most this client can be given right now."""
    return max(0.0, capacity - store.sum_has() + store.get(client).has)


def no_algorithm(config: pb.Algorithm) -> Algorithm:
    """Everyone gets what they want, capacity notwithstanding (monitoring only)."""

    def decide(store: LeaseStore, capacity: float, r: Request, now: float) -> Lease:
        return _grant(store, config, r, r.wants, now)

    return decide


def static(config: pb.Algorithm) -> Algorithm:
    """Every requester gets up to the configured capacity, each on its own."""

    def decide(store: LeaseStore, capacity: float, r: Request, now: float) -> Lease:
        return _grant(store, config, r, min(capacity, r.wants), now)

    return decide


def proportional_share(config: pb.Algorithm) -> Algorithm:
    """Everyone gets what they want unless overloaded; then each gets at least its equal
    share (if it wants it), topped up from what the modest ones leave, in proportion to
    how much more than the equal share each wants."""

    def decide(store: LeaseStore, capacity: float, r: Request, now: float) -> Lease:
        count = store.count() - store.get(r.client).subclients + r.subclients
        unused = _unused(store, capacity, r.client)
        equal_share = capacity / count
        own_equal = equal_share * r.subclients
        sum_wants = store.sum_wants() - store.get(r.client).wants + r.wants
        if sum_wants <= capacity or r.wants <= own_equal:
            return _grant(store, config, r, min(r.wants, unused), now)
        extra_capacity = 0.0
        extra_need = 0.0
        for client, lease in store.items():
            if client == r.client:
                continue
            entitled = equal_share * lease.subclients
            if lease.wants < entitled:
                extra_capacity += entitled - lease.wants
            else:
                extra_need += lease.wants - entitled
        extra_need += r.wants - own_equal
        gets = own_equal + (r.wants - own_equal) * (extra_capacity / extra_need)
        return _grant(store, config, r, min(gets, unused), now)

    return decide


def fair_share(config: pb.Algorithm) -> Algorithm:
    """Everyone gets what they want unless overloaded; then each is guaranteed its equal
    share, and what the modest ones leave is shared equally (per subclient) among those
    wanting more, in rounds until nothing is left or nobody wants more (water-filling).
    Example (seed 002): capacity 120, wants 1000/50/10 -> 60/50/10."""

    def decide(store: LeaseStore, capacity: float, r: Request, now: float) -> Lease:
        old = store.get(r.client)
        unused = _unused(store, capacity, r.client)
        if store.sum_wants() - old.wants + r.wants <= capacity:
            return _grant(store, config, r, min(r.wants, unused), now)  # enough for all
        # Record the new wants first (holding what it held), so the store's sorted
        # demands include this request; the grant below replaces the entry.
        store.assign(
            r.client,
            expiry=old.expiry,
            refresh_interval=old.refresh_interval,
            has=old.has,
            wants=r.wants,
            subclients=r.subclients,
        )
        level = sorted_water_level(capacity, store.demands())
        return _grant(store, config, r, min(r.wants, level * r.subclients, unused), now)

    return decide


def water_level(capacity: float, demands: list[tuple[float, int]]) -> float:
    """The per-subclient share at which max-min fair allocation of `capacity` settles.

    Each (wants, subclients) demand gets min(wants, level * subclients). Demands that
    want less than the level are satisfied; the rest share what is left equally. With
    total wants within capacity the level is unbounded (everyone gets what it wants).
    """
    entries = sorted((w / s, w, s, "") for w, s in demands if s > 0)
    return sorted_water_level(capacity, entries)


def sorted_water_level(capacity: float, demands: list[Demand]) -> float:
    """water_level() over demands already sorted by wants per subclient, in
    O(n) C-level prefix sums plus O(log n) steps (decisions run on every request).

    The satisfied demands are a prefix of that order: the first unsatisfied one is the
    first k whose wants per subclient exceed what is left per remaining subclient.
    """
    n = len(demands)
    wants: list[float] = list(accumulate(map(itemgetter(1), demands), initial=0.0))
    subclients: list[int] = list(accumulate(map(itemgetter(2), demands), initial=0))
    if wants[n] <= capacity:
        return float("inf")

    def unsatisfied(k: int) -> bool:
        # per_subclient[k] > (capacity - wants[:k]) / (subclients after k-1), no division
        per_subclient: float = demands[k][0]
        return per_subclient * (subclients[n] - subclients[k]) > capacity - wants[k]

    low, high = 0, n - 1  # some demand is unsatisfied: total wants exceed capacity
    while low < high:
        mid = (low + high) // 2
        if unsatisfied(mid):
            high = mid
        else:
            low = mid + 1
    return max(0.0, (capacity - wants[low]) / (subclients[n] - subclients[low]))


def learn(config: pb.Algorithm) -> Algorithm:
    """Learning mode: record what the client says it has and give exactly that back, so
    a new master rebuilds the previous master's state before it allocates anything."""

    def decide(store: LeaseStore, capacity: float, r: Request, now: float) -> Lease:
        return _grant(store, config, r, r.has, now)

    return decide


ALGORITHMS: dict[int, Callable[[pb.Algorithm], Algorithm]] = {
    pb.Algorithm.NO_ALGORITHM: no_algorithm,
    pb.Algorithm.STATIC: static,
    pb.Algorithm.PROPORTIONAL_SHARE: proportional_share,
    pb.Algorithm.FAIR_SHARE: fair_share,
}


def algorithm_for(config: pb.Algorithm) -> Algorithm:
    """The configured algorithm; NONE for a kind this server does not know (seed 002:
    an algorithm that cannot be instantiated falls back to "None", and is reported)."""
    return ALGORITHMS.get(config.kind, no_algorithm)(config)
