"""The router's rate for a provisioned table from its Doorman leases.

The router is a Doorman client of `table/<name>/rcu` and `table/<name>/wcu`; the
client library refreshes the leases in the background, so reading a rate is a field
read. Each router wants the table's whole provisioned rate, so FAIR_SHARE splits it
evenly among the routers serving the table and the sum never exceeds it. (Wants
estimated from use would let a busy router take an idle one's share; they need the
router to survive a zero lease on a table's first request, which is not done yet.)
"""

from __future__ import annotations

from partita.common.throughput import Kind
from partita.control.model import TableRecord
from partita.doorman.client import Client, RateResource
from partita.router.admission import resource_id


class DoormanRate:
    def __init__(self, client: Client) -> None:
        self.client = client
        self._resources: dict[str, RateResource] = {}

    def _resource(self, record: TableRecord, kind: Kind) -> RateResource:
        rid = resource_id(record.name, kind)
        wants = float(record.read_capacity if kind == "read" else record.write_capacity)
        resource = self._resources.get(rid)
        if resource is None:
            resource = self._resources[rid] = self.client.rate(rid, wants=wants)
        elif resource.state.wants != wants:  # UpdateTable: asked for at the next refresh
            resource.state.wants = wants
        return resource

    def rate(self, record: TableRecord, kind: Kind) -> float:
        resource = self._resource(record, kind)
        if resource.state.expiry == 0.0:
            # No answer yet (the resource was asked for on this request): the table's
            # rate for the few milliseconds until the first lease, rather than refusing
            # every table's first requests.
            return float(record.read_capacity if kind == "read" else record.write_capacity)
        return resource.capacity

    def used(self, record: TableRecord, kind: Kind, units: float, throttled: bool) -> None:
        return None

    async def forget(self, live: set[str]) -> None:
        """Releases the leases of tables that no longer exist."""
        for rid in [r for r in self._resources if r.split("/")[1] not in live]:
            await self._resources.pop(rid).close()
