"""The state a Doorman server keeps for one resource (seed 002, "服务器状态"), and the
clean-up / insert / decide steps of a capacity request. Pure: `now` is passed in."""

from __future__ import annotations

import logging
import math
from collections import deque
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

# Algorithm parameters of a capacity that follows demand (Partita's, not the seed's):
# the resource's capacity is at least `peak_multiplier` (default 2) times the highest
# sum of wants over the last `peak_memory_seconds`. DynamoDB's on-demand tables admit
# twice their previous peak (seed 000, section 4.5); the template's capacity is the
# allowance of a table that has no peak yet.
PEAK_MEMORY_PARAMETER = "peak_memory_seconds"
PEAK_MULTIPLIER_PARAMETER = "peak_multiplier"
DEFAULT_PEAK_MULTIPLIER = 2.0
# The most such a capacity grows to: an on-demand table's maximum throughput
# (DynamoDB's OnDemandThroughput), which its peaks never lift it past.
CAPACITY_CEILING_PARAMETER = "capacity_ceiling"


def parameter(algorithm: pb.Algorithm, name: str) -> str | None:
    for p in algorithm.parameters:
        if p.name == name:
            return str(p.value)
    return None


class SlidingPeak:
    """The highest value observed over the last `memory` seconds (a step function
    sampled when it changes; a monotonic queue keeps the maximum cheap)."""

    __slots__ = ("_values", "memory")

    def __init__(self, memory: float) -> None:
        self.memory = memory
        self._values: deque[tuple[float, float]] = deque()  # (time, value), values decreasing

    def observe(self, now: float, value: float) -> None:
        while self._values and self._values[-1][1] <= value:
            self._values.pop()
        self._values.append((now, value))

    def peak(self, now: float) -> float:
        # A value counts for `memory` after it was observed (the sum of wants is
        # observed at every request, so a lasting demand is seen again and again); the
        # newest value is never dropped: it is the current one.
        while len(self._values) > 1 and self._values[0][0] < now - self.memory:
            self._values.popleft()
        return self._values[0][1] if self._values else 0.0


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
        self._peak: SlidingPeak | None = None
        self._peak_multiplier = DEFAULT_PEAK_MULTIPLIER
        self._ceiling = math.inf
        self._load_peak(template.algorithm)
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
        self._load_peak(template.algorithm)

    def _load_peak(self, algorithm: pb.Algorithm) -> None:
        """Keeps the peak seen so far across reloads (an on-demand table's template
        is rewritten whenever any table changes)."""
        memory = parameter(algorithm, PEAK_MEMORY_PARAMETER)
        if memory is None:
            self._peak = None
            return
        if self._peak is None:
            self._peak = SlidingPeak(float(memory))
        self._peak.memory = float(memory)
        multiplier = parameter(algorithm, PEAK_MULTIPLIER_PARAMETER)
        self._peak_multiplier = float(multiplier) if multiplier is not None else DEFAULT_PEAK_MULTIPLIER
        ceiling = parameter(algorithm, CAPACITY_CEILING_PARAMETER)
        self._ceiling = float(ceiling) if ceiling is not None else math.inf

    def capacity(self, now: float) -> float:
        """The template's capacity, or 0 once the lease this server holds on it lapsed.
        A capacity that follows demand grows to its multiplier times the peak of the
        summed wants; only where it is configured (the root): a server below it gets
        its capacity from its parent's lease."""
        if self.capacity_expiry is not None:
            return 0.0 if self.capacity_expiry <= now else self.template.capacity
        if self._peak is not None:
            grown = max(self.template.capacity, self._peak_multiplier * self._peak.peak(now))
            return min(grown, self._ceiling)
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
        if self._peak is not None:
            # The demand as it will be with this request's wants in place of its old ones.
            old = self.store.get(request.client).wants if self.store.has_client(request.client) else 0.0
            self._peak.observe(now, self.store.sum_wants() - old + request.wants)
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
