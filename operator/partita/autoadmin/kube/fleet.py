"""The storage fleet the operator runs: one StatefulSet per zone, as the chart configures it.

Every default is documented here, where it is defined; the chart passes each one to
`partita operator` as a flag (charts/partita/values.yaml, `storage:`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from partita.autoadmin.kube import naming
from partita.common import config
from partita.control.model import NodeRecord


@dataclass(frozen=True)
class Fleet:
    """Where storage nodes run and what each one gets."""

    release: str  # the Helm release: prefixes every object the operator makes
    namespace: str
    image: str  # the one Partita image (entrypoint `partita`)
    zones: tuple[str, ...] = config.DEFAULT_ZONES  # values of topology.kubernetes.io/zone
    replicas_per_zone: int = 1  # storage pods per zone; grows with load later (fleet size)
    storage_size: str = "10Gi"  # each pod's PersistentVolumeClaim
    storage_class: str | None = None  # None: the cluster's default StorageClass
    etcd: str = "partita-etcd:2379"  # the control store's client endpoint
    admin_port: int = 7100  # gRPC administration (the operator and routers call it)
    data_port: int = 7200  # framed data path (routers call it)
    metrics_port: int = 7300  # /metrics (Prometheus scrapes it through the chart's PodMonitor)
    # Replication streams between storage pods (each dials its groups' peers here, at
    # their pod DNS names); the NetworkPolicy opens it to storage pods only.
    replication_port: int = 7400
    # Run a replication group for each partition's members (`partita storage
    # --replication`): writes commit on a majority, a leader is elected, and a killed
    # leader's partitions fail over. Off: each replica commits alone (no redundancy).
    replication: bool = True
    cpu_request: str = "250m"
    memory_request: str = "512Mi"
    memory_limit: str = "2Gi"
    image_pull_policy: str = "IfNotPresent"
    service_account: str | None = None  # storage pods need no API access: none by default
    node_selector: dict[str, str] = field(default_factory=dict)
    # Pin each zone's StatefulSet to nodes labelled topology.kubernetes.io/zone=<zone>.
    # Off for clusters without zone labels (kind on a laptop).
    pin_zones: bool = True
    # Never two storage pods on one machine. Off for single-machine clusters.
    separate_hosts: bool = True
    # Storage pods hold partitions to their share of the table's rate and themselves to
    # their capacity (`partita storage --admission`); the chart turns it on with its
    # `admission` value. Off: nothing throttled at the storage layer.
    admission: bool = False
    # Each storage pod's capacity, RCU and WCU a second: its node buckets' rates (with
    # admission) and what its load reports are measured against (load-based migration).
    node_read_units: float = config.DEFAULT_NODE_READ_UNITS
    node_write_units: float = config.DEFAULT_NODE_WRITE_UNITS

    def __post_init__(self) -> None:
        if not self.zones:
            raise ValueError("the fleet needs at least one zone")
        if len(set(self.zones)) != len(self.zones):
            raise ValueError(f"zones repeat: {self.zones}")
        if self.replicas_per_zone < 1:
            raise ValueError("replicas_per_zone must be at least 1")

    def nodes(self) -> list[NodeRecord]:
        """The storage nodes the StatefulSets run, named as their pods are, at their pod
        DNS names in their zone's headless Service."""
        out = []
        for zone in self.zones:
            for ordinal in range(self.replicas_per_zone):
                dns = naming.storage_pod_dns(self.release, zone, ordinal, self.namespace)
                out.append(
                    NodeRecord(
                        node_id=naming.storage_pod(self.release, zone, ordinal),
                        zone=zone,
                        address=f"{dns}:{self.admin_port}",
                        data_address=f"{dns}:{self.data_port}",
                        replication_address=f"{dns}:{self.replication_port}",
                    )
                )
        return out
