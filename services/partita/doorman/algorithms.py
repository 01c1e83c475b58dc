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

from partita._proto import doorman_pb2 as pb
from partita.doorman.leases import Lease, LeaseStore


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
        unused = _unused(store, capacity, r.client)
        if store.sum_wants() - store.get(r.client).wants + r.wants <= capacity:
            return _grant(store, config, r, min(r.wants, unused), now)  # enough for all
        demands = [(lease.wants, lease.subclients) for c, lease in store.items() if c != r.client]
        demands.append((r.wants, r.subclients))
        level = water_level(capacity, demands)
        gets = min(r.wants, level * r.subclients)
        return _grant(store, config, r, min(gets, unused), now)

    return decide


def water_level(capacity: float, demands: list[tuple[float, int]]) -> float:
    """The per-subclient share at which max-min fair allocation of `capacity` settles.

    Each (wants, subclients) demand gets min(wants, level * subclients). Demands that
    want less than the level are satisfied; the rest share what is left equally. With
    total wants within capacity the level is unbounded (everyone gets what it wants).
    """
    if sum(w for w, _ in demands) <= capacity:
        return float("inf")
    remaining = capacity
    # Per-subclient appetite, smallest first: each satisfied demand frees its share.
    pending = sorted(((w / s if s > 0 else 0.0), w, s) for w, s in demands if s > 0)
    subclients = sum(s for _, _, s in pending)
    for per_subclient, wants, s in pending:
        level = remaining / subclients
        if per_subclient > level:
            return level
        remaining -= wants
        subclients -= s
    return remaining / subclients if subclients > 0 else float("inf")


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
