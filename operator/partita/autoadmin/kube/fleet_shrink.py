"""Scaling the storage fleet down without losing a replica.

Lowering `storage.replicasPerZone` removes the highest-ordinal pod of each zone's
StatefulSet. Applied at once, that deletes pods that still hold replicas: a group with
two of its three members on leaving pods (one per zone, as a scale-down removes them)
loses its quorum, and each lost member is rebuilt by repair only afterwards. So the
operator drains them first, as `partita node drain` does in the local cluster:

1. `ensure_fleet` keeps each StatefulSet at its current size and hands the leaving pods
   to `FleetShrink.begin`, which marks them draining in the control store
   (`/partita/draining/<pod>`, the mark every storage pod reads with the
   registrations). Each group's leader then builds a full member on a pod that stays and
   removes the leaving pod's member, a leader there handing over first
   (docs/replication.md, "Repair"); new partitions are never placed on them (the fleet's
   node list stops below the new size).
2. Once no Partition names a leaving pod, it scales each StatefulSet down.
3. Once the leaving pods' registrations are gone (the pods stopped), it clears their
   marks, so a later scale-up starts those pods undrained. An operator that stopped
   before that leaves marks behind: the next one clears, when it starts (`begin`), the
   scale-down marks of every pod the fleet keeps. A mark set by hand (an operator
   emptying one pod) is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from partita.autoadmin.kube import naming
from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.background import cancel_and_wait
from partita.autoadmin.kube.fleet import Fleet
from partita.control.model import NodeRecord

log = logging.getLogger(__name__)

# Seconds between looks at the Partitions (and then the registrations) while draining.
CHECK_SECONDS = 1.0
# Who set a drain mark, as the mark says: a scale-down's marks are the operator's to clear.
SCALE_DOWN = "scale-down"


class DrainMarks(Protocol):
    """Where storage pods register and read drain marks (the control store, etcd)."""

    async def set_draining(self, node_id: str, draining: bool, by: str = "hand") -> None: ...
    async def draining_marks(self) -> dict[str, str]: ...
    async def list_nodes(self) -> list[NodeRecord]: ...


def leaving_pods(fleet: Fleet, current: Mapping[str, int]) -> list[str]:
    """The pods a scale-down to `fleet.replicas_per_zone` removes, from each zone's
    current StatefulSet size (the highest ordinals go)."""
    return [
        naming.storage_pod(fleet.release, zone, ordinal)
        for zone, size in sorted(current.items())
        for ordinal in range(fleet.replicas_per_zone, size)
    ]


def named_members(partitions: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every storage pod a Partition's spec names, in any role."""
    return {m["node"] for p in partitions for m in p["spec"]["members"]}


class FleetShrink:
    def __init__(
        self, api: KubeApi, marks: DrainMarks, fleet: Fleet, check_seconds: float = CHECK_SECONDS
    ) -> None:
        self.api = api
        self.marks = marks
        self.fleet = fleet
        self.check_seconds = check_seconds
        self._task: asyncio.Task[None] | None = None
        self.scaled_down = False  # the StatefulSets were patched to their new size

    def begin(self, current: Mapping[str, int]) -> None:
        """At the operator's start, in the background (the control store may be slow or
        down; Table reconciles must not wait for it): clear drain marks left on pods the
        fleet keeps (a drain that ended without its cleanup, then a scale-up), then drain
        the pods a scale-down from the zones' `current` sizes removes, if any, and scale
        down. Idempotent while one runs."""
        if self._task is not None and not self._task.done():
            return
        self._task = asyncio.get_running_loop().create_task(self._run(dict(current)))

    async def _run(self, current: dict[str, int]) -> None:
        leaving = leaving_pods(self.fleet, current)
        first = True
        while True:
            try:
                if first:
                    await self._mark(leaving)
                    first = False
                if await self._step(current, leaving):
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the API server or etcd unreachable: try again
                log.warning("storage fleet drain marks or scale-down: %s; retrying", exc)
            await asyncio.sleep(self.check_seconds)

    async def _mark(self, leaving: list[str]) -> None:
        keeps = {n.node_id for n in self.fleet.nodes()}
        marks = await self.marks.draining_marks()
        for pod in sorted(p for p, by in marks.items() if by == SCALE_DOWN and p in keeps):
            await self.marks.set_draining(pod, False)
            log.info("cleared the scale-down drain mark of %s, which the storage fleet keeps", pod)
        for pod in leaving:
            await self.marks.set_draining(pod, True, by=SCALE_DOWN)
        if leaving:
            log.info("draining %s before scaling the storage fleet down", ", ".join(leaving))

    async def _step(self, current: dict[str, int], leaving: list[str]) -> bool:
        """One look; True once done (at once when nothing is leaving)."""
        if not leaving:
            return True
        if not self.scaled_down:
            partitions = await self.api.list(naming.API_VERSION, naming.PARTITIONS, self.fleet.namespace, {})
            still = sorted(named_members(partitions) & set(leaving))
            if still:
                return False
            for zone in current:
                await self.api.patch_spec(
                    "apps/v1",
                    "statefulsets",
                    self.fleet.namespace,
                    naming.storage_statefulset(self.fleet.release, zone),
                    {"replicas": self.fleet.replicas_per_zone},
                )
            log.info("no partition on %s any more: storage fleet scaled down", ", ".join(leaving))
            self.scaled_down = True
        registered = {n.node_id for n in await self.marks.list_nodes()}
        if registered & set(leaving):
            return False  # still stopping: they stay marked, so nothing is placed on them
        for pod in leaving:
            await self.marks.set_draining(pod, False)
        return True

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
