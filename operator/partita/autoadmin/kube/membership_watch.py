"""Adopting published memberships as soon as they are written.

A group's leader publishes the membership repair decided (docs/kubernetes.md, "Repair");
the Partition handler adopts it at every reconcile, but a resync comes every 30 s.
This watch follows the records in etcd and writes a changed one's members into the
Partition's spec at once: the spec change runs the handler (which hosts the members and
updates status), and routers, which route by the spec, see a rebuilt member within the
watch's latency rather than a resync's. Idempotent: it writes only a spec that differs,
and a passive operator doing the same writes the same members.

Alive only while it has work, like the Doorman publisher: handlers call `started()`,
and it stops with the operator's loop.

It is the only writer of a published membership into a spec: the Partition handler,
which may hold an older record than the one listed here, hosts the published members
but leaves the spec alone while the watch runs. A missed watch event is caught at the
next listing (every IDLE_SECONDS at most), and a restarted operator adopts every record
that differs from its spec.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from partita.autoadmin.kube import builders, naming
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.background import PassesInBackground
from partita.autoadmin.kube.decisions import Member
from partita.autoadmin.kube.grpc_director import published_members
from partita.control.store import WatchedMemberships

log = logging.getLogger(__name__)

# Seconds between listings when nothing wakes the watch, and after a failed pass.
IDLE_SECONDS = 5.0


class MembershipWatch(PassesInBackground):
    doing = "following published memberships"

    def __init__(self, store: WatchedMemberships, api: KubeApi, namespace: str) -> None:
        self.store = store
        self.api = api
        self.namespace = namespace
        self._seen: dict[str, bytes] = {}
        self.adopted = 0  # specs written (tests wait on it)

    async def wait(self) -> None:
        await self.store.wait_for_change(IDLE_SECONDS)

    async def pass_once(self) -> None:
        records = await self.store.list_memberships()
        for name, record in records.items():
            if self._seen.get(name) == record:
                continue
            await self._adopt(name, published_members(record))
            self._seen[name] = record
        for name in self._seen.keys() - records.keys():
            del self._seen[name]

    async def _adopt(self, name: str, members: Sequence[Member]) -> None:
        obj = await self.api.get(naming.API_VERSION, naming.PARTITIONS, self.namespace, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        if set(builders.members_of_spec(obj["spec"]["members"])) == set(members):
            return
        wanted = builders.member_specs(members)
        await self.api.patch_spec(
            naming.API_VERSION, naming.PARTITIONS, self.namespace, name, {"members": wanted}
        )
        self.adopted += 1
        log.info("partition %s: adopted the members its leader published: %s", name, wanted)
