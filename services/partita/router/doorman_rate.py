"""The router's rate for a table from its Doorman leases.

The router is a Doorman client of `table/<name>/rcu` and `table/<name>/wcu`; the
client library refreshes the leases in the background, so reading a rate is a field
read. The resources' capacity is the table's provisioned throughput, or an on-demand
table's allowance across the cluster (operator/partita/autoadmin/doorman_config.py).

Each router wants what it measures it needs (partita.doorman.wants: the units it was
asked for, admitted or refused, smoothed, plus headroom), so under FAIR_SHARE a busy
router takes what an idle one leaves. A router's wants on a table start at the table's
whole rate (optimistic: a table's first requests are not refused for want of a
history), never fall below `FLOOR_SHARE` of it (an idle router's next request is not
refused until its next refresh), and never exceed a provisioned table's rate.

On-demand tables: a router wants twice its measured demand
(`throughput.ON_DEMAND_HEADROOM`), and the table's capacity is the peak of the
routers' summed wants over 30 minutes: each lease absorbs a jump to twice the
router's demand at once, the cluster admits twice its previous peak (not every router
twice its own, as without Doorman), and the allowance rises as traffic grows (a
router held back asks for twice its grant). Its wants start at, and never fall below,
`ON_DEMAND_FLOOR_SHARE` of DynamoDB's initial allowance (1,000 WCU / 3,000 RCU).

Until the first lease arrives (the first milliseconds), the router uses the table's
rate or this router's own on-demand allowance.
"""

from __future__ import annotations

import math

from partita.common import throughput
from partita.common.throughput import Kind
from partita.control.model import TableRecord
from partita.doorman import wants
from partita.doorman.client import Client, RateResource
from partita.router.admission import resource_id

# An idle router still asks for this share of a provisioned table's rate.
FLOOR_SHARE = 0.05
MIN_WANTS = 1.0


class DoormanRate:
    def __init__(self, client: Client, *, half_life: float = wants.HALF_LIFE_SECONDS) -> None:
        self.client = client
        self.half_life = half_life  # how slowly a router's wants follow a falling demand
        self._resources: dict[tuple[str, Kind], RateResource] = {}

    def _resource(
        self, record: TableRecord, kind: Kind, initial: float, floor: float, ceiling: float, headroom: float
    ) -> RateResource:
        key = (record.name, kind)
        resource = self._resources.get(key)
        if resource is None:
            resource = self._resources[key] = self.client.rate(
                resource_id(record.name, kind),
                initial_wants=initial,
                min_wants=floor,
                max_wants=ceiling,
                headroom=headroom,
                half_life=self.half_life,
            )
        demand = resource.state.demand
        if demand is not None and (demand.ceiling, demand.floor, demand.headroom) != (
            ceiling,
            floor,
            headroom,
        ):
            # UpdateTable (throughput or billing mode): asked for at the next refresh.
            demand.ceiling, demand.floor, demand.headroom = ceiling, floor, headroom
        return resource

    def _rate(self, resource: RateResource, whole: float) -> float:
        if resource.state.expiry == 0.0:
            # No answer yet (the resource was asked for on this request): the table's
            # rate for the few milliseconds until the first lease, rather than refusing
            # every table's first requests.
            return whole
        return resource.capacity

    def rate(self, record: TableRecord, kind: Kind) -> float:
        provisioned = float(record.read_capacity if kind == "read" else record.write_capacity)
        floor = max(MIN_WANTS, FLOOR_SHARE * provisioned)
        resource = self._resource(record, kind, provisioned, floor, provisioned, wants.HEADROOM)
        return self._rate(resource, provisioned)

    def on_demand_rate(self, record: TableRecord, kind: Kind, allowance: float) -> float:
        initial = min(
            throughput.on_demand_allowance(0.0, kind, record.warm_throughput),
            throughput.on_demand_ceiling(record.on_demand_max, kind),
        )
        floor = throughput.ON_DEMAND_FLOOR_SHARE * initial
        resource = self._resource(record, kind, floor, floor, math.inf, throughput.ON_DEMAND_HEADROOM)
        # Never below the floor it asks for: a lease of zero (the table's resource not yet
        # loaded by Doorman, or a new master's learning mode) must not throttle a normal
        # load on an on-demand table, which has no provisioned savings to draw on.
        return max(self._rate(resource, allowance), floor)

    def used(self, record: TableRecord, kind: Kind, units: float, throttled: bool) -> None:
        resource = self._resources.get((record.name, kind))
        if resource is not None:
            # A refused request consumed nothing; it counts as demand (what the table's
            # requests cost on average, Admission.admit), so a router held back asks for more.
            resource.record(units, throttled)

    async def forget(self, live: set[str]) -> None:
        """Releases the leases of tables that no longer exist."""
        for key in [k for k in self._resources if k[0] not in live]:
            await self._resources.pop(key).close()
