"""The state a Doorman server keeps for one resource (seed 002, "服务器状态"), and the
clean-up / insert / decide steps of a capacity request. Pure: `now` is passed in."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from partita._proto import doorman_pb2 as pb
from partita.doorman.algorithms import Algorithm, Request, algorithm_for, learn
from partita.doorman.leases import Lease, LeaseStore, MemoryLeaseStore

log = logging.getLogger("partita.doorman")

# Seed 002: a client may not ask again for a resource within five seconds; such a
# request does not run the algorithm. We answer it with the lease the client already
# holds (rather than leaving the resource out of the answer), and never apply the rule
# to a client that waited its refresh interval, should that be shorter than 5 s.
REPEAT_REQUEST_WINDOW_SECONDS = 5.0

Band = tuple[int, int, float]  # (priority, num_clients, wants)

CLEAN_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class ResourceStatus:
    resource_id: str
    capacity: float
    sum_has: float
    sum_wants: float
    clients: int
    learning: bool
    algorithm: str


class Resource:
    def __init__(
        self,
        resource_id: str,
        template: pb.ResourceTemplate,
        became_master_at: float,
        store: LeaseStore | None = None,
    ) -> None:
        self.id = resource_id
        self.store: LeaseStore = store if store is not None else MemoryLeaseStore()
        self.last_request: dict[str, float] = {}
        self.bands: dict[str, list[Band]] = {}  # per requester, for the request upstream
        self.template = template
        self.capacity_expiry: float | None = None
        self._cleaned_at = -math.inf
        self._algorithm: Algorithm = algorithm_for(template.algorithm)
        self._learner: Algorithm = learn(template.algorithm)
        algo = template.algorithm
        duration = (
            algo.learning_mode_duration if algo.HasField("learning_mode_duration") else algo.lease_length
        )
        # A new master knows no leases; until every lease the previous master granted
        # has expired or been refreshed here, it only echoes what clients say they hold.
        self.learning_mode_end = became_master_at + duration if duration > 0 else -math.inf

    def load(self, template: pb.ResourceTemplate, capacity_expiry: float | None = None) -> None:
        self.template = template
        self.capacity_expiry = capacity_expiry
        self._algorithm = algorithm_for(template.algorithm)
        self._learner = learn(template.algorithm)

    def capacity(self, now: float) -> float:
        """The template's capacity, or 0 once the lease this server holds on it lapsed."""
        if self.capacity_expiry is not None and self.capacity_expiry <= now:
            return 0.0
        return self.template.capacity

    def learning(self, now: float) -> bool:
        return now < self.learning_mode_end

    def is_repeat(self, client: str, now: float) -> bool:
        last = self.last_request.get(client)
        if last is None or not self.store.has_client(client):
            return False
        window = min(REPEAT_REQUEST_WINDOW_SECONDS, float(self.template.algorithm.refresh_interval))
        return now - last < window

    def decide(self, request: Request, bands: list[Band], now: float) -> Lease:
        """Clean up, insert and decide (seed 002, steps 1-3) for one requester."""
        self.clean(now)
        if self.is_repeat(request.client, now):
            return self.store.get(request.client)
        if request.has > 0 and not self.store.has_client(request.client) and not self.learning(now):
            log.debug(
                "%s: client %s claims %s it was never granted here", self.id, request.client, request.has
            )
        decide = self._learner if self.learning(now) else self._algorithm
        lease = decide(self.store, self.capacity(now), request, now)
        if self.capacity_expiry is not None and lease.expiry > self.capacity_expiry:
            # Never lease beyond the lease this server itself holds on the capacity.
            lease = self.store.assign(
                request.client,
                expiry=max(now, self.capacity_expiry),
                refresh_interval=lease.refresh_interval,
                has=lease.has,
                wants=lease.wants,
                subclients=lease.subclients,
            )
        self.last_request[request.client] = now
        self.bands[request.client] = bands
        return lease

    def clean(self, now: float) -> None:
        """Drops expired leases, at most once per second (seed 002: "only if not done
        in the current second"): a lease up to a second past its expiry still counts
        as held, which can only make grants smaller, never larger."""
        if now - self._cleaned_at < CLEAN_INTERVAL_SECONDS:
            return
        self._cleaned_at = now
        if self.store.clean(now):
            for gone in [c for c in self.last_request if not self.store.has_client(c)]:
                self.last_request.pop(gone, None)
                self.bands.pop(gone, None)

    def release(self, client: str) -> None:
        self.store.release(client)
        self.last_request.pop(client, None)
        self.bands.pop(client, None)

    def safe_capacity(self, now: float) -> float:
        """The template's safe capacity, else the dynamic one: capacity per client."""
        if self.template.HasField("safe_capacity"):
            return self.template.safe_capacity
        return self.capacity(now) / max(1, self.store.count())

    def aggregate_bands(self, now: float) -> list[pb.PriorityBandAggregate]:
        """Wants of every live requester, summed per priority band (for upstream)."""
        self.clean(now)
        totals: dict[int, tuple[int, float]] = {}
        for client, _lease in self.store.items():
            for priority, clients, wants in self.bands.get(client, []):
                n, w = totals.get(priority, (0, 0.0))
                totals[priority] = (n + clients, w + wants)
        return [
            pb.PriorityBandAggregate(priority=p, num_clients=n, wants=w)
            for p, (n, w) in sorted(totals.items())
        ]

    def status(self, now: float) -> ResourceStatus:
        return ResourceStatus(
            resource_id=self.id,
            capacity=self.capacity(now),
            sum_has=self.store.sum_has(),
            sum_wants=self.store.sum_wants(),
            clients=self.store.count(),
            learning=self.learning(now),
            algorithm=pb.Algorithm.Kind.Name(self.template.algorithm.kind),
        )
