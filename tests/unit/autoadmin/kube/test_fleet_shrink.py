"""Which pods a scale-down of the storage fleet drains, and when a Partition still
holds one (the operator's side; the drain itself is tested end to end in
tests/integration/test_kubernetes_scale_down.py)."""

from __future__ import annotations

import asyncio
from typing import cast

from partita.autoadmin.kube.api import KubeApi
from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.fleet_shrink import FleetShrink, leaving_pods, named_members
from partita.control.store import MemoryControlStore


def test_a_scale_down_drains_the_highest_ordinals_of_each_larger_zone() -> None:
    fleet = Fleet(release="pt", namespace="db", image="i", zones=("a", "b", "c"), replicas_per_zone=1)
    assert leaving_pods(fleet, {"b": 3, "a": 2}) == ["pt-storage-a-1", "pt-storage-b-1", "pt-storage-b-2"]
    assert leaving_pods(fleet, {}) == []


def test_every_role_a_partition_names_holds_the_pod() -> None:
    parts = [
        {"spec": {"members": [{"node": "p-a-0", "role": "full"}, {"node": "p-b-1", "role": "joining"}]}},
        {"spec": {"members": [{"node": "p-c-1", "role": "log"}]}},
    ]
    assert named_members(parts) == {"p-a-0", "p-b-1", "p-c-1"}


async def test_at_start_the_scale_down_marks_left_on_pods_the_fleet_keeps_are_cleared() -> None:
    # An operator stopped between scaling down and clearing the marks, then the fleet
    # was scaled up again: pt-storage-a-1 exists again and must not stay drained.
    fleet = Fleet(release="pt", namespace="db", image="i", zones=("a",), replicas_per_zone=2)
    marks = MemoryControlStore()
    for pod in ("pt-storage-a-1", "pt-storage-a-2"):
        await marks.set_draining(pod, True, by="scale-down")
    await marks.set_draining("pt-storage-a-0", True)  # by hand: someone empties that pod
    shrink = FleetShrink(cast(KubeApi, None), marks, fleet)  # nothing larger: no API call
    shrink.begin({})
    assert shrink._task is not None
    await asyncio.wait_for(shrink._task, 5)
    # a-1 is kept again; a-2 is a pod the fleet does not run; a-0's mark is not the operator's
    assert await marks.draining_marks() == {"pt-storage-a-2": "scale-down", "pt-storage-a-0": "hand"}
