"""Which pods a scale-down of the storage fleet drains, and when a Partition still
holds one (the operator's side; the drain itself is tested end to end in
tests/integration/test_kubernetes_scale_down.py)."""

from __future__ import annotations

from partita.autoadmin.kube.fleet import Fleet
from partita.autoadmin.kube.fleet_shrink import leaving_pods, named_members


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
