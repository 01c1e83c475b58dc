"""Every name, label and API coordinate the operator uses, in one place.

Kubernetes names are DNS labels/subdomains (lower case, at most 63/253 characters);
DynamoDB table names are not, so a Table resource's own name is chosen by the user and
its DynamoDB name lives in `spec.tableName`.
"""

from __future__ import annotations

from partita.control import kubernetes

GROUP = kubernetes.GROUP
VERSION = kubernetes.VERSION
API_VERSION = kubernetes.API_VERSION
TABLES = "tables"
PARTITIONS = "partitions"
TABLE_KIND = "Table"
PARTITION_KIND = "Partition"

# kopf's own markers, under our group so `kubectl get -o yaml` shows whose they are.
FINALIZER = f"{GROUP}/finalizer"
ANNOTATION_PREFIX = GROUP
PEERING_NAME = "partita"

# Labels (the recommended app.kubernetes.io set plus ours for selection).
APP = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "app.kubernetes.io/part-of"
ZONE_LABEL = f"{GROUP}/zone"
TABLE_LABEL = kubernetes.TABLE_LABEL  # the routers select a table's Partitions by it too
OPERATOR = "partita-operator"
STORAGE = "storage"

# The standard topology label the scheduler spreads storage pods over.
TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
DATA_VOLUME = "data"
ADMIN_PORT_NAME = "admin"
DATA_PORT_NAME = "data"
METRICS_PORT_NAME = "metrics"
REPLICATION_PORT_NAME = "replication"


def partition_name(table: str, start: int) -> str:
    """A partition is named by its table and the first hash of its range.

    The start never changes (a split shortens a range from its end and names the new
    half by its own start), so a partition keeps its name for its whole life.
    """
    return f"{table}-{start:016x}"


def storage_statefulset(release: str, zone: str) -> str:
    return f"{release}-storage-{zone}"


def storage_service(release: str, zone: str) -> str:
    """The headless Service that gives each storage pod of a zone its DNS name."""
    return storage_statefulset(release, zone)


def storage_pdb(release: str, zone: str) -> str:
    return storage_statefulset(release, zone)


def storage_pod(release: str, zone: str, ordinal: int) -> str:
    """StatefulSet pods are `<statefulset>-<ordinal>`; this is the storage node's id."""
    return f"{storage_statefulset(release, zone)}-{ordinal}"


def storage_pod_dns(release: str, zone: str, ordinal: int, namespace: str) -> str:
    service = storage_service(release, zone)
    return f"{storage_pod(release, zone, ordinal)}.{service}.{namespace}.svc"


def fleet_labels(release: str) -> dict[str, str]:
    return {APP: "partita", INSTANCE: release, COMPONENT: STORAGE, PART_OF: "partita", MANAGED_BY: OPERATOR}


def zone_selector(release: str, zone: str) -> dict[str, str]:
    """The labels that select one zone's storage pods (a StatefulSet's immutable selector)."""
    return {APP: "partita", INSTANCE: release, COMPONENT: STORAGE, ZONE_LABEL: zone}


def partition_labels(table: str) -> dict[str, str]:
    return {**every_partition_labels(), TABLE_LABEL: table}


def every_partition_labels() -> dict[str, str]:
    """The labels every Table's Partitions carry."""
    return {APP: "partita", PART_OF: "partita", MANAGED_BY: OPERATOR}
