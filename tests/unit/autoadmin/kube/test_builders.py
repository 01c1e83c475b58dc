"""The pure builders: what they build, and that it is valid Kubernetes for 1.29-1.33."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from partita.autoadmin.kube import builders, decisions, naming
from partita.autoadmin.kube.fleet import Fleet
from tests.unit.autoadmin.kube.manifests import validate

DEFAULT = Fleet(release="pt", namespace="db", image="partita:1")
CUSTOM = Fleet(
    release="big",
    namespace="prod",
    image="registry.example/partita:2",
    zones=("eu-1a", "eu-1b"),
    replicas_per_zone=4,
    storage_size="500Gi",
    storage_class="fast-ssd",
    service_account="storage",
    node_selector={"pool": "storage"},
    pin_zones=False,
    separate_hosts=False,
)
TABLE = {
    "apiVersion": naming.API_VERSION,
    "kind": "Table",
    "metadata": {"name": "music", "namespace": "db", "uid": "1234"},
    "spec": {"replicationFactor": 2},
}


@pytest.mark.parametrize("fleet", [DEFAULT, CUSTOM], ids=["default", "custom"])
def test_every_fleet_object_is_valid_kubernetes(fleet: Fleet) -> None:
    objects = builders.storage_fleet(fleet)
    assert [o["kind"] for o in objects] == ["Service", "PodDisruptionBudget", "StatefulSet"] * len(
        fleet.zones
    )
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize(
    ("fleet", "zone", "node_affinity", "anti_affinity", "claim_class", "node_selector"),
    [
        (DEFAULT, "a", True, True, None, None),
        (CUSTOM, "eu-1b", False, False, "fast-ssd", {"pool": "storage"}),
    ],
)
def test_statefulset_per_zone(
    fleet: Fleet,
    zone: str,
    node_affinity: bool,
    anti_affinity: bool,
    claim_class: str | None,
    node_selector: Any,
) -> None:
    sts = builders.storage_statefulset(fleet, zone)
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    assert sts["metadata"]["name"] == f"{fleet.release}-storage-{zone}"
    assert spec["serviceName"] == builders.storage_service(fleet, zone)["metadata"]["name"]
    assert spec["replicas"] == fleet.replicas_per_zone
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert spec["selector"]["matchLabels"][naming.ZONE_LABEL] == zone
    affinity = pod.get("affinity", {})
    assert ("nodeAffinity" in affinity) == node_affinity
    if node_affinity:
        term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]
        assert term["matchExpressions"][0] == {
            "key": naming.TOPOLOGY_ZONE,
            "operator": "In",
            "values": [zone],
        }
    assert ("podAntiAffinity" in affinity) == anti_affinity
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    assert pod.get("nodeSelector") == node_selector
    claim = spec["volumeClaimTemplates"][0]["spec"]
    assert claim.get("storageClassName") == claim_class
    assert claim["resources"]["requests"]["storage"] == fleet.storage_size
    container = pod["containers"][0]
    assert container["image"] == fleet.image
    assert f"--zone={zone}" in container["args"] and "--node-id=$(POD_NAME)" in container["args"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_storage_pods_serve_metrics_on_a_named_port_the_pod_monitor_can_scrape() -> None:
    fleet = dataclasses.replace(DEFAULT, metrics_port=9300)
    container = builders.storage_statefulset(fleet, "a")["spec"]["template"]["spec"]["containers"][0]
    assert "--metrics-port=9300" in container["args"]
    assert {"name": naming.METRICS_PORT_NAME, "containerPort": 9300, "protocol": "TCP"} in container["ports"]
    service_ports = builders.storage_service(fleet, "a")["spec"]["ports"]
    assert {"name": "metrics", "port": 9300, "targetPort": "metrics", "protocol": "TCP"} in service_ports


def test_headless_service_and_pdb_select_exactly_one_zone() -> None:
    service = builders.storage_service(DEFAULT, "b")
    pdb = builders.storage_pdb(DEFAULT, "b")
    selector = naming.zone_selector("pt", "b")
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["selector"] == selector
    assert pdb["spec"]["selector"]["matchLabels"] == selector and pdb["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize(
    ("start", "last", "name"),
    [
        (0, 2**63 - 1, "music-0000000000000000"),
        (2**63, 2**64 - 1, "music-8000000000000000"),
        (0xABC, 0xABD, "music-0000000000000abc"),
    ],
)
def test_partition_object_names_ranges_and_owner(start: int, last: int, name: str) -> None:
    members = (decisions.Member("pt-storage-a-0", "a"), decisions.Member("pt-storage-b-1", "b", "log"))
    obj = builders.partition(TABLE, decisions.PartitionPlan(start, last, members))
    validate(obj)
    assert obj["metadata"]["name"] == name
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": naming.API_VERSION,
            "kind": "Table",
            "name": "music",
            "uid": "1234",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert obj["spec"]["hashRange"] == {"start": f"{start:016x}", "last": f"{last:016x}"}
    assert obj["spec"]["members"][1] == {"node": "pt-storage-b-1", "zone": "b", "role": "log"}
    assert obj["spec"]["replicationFactor"] == 2  # the Table's, for the group's leader to keep
    assert obj["metadata"]["labels"][naming.TABLE_LABEL] == "music"


def test_a_partition_is_marked_a_replication_group_above_one_replica_or_as_a_splits_child() -> None:
    members = (decisions.Member("pt-storage-a-0", "a"),)
    single = {**TABLE, "spec": {"replicationFactor": 1}}
    assert (
        "replicationGroup" not in builders.partition(single, decisions.PartitionPlan(0, 9, members))["spec"]
    )
    grouped = builders.partition(TABLE, decisions.PartitionPlan(0, 9, members))
    child = builders.partition(single, decisions.PartitionPlan(0, 9, members, "music-0", 42, "music-0-0"))
    for obj in (grouped, child):
        validate(obj)
        assert obj["spec"]["replicationGroup"] is True


@pytest.mark.parametrize(
    ("spec", "factor", "change"),
    [
        ({"replicationFactor": 1}, 1, {}),
        ({"replicationFactor": 1}, 3, {"replicationFactor": 3, "replicationGroup": True}),
        ({"replicationFactor": 3}, 3, {"replicationGroup": True}),  # made before the mark
        ({"replicationFactor": 3, "replicationGroup": True}, 1, {"replicationFactor": 1}),
        ({"replicationFactor": 2, "replicationGroup": True}, 2, {}),
        ({}, 1, {"replicationFactor": 1}),
    ],
)
def test_a_replication_factor_patch_marks_the_group_for_good(
    spec: dict[str, object], factor: int, change: dict[str, object]
) -> None:
    assert builders.replication_factor_patch(spec, factor) == change


def test_storage_pods_run_replication_groups_on_a_fixed_port_at_their_pod_dns_names() -> None:
    """Peers dial `<pod>.<headless service>.<namespace>.svc:<replicationPort>`: the pod
    listens on its own IP and that port, advertises its DNS name, and the port is a
    named containerPort and a port of the zone's headless Service."""
    fleet = dataclasses.replace(DEFAULT, replication_port=9400)
    container = builders.storage_statefulset(fleet, "b")["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert "--replication" in args
    assert "--replication-listen=$(POD_IP):9400" in args
    assert "--replication-advertise=$(POD_NAME).pt-storage-b.db.svc:9400" in args
    expected_port = {"name": naming.REPLICATION_PORT_NAME, "containerPort": 9400, "protocol": "TCP"}
    assert expected_port in container["ports"]
    service_ports = builders.storage_service(fleet, "b")["spec"]["ports"]
    assert {
        "name": "replication",
        "port": 9400,
        "targetPort": "replication",
        "protocol": "TCP",
    } in service_ports
    # The advertised name is the one the operator gives the other members.
    node = next(n for n in fleet.nodes() if n.node_id == "pt-storage-b-0")
    assert node.replication_address == "pt-storage-b-0.pt-storage-b.db.svc:9400"


def test_without_replication_storage_pods_commit_each_replica_alone() -> None:
    fleet = dataclasses.replace(DEFAULT, replication=False)
    args = builders.storage_statefulset(fleet, "a")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith("--replication")]


@pytest.mark.parametrize(
    "fleet",
    [DEFAULT, dataclasses.replace(CUSTOM, admission=True, node_read_units=1500.0, node_write_units=500.5)],
    ids=["default", "custom"],
)
def test_storage_pods_arguments_are_accepted_by_the_storage_command(fleet: Fleet) -> None:
    """The args the operator gives storage pods parse with the real `partita storage`
    parser (an unknown or malformed flag would make every storage pod exit at start)."""
    from partita.cli.main import build_parser

    container = builders.storage_statefulset(fleet, fleet.zones[0])["spec"]["template"]["spec"]["containers"][
        0
    ]
    parsed = build_parser().parse_args(container["args"])
    assert parsed.hosting == "admin" and parsed.replication is True
    # The pod's capacity, for its node buckets and its load reports (migration).
    assert (parsed.node_read_units, parsed.node_write_units) == (
        fleet.node_read_units,
        fleet.node_write_units,
    )
    assert parsed.replication_listen == f"$(POD_IP):{fleet.replication_port}"
