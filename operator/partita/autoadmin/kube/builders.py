"""Pure builders of the Kubernetes objects the operator wants to exist.

Each returns a plain dictionary (the manifest), so tests compare and validate them
against the official schemas without a cluster; handlers only send them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from partita.autoadmin.kube import naming
from partita.autoadmin.kube.decisions import Member, PartitionPlan
from partita.autoadmin.kube.fleet import Fleet

DATA_DIR = "/var/lib/partita/data"
# The image's non-root user (Dockerfile); the volume is made writable for its group.
RUN_AS = 10001


def owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    """A controller reference to `owner` (a Table): deleting it garbage-collects the child."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", naming.API_VERSION),
        "kind": owner.get("kind", naming.TABLE_KIND),
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def partition(table: Mapping[str, Any], plan: PartitionPlan) -> dict[str, Any]:
    """The Partition resource of one hash range of `table`."""
    meta = table["metadata"]
    replication_factor = int(table["spec"].get("replicationFactor", 3))
    spec: dict[str, Any] = {
        "table": meta["name"],
        "hashRange": {"start": f"{plan.start:016x}", "last": f"{plan.last:016x}"},
        "members": member_specs(plan.members),
        "replicationFactor": replication_factor,
    }
    if plan.parent:
        spec |= {"parent": plan.parent, "parentIndex": plan.parent_index}
    if replication_factor > 1 or plan.parent:
        # A split child continues its parent's group, whatever the factor is now.
        spec["replicationGroup"] = True
    return {
        "apiVersion": naming.API_VERSION,
        "kind": naming.PARTITION_KIND,
        "metadata": {
            "name": plan.name or naming.partition_name(meta["name"], plan.start),
            "namespace": meta["namespace"],
            "labels": naming.partition_labels(meta["name"]),
            "ownerReferences": [owner_reference(table)],
        },
        "spec": spec,
    }


def replication_factor_patch(spec: Mapping[str, Any], replication_factor: int) -> dict[str, Any]:
    """The change to a Partition's spec that gives it its Table's replicationFactor
    (empty when it has it). Above 1 it also marks the Partition `replicationGroup`, for
    good: lowered to one member later, its replicas still run a group with a log, which
    a split must cut at a log index, not in place."""
    change: dict[str, Any] = {}
    if spec.get("replicationFactor") != replication_factor:
        change["replicationFactor"] = replication_factor
    if replication_factor > 1 and not spec.get("replicationGroup"):
        change["replicationGroup"] = True
    return change


def member_specs(members: Sequence[Member]) -> list[dict[str, Any]]:
    """A Partition's `spec.members`."""
    return [{"node": m.node, "zone": m.zone, "role": m.role} for m in members]


def members_of_spec(items: Sequence[Mapping[str, Any]]) -> tuple[Member, ...]:
    """The members a Partition's `spec.members` names (a role left out is full)."""
    return tuple(Member(m["node"], m["zone"], m.get("role", "full")) for m in items)


def _ports(fleet: Fleet) -> list[dict[str, Any]]:
    return [
        {"name": naming.ADMIN_PORT_NAME, "port": fleet.admin_port, "targetPort": naming.ADMIN_PORT_NAME},
        {"name": naming.DATA_PORT_NAME, "port": fleet.data_port, "targetPort": naming.DATA_PORT_NAME},
        {
            "name": naming.METRICS_PORT_NAME,
            "port": fleet.metrics_port,
            "targetPort": naming.METRICS_PORT_NAME,
        },
        {
            "name": naming.REPLICATION_PORT_NAME,
            "port": fleet.replication_port,
            "targetPort": naming.REPLICATION_PORT_NAME,
        },
    ]


def storage_service(fleet: Fleet, zone: str) -> dict[str, Any]:
    """Headless: gives each storage pod a stable DNS name, even before it is ready (the
    operator and peers must reach a node that is still catching up)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": naming.storage_service(fleet.release, zone),
            "namespace": fleet.namespace,
            "labels": {**naming.fleet_labels(fleet.release), naming.ZONE_LABEL: zone},
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": naming.zone_selector(fleet.release, zone),
            "ports": [{**p, "protocol": "TCP"} for p in _ports(fleet)],
        },
    }


def storage_pdb(fleet: Fleet, zone: str) -> dict[str, Any]:
    """At most one storage pod of a zone down by choice (drains, upgrades): with replicas
    in distinct zones, a partition then loses at most one replica to maintenance."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": naming.storage_pdb(fleet.release, zone),
            "namespace": fleet.namespace,
            "labels": {**naming.fleet_labels(fleet.release), naming.ZONE_LABEL: zone},
        },
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": naming.zone_selector(fleet.release, zone)}},
    }


def _replication_args(fleet: Fleet, zone: str) -> list[str]:
    if not fleet.replication:
        return []
    service = naming.storage_service(fleet.release, zone)
    return [
        "--replication",
        f"--replication-listen=$(POD_IP):{fleet.replication_port}",
        # Peers dial the pod's stable DNS name (the operator gives every member the same
        # name in HostReplica); a rescheduled pod keeps it under a new IP.
        f"--replication-advertise=$(POD_NAME).{service}.{fleet.namespace}.svc:{fleet.replication_port}",
    ]


def _container(fleet: Fleet, zone: str) -> dict[str, Any]:
    return {
        "name": naming.STORAGE,
        "image": fleet.image,
        "imagePullPolicy": fleet.image_pull_policy,
        "args": [
            "storage",
            "--node-id=$(POD_NAME)",
            f"--zone={zone}",
            # Bind (and register) the pod's own address: routers connect to it directly.
            "--host=$(POD_IP)",
            f"--port={fleet.admin_port}",
            f"--data-port={fleet.data_port}",
            f"--metrics-port={fleet.metrics_port}",
            f"--data-dir={DATA_DIR}",
            f"--etcd={fleet.etcd}",
            # Host exactly the replicas the operator assigns through the admin RPC.
            "--hosting=admin",
            *(["--admission"] if fleet.admission else []),
            f"--node-read-units={fleet.node_read_units:g}",
            f"--node-write-units={fleet.node_write_units:g}",
            *_replication_args(fleet, zone),
        ],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "ports": [
            {"name": naming.ADMIN_PORT_NAME, "containerPort": fleet.admin_port, "protocol": "TCP"},
            {"name": naming.DATA_PORT_NAME, "containerPort": fleet.data_port, "protocol": "TCP"},
            {"name": naming.METRICS_PORT_NAME, "containerPort": fleet.metrics_port, "protocol": "TCP"},
            {
                "name": naming.REPLICATION_PORT_NAME,
                "containerPort": fleet.replication_port,
                "protocol": "TCP",
            },
        ],
        # Ready once the node's grpc.health.v1 service says SERVING (after it replayed
        # its log and serves its assignments); alive while the admin server answers.
        "readinessProbe": {"grpc": {"port": fleet.admin_port}, "periodSeconds": 5},
        "livenessProbe": {
            "tcpSocket": {"port": naming.ADMIN_PORT_NAME},
            "initialDelaySeconds": 30,
            "periodSeconds": 10,
            "failureThreshold": 6,
        },
        "resources": {
            "requests": {"cpu": fleet.cpu_request, "memory": fleet.memory_request},
            "limits": {"memory": fleet.memory_limit},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": naming.DATA_VOLUME, "mountPath": DATA_DIR},
            # The root file system is read-only; Python and RocksDB may want a scratch dir.
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _pod_spec(fleet: Fleet, zone: str) -> dict[str, Any]:
    selector = naming.zone_selector(fleet.release, zone)
    storage_pods = {k: v for k, v in selector.items() if k != naming.ZONE_LABEL}
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "fsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": selector},
            }
        ],
        # A storage node leaves within this; its log makes any stop safe.
        "terminationGracePeriodSeconds": 60,
        "containers": [_container(fleet, zone)],
        "volumes": [{"name": "tmp", "emptyDir": {}}],
    }
    affinity: dict[str, Any] = {}
    if fleet.pin_zones:
        # One zone's StatefulSet runs in that zone.
        term = {"matchExpressions": [{"key": naming.TOPOLOGY_ZONE, "operator": "In", "values": [zone]}]}
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    if fleet.separate_hosts:
        # Two storage pods (of any zone) never share a machine, so losing one machine
        # costs each partition at most one replica.
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": storage_pods}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    if affinity:
        spec["affinity"] = affinity
    if fleet.service_account:
        spec["serviceAccountName"] = fleet.service_account
    if fleet.node_selector:
        spec["nodeSelector"] = dict(fleet.node_selector)
    return spec


def storage_statefulset(fleet: Fleet, zone: str) -> dict[str, Any]:
    """One zone's storage nodes: stable names (node ids) and one volume each."""
    selector = naming.zone_selector(fleet.release, zone)
    claim: dict[str, Any] = {
        "metadata": {"name": naming.DATA_VOLUME},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": fleet.storage_size}},
        },
    }
    if fleet.storage_class:
        claim["spec"]["storageClassName"] = fleet.storage_class
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": naming.storage_statefulset(fleet.release, zone),
            "namespace": fleet.namespace,
            "labels": {**naming.fleet_labels(fleet.release), naming.ZONE_LABEL: zone},
        },
        "spec": {
            "serviceName": naming.storage_service(fleet.release, zone),
            "replicas": fleet.replicas_per_zone,
            # Nodes are independent peers: start and stop them together, not one by one.
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": {**naming.fleet_labels(fleet.release), **selector}},
                "spec": _pod_spec(fleet, zone),
            },
            "volumeClaimTemplates": [claim],
        },
    }


def storage_fleet(fleet: Fleet) -> list[dict[str, Any]]:
    """Everything the storage fleet is made of, zone by zone (Service before StatefulSet)."""
    out: list[dict[str, Any]] = []
    for zone in fleet.zones:
        out += [storage_service(fleet, zone), storage_pdb(fleet, zone), storage_statefulset(fleet, zone)]
    return out
