"""The Doorman server as a state machine: requests and events in, answers out.

No sockets, no clock, no tasks: the gRPC adapter (`server.py`) feeds it RPCs, election
outcomes and the parent's answers, each with the current time, and sends what it
returns. The same core runs under the virtual-time simulation in tests/sim/doorman.

A server is the root (its capacities come from its repository) or an intermediate /
leaf server (its capacities are leases it obtains from its parent with
GetServerCapacity: `upstream_request()` builds that request, `apply_upstream()` loads
the answer). Only the elected master answers; the others redirect (Mastership).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from partita._proto import doorman_pb2 as pb
from partita.doorman.algorithms import Request
from partita.doorman.repository import ResourceRepository, decay_factor, template
from partita.doorman.resource import Band, Resource, ResourceStatus

DEFAULT_PRIORITY = 1

# What an intermediate server uses for a resource its parent has not answered for yet:
# no capacity, short leases, so the parent's real answer takes over quickly.
PENDING_TEMPLATE = template("*", 0.0, pb.Algorithm.FAIR_SHARE, lease_length=20, refresh_interval=1)

# An intermediate server asks its parent at least this often (seconds), and backs off
# up to MAX_UPSTREAM_BACKOFF when the parent cannot be reached.
MIN_UPSTREAM_INTERVAL = 1.0
MAX_UPSTREAM_INTERVAL = 60.0
MAX_UPSTREAM_BACKOFF = 60.0


class InvalidRequest(ValueError):
    """A malformed RPC: answered with INVALID_ARGUMENT and changes nothing."""


@dataclass(frozen=True)
class ServerStatus:
    server_id: str
    is_master: bool
    master: str | None
    resources: list[ResourceStatus]


def _finite_non_negative(value: float, what: str) -> None:
    if not math.isfinite(value) or value < 0:
        raise InvalidRequest(f"{what} must be a finite number >= 0, got {value}")


def _wire_lease(resource: Resource, client: str) -> pb.Lease:
    lease = resource.store.get(client)
    return pb.Lease(
        # Whole seconds on the wire: round the expiry down so a client never believes
        # in a lease longer than the one granted.
        expiry_time=math.floor(lease.expiry),
        refresh_interval=max(1, round(lease.refresh_interval)),
        capacity=lease.has,
    )


class ServerCore:
    def __init__(self, server_id: str, repository: ResourceRepository | None = None) -> None:
        """`repository` given: a root server. None: its parent provides capacities."""
        self.server_id = server_id
        self.is_root = repository is not None
        self.repository = repository or ResourceRepository(
            pb.ResourceRepository(resources=[PENDING_TEMPLATE])
        )
        self.is_master = False
        self.master: str | None = None
        self.became_master_at = -math.inf
        self.resources: dict[str, Resource] = {}
        self.capacity_expiries: dict[str, float] = {}
        self.upstream_failures = 0
        self.master_changes = 0

    # --- election ----------------------------------------------------------------------

    def on_election(self, is_master: bool, master: str | None, now: float) -> None:
        """Winning starts from an empty state in learning mode; losing forgets all."""
        self.master = master
        if is_master == self.is_master:
            return
        self.is_master = is_master
        self.master_changes += 1
        self.resources = {}
        self.capacity_expiries = {}
        self.became_master_at = now if is_master else -math.inf

    # --- configuration -----------------------------------------------------------------

    def load_repository(self, repository: ResourceRepository) -> None:
        """A new configuration applies to existing resources at once (leases granted
        under the old one run out at their expiry, as the seed prescribes)."""
        self.repository = repository
        for rid, resource in self.resources.items():
            resource.load(repository.find(rid), self.capacity_expiries.get(rid))

    def _resource(self, resource_id: str) -> Resource:
        resource = self.resources.get(resource_id)
        if resource is None:
            resource = Resource(resource_id, self.repository.find(resource_id), self.became_master_at)
            resource.capacity_expiry = self.capacity_expiries.get(resource_id)
            self.resources[resource_id] = resource
        return resource

    def _mastership(self) -> pb.Mastership:
        out = pb.Mastership()
        if self.master:
            out.master_address = self.master
        return out

    # --- RPCs --------------------------------------------------------------------------

    def discovery(self) -> pb.DiscoveryResponse:
        return pb.DiscoveryResponse(mastership=self._mastership(), is_master=self.is_master)

    def get_capacity(self, request: pb.GetCapacityRequest, now: float) -> pb.GetCapacityResponse:
        if not request.client_id:
            raise InvalidRequest("client_id cannot be empty")
        for r in request.resource:
            if not r.resource_id:
                raise InvalidRequest("resource_id cannot be empty")
            _finite_non_negative(r.wants, "wants")
            if r.HasField("has"):
                _finite_non_negative(r.has.capacity, "has.capacity")
        if len({r.resource_id for r in request.resource}) != len(request.resource):
            raise InvalidRequest("a resource_id appears twice in one request")
        out = pb.GetCapacityResponse()
        if not self.is_master:
            out.mastership.CopyFrom(self._mastership())
            return out
        for r in request.resource:
            resource = self._resource(r.resource_id)
            has = r.has.capacity if r.HasField("has") else 0.0
            bands: list[Band] = [(r.priority or DEFAULT_PRIORITY, 1, r.wants)]
            resource.decide(Request(request.client_id, has, r.wants, 1), bands, now)
            response = out.response.add(resource_id=r.resource_id, safe_capacity=resource.safe_capacity(now))
            response.gets.CopyFrom(_wire_lease(resource, request.client_id))
        return out

    def get_server_capacity(
        self, request: pb.GetServerCapacityRequest, now: float
    ) -> pb.GetServerCapacityResponse:
        if not request.server_id:
            raise InvalidRequest("server_id cannot be empty")
        for r in request.resource:
            if not r.resource_id:
                raise InvalidRequest("resource_id cannot be empty")
            for band in r.wants:
                if band.num_clients < 1:
                    raise InvalidRequest("subclients should be > 0")
                _finite_non_negative(band.wants, "wants")
        if len({r.resource_id for r in request.resource}) != len(request.resource):
            raise InvalidRequest("a resource_id appears twice in one request")
        out = pb.GetServerCapacityResponse()
        if not self.is_master:
            out.mastership.CopyFrom(self._mastership())
            return out
        for r in request.resource:
            resource = self._resource(r.resource_id)
            bands = [(b.priority, b.num_clients, b.wants) for b in r.wants]
            wants = sum(b[2] for b in bands)
            subclients = max(1, sum(b[1] for b in bands))
            has = r.has.capacity if r.HasField("has") else 0.0
            resource.decide(Request(request.server_id, has, wants, subclients), bands, now)
            response = out.response.add(resource_id=r.resource_id, safe_capacity=resource.safe_capacity(now))
            response.gets.CopyFrom(_wire_lease(resource, request.server_id))
            response.algorithm.CopyFrom(resource.template.algorithm)
        return out

    def release_capacity(self, request: pb.ReleaseCapacityRequest) -> pb.ReleaseCapacityResponse:
        if not request.client_id:
            raise InvalidRequest("client_id cannot be empty")
        out = pb.ReleaseCapacityResponse()
        if not self.is_master:
            out.mastership.CopyFrom(self._mastership())
            return out
        for rid in request.resource_id:
            resource = self.resources.get(rid)
            if resource is not None:
                resource.release(request.client_id)
        return out

    # --- the server tree ---------------------------------------------------------------

    def upstream_request(self, now: float) -> pb.GetServerCapacityRequest | None:
        """What this (non-root master) server asks its parent for: every resource its
        requesters hold or want, their wants per priority band, and its own lease."""
        if self.is_root or not self.is_master:
            return None
        out = pb.GetServerCapacityRequest(server_id=self.server_id)
        for rid, resource in sorted(self.resources.items()):
            if resource.learning(now):
                # Until every requester has been heard from, the wants are partial:
                # asking now would let the parent give the rest away while our
                # requesters still hold (and we echo) their old leases. The parent
                # keeps our previous lease meanwhile; it outlasts learning mode.
                continue
            bands = resource.aggregate_bands(now)
            if not bands:
                continue
            r = out.resource.add(resource_id=rid)
            r.wants.extend(bands)
            expiry = self.capacity_expiries.get(rid)
            if expiry is not None and expiry > now:
                r.has.CopyFrom(
                    pb.Lease(
                        expiry_time=math.floor(expiry),
                        refresh_interval=max(1, round(resource.template.algorithm.refresh_interval)),
                        capacity=resource.template.capacity,
                    )
                )
        return out

    def apply_upstream(self, response: pb.GetServerCapacityResponse, now: float) -> float:
        """Loads the capacities the parent leased; returns seconds until the next ask.

        The parent's algorithm is pushed down with a shorter refresh interval (times
        its decay_factor), so each level reacts faster than the one it depends on.
        """
        self.upstream_failures = 0
        interval = MAX_UPSTREAM_INTERVAL
        for r in response.response:
            resource = self.resources.get(r.resource_id)
            if resource is None:
                continue
            algo = pb.Algorithm()
            algo.CopyFrom(r.algorithm)
            algo.refresh_interval = max(1, math.floor(r.gets.refresh_interval * decay_factor(r.algorithm)))
            algo.lease_length = max(algo.lease_length, algo.refresh_interval)
            local = pb.ResourceTemplate(
                identifier_glob=r.resource_id, capacity=r.gets.capacity, algorithm=algo
            )
            if r.HasField("safe_capacity"):
                local.safe_capacity = r.safe_capacity
            self.capacity_expiries[r.resource_id] = float(r.gets.expiry_time)
            resource.load(local, float(r.gets.expiry_time))
            interval = min(interval, float(r.gets.refresh_interval))
        return max(MIN_UPSTREAM_INTERVAL, interval if response.response else MIN_UPSTREAM_INTERVAL)

    def upstream_failed(self) -> float:
        """The parent could not be reached: seconds until the next try (exponential)."""
        self.upstream_failures += 1
        exponent = min(self.upstream_failures - 1, 10)
        return float(min(MAX_UPSTREAM_BACKOFF, MIN_UPSTREAM_INTERVAL * (1 << exponent)))

    # --- observation -------------------------------------------------------------------

    def status(self, now: float) -> ServerStatus:
        return ServerStatus(
            server_id=self.server_id,
            is_master=self.is_master,
            master=self.master,
            resources=[r.status(now) for _, r in sorted(self.resources.items())],
        )
