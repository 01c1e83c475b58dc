"""Leases a Doorman server has granted for one resource, and the store that keeps them.

Algorithms read and write leases only through the `LeaseStore` interface, so they stay
plain functions that a test can drive with any store. Time is passed in (`now`, in the
server's clock seconds): nothing here reads a clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Lease:
    """What one client (or downstream server) holds: `has` until `expiry`."""

    expiry: float
    refresh_interval: float
    has: float
    wants: float
    subclients: int  # 1 for a client; the clients behind it for a server


NO_LEASE = Lease(expiry=0.0, refresh_interval=0.0, has=0.0, wants=0.0, subclients=0)


class LeaseStore(Protocol):
    def sum_has(self) -> float: ...
    def sum_wants(self) -> float: ...
    def count(self) -> int:
        """Subclients over every lease: the number of clients sharing the resource."""
        ...

    def get(self, client: str) -> Lease: ...
    def has_client(self, client: str) -> bool: ...
    def assign(
        self,
        client: str,
        *,
        expiry: float,
        refresh_interval: float,
        has: float,
        wants: float,
        subclients: int,
    ) -> Lease: ...
    def release(self, client: str) -> None: ...
    def clean(self, now: float) -> int:
        """Drops the leases expired at `now`; returns how many."""
        ...

    def items(self) -> Iterator[tuple[str, Lease]]: ...
    def demands(self) -> list[Demand]:
        """Every lease's (wants per subclient, wants, subclients, client), sorted:
        what max-min fair sharing needs, kept in order as leases change."""
        ...


Demand = tuple[float, float, int, str]


def _demand(client: str, lease: Lease) -> Demand:
    return (
        lease.wants / lease.subclients if lease.subclients > 0 else 0.0,
        lease.wants,
        lease.subclients,
        client,
    )


class MemoryLeaseStore:
    """A dict of leases with running totals (the algorithms read the totals on every
    request; recomputing them would make each decision linear in the client count)."""

    def __init__(self) -> None:
        self._leases: dict[str, Lease] = {}
        self._sum_has = 0.0
        self._sum_wants = 0.0
        self._count = 0
        self._demands: list[Demand] = []

    def sum_has(self) -> float:
        return self._sum_has

    def sum_wants(self) -> float:
        return self._sum_wants

    def count(self) -> int:
        return self._count

    def get(self, client: str) -> Lease:
        return self._leases.get(client, NO_LEASE)

    def has_client(self, client: str) -> bool:
        return client in self._leases

    def assign(
        self,
        client: str,
        *,
        expiry: float,
        refresh_interval: float,
        has: float,
        wants: float,
        subclients: int,
    ) -> Lease:
        old = self._leases.get(client)
        lease = Lease(expiry, refresh_interval, has, wants, subclients)
        self._leases[client] = lease
        if old is None or (old.wants, old.subclients) != (wants, subclients):
            if old is not None:
                self._forget_demand(client, old)
            bisect.insort(self._demands, _demand(client, lease))
        self._add(lease, old or NO_LEASE)
        return lease

    def _forget_demand(self, client: str, lease: Lease) -> None:
        i = bisect.bisect_left(self._demands, _demand(client, lease))
        del self._demands[i]

    def release(self, client: str) -> None:
        old = self._leases.pop(client, None)
        if old is not None:
            self._forget_demand(client, old)
            self._add(NO_LEASE, old)
            if not self._leases:  # no float residue once nobody holds anything
                self._sum_has = self._sum_wants = 0.0

    def clean(self, now: float) -> int:
        expired = [client for client, lease in self._leases.items() if lease.expiry <= now]
        for client in expired:
            self.release(client)
        return len(expired)

    def items(self) -> Iterator[tuple[str, Lease]]:
        return iter(list(self._leases.items()))

    def demands(self) -> list[Demand]:
        return self._demands

    def _add(self, new: Lease, old: Lease) -> None:
        self._sum_has += new.has - old.has
        self._sum_wants += new.wants - old.wants
        self._count += new.subclients - old.subclients
