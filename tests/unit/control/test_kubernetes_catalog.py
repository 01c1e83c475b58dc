"""The routers' table catalog on Table resources, beyond the shared contract: what it
writes is a Table the CRD accepts, a Table made with kubectl is found by its DynamoDB
name, DeleteTable deletes the resource (the operator's finalizer then holds it as
DELETING), and the autoadmin's state is read from the status. kmock is the API
server (tests/unit/control/kube_api.py)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import aiohttp
import pytest
import yaml

from partita.common.keys import KEY_HASH_BLAKE2B, KEY_HASH_DYNAMODB
from partita.common.partition_map import is_replicated
from partita.control import kubernetes
from partita.control.kubernetes import KubernetesTableCatalog
from partita.control.model import (
    BackupInfo,
    KeyElement,
    PointInTimeRecovery,
    ResourcePolicy,
    RestoreInfo,
    StreamSpec,
    TableSpec,
    TimeToLive,
    table_status,
)
from tests.unit.autoadmin.kube.emulator import NS, TABLES
from tests.unit.autoadmin.kube.manifests import validate
from tests.unit.control.conftest import table
from tests.unit.control.kube_api import VersionedApiServer

pytestmark = [pytest.mark.kmock(cls=VersionedApiServer)]
EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "table.yaml"
ON_DEMAND = dataclasses.replace(
    table("Music"),
    sort_key=None,
    attribute_definitions=(("pk", "S"),),
    billing_mode="PAY_PER_REQUEST",
    read_capacity=0,
    write_capacity=0,
    tags=(("team", "a"),),
    time_to_live=TimeToLive("ENABLED", "expires", 12.0),
    deletion_protection=True,
)
STREAMED = dataclasses.replace(
    ON_DEMAND, stream=StreamSpec(enabled=False, view_type="KEYS_ONLY", created_at=20.5, disabled_at=30.0)
)


WARMED = dataclasses.replace(
    ON_DEMAND, warm_throughput=(0, 9000), on_demand_max=(500, 0), table_class="STANDARD_INFREQUENT_ACCESS"
)
RECOVERABLE = dataclasses.replace(ON_DEMAND, point_in_time=PointInTimeRecovery(True, 40.25, 7))


@pytest.mark.parametrize(
    "spec",
    [table(), ON_DEMAND, STREAMED, WARMED, RECOVERABLE],
    ids=["provisioned", "on-demand", "stream", "warm", "point-in-time"],
)
def test_the_resource_written_is_a_table_the_crd_accepts_and_reads_back_the_same(spec: TableSpec) -> None:
    obj = kubernetes.resource_from_spec(spec, NS)
    validate(obj)
    obj["metadata"].update(resourceVersion="7", generation=1)
    assert kubernetes.spec_from_resource(obj) == spec


@pytest.mark.parametrize("name", ["Music", "music", "_a.b-C", "x" * 255, "..."])
def test_resource_names_are_dns_labels_and_keep_table_names_apart(name: str) -> None:
    resource = kubernetes.resource_name(name)
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", resource) and len(resource) <= 63
    assert kubernetes.resource_name("Music") != kubernetes.resource_name("music")


async def test_a_table_made_with_kubectl_is_found_by_its_dynamodb_name(
    catalog: KubernetesTableCatalog, api: aiohttp.ClientSession
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["metadata"]["namespace"] = NS
    async with api.post(TABLES, json=doc) as resp:
        assert resp.status < 300, await resp.text()
    spec = await catalog.get_table_spec("Music")
    assert spec is not None
    assert (spec.partition_key, spec.sort_key) == (KeyElement("Artist", "S"), KeyElement("SongTitle", "S"))
    assert (spec.billing_mode, spec.read_capacity, spec.write_capacity) == ("PROVISIONED", 3000, 1000)
    assert spec.table_id == kubernetes.default_table_id(NS, "music")
    assert spec.deletion_protection is True  # the example sets deletionProtectionEnabled
    assert await catalog.create_table_spec(dataclasses.replace(table("Music"))) is False  # the name is taken


async def test_delete_table_deletes_the_resource_and_the_finalizer_keeps_it_deleting(
    catalog: KubernetesTableCatalog, api: aiohttp.ClientSession
) -> None:
    assert await catalog.create_table_spec(table())
    name = kubernetes.resource_name("Orders")
    patch = {"metadata": {"finalizers": ["partita.io/finalizer"]}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with api.patch(f"{TABLES}/{name}", json=patch, headers=headers) as resp:
        assert resp.status == 200
    spec = await catalog.get_table_spec("Orders")
    assert spec is not None
    assert await catalog.replace_table_spec(dataclasses.replace(spec, deleting=True)) is True
    held = await catalog.get_table_spec("Orders")
    assert held is not None and held.deleting and table_status(held, None) == "DELETING"
    # The operator releases it: the table is gone.
    async with api.patch(f"{TABLES}/{name}", json={"metadata": {"finalizers": []}}, headers=headers) as resp:
        assert resp.status == 200
    assert await catalog.get_table_spec("Orders") is None


async def test_the_autoadmins_state_is_read_from_the_status(
    catalog: KubernetesTableCatalog, api: aiohttp.ClientSession
) -> None:
    assert await catalog.create_table_spec(table())
    assert await catalog.get_table_state("Orders") is None  # nothing observed yet: CREATING
    name = kubernetes.resource_name("Orders")
    headers = {"Content-Type": "application/merge-patch+json"}
    for shown, phase in (("CREATING", "CREATING"), ("ACTIVE", "ACTIVE"), ("UPDATING", "ACTIVE")):
        status = {"status": {"tableStatus": shown, "observedGeneration": 1}}
        async with api.patch(f"{TABLES}/{name}/status", json=status, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
        state = await catalog.get_table_state("Orders")
        assert state is not None and (state.table_id, state.phase, state.observed_generation) == (
            11,
            phase,
            1,
        )


def _partition_resource(status: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"name": "orders-0000000000000000"},
        "spec": {
            "table": "orders",
            "hashRange": {"start": "0000000000000000", "last": "ffffffffffffffff"},
            "members": [{"node": n, "zone": z} for n, z in (("s-a-0", "a"), ("s-b-0", "b"), ("s-c-0", "c"))],
        },
        "status": status,
    }


@pytest.mark.parametrize(
    ("status", "leader"),
    [
        ({"leader": "s-b-0"}, "s-b-0"),  # what the members reported
        ({}, "s-a-0"),  # nothing reported yet: the placement's first member
        ({"leader": "s-x-9"}, "s-a-0"),  # a stale report of a node that left
    ],
    ids=["reported", "unreported", "stale"],
)
def test_routes_lead_to_the_reported_leader_only_while_it_is_a_member(
    status: dict[str, object], leader: str
) -> None:
    p = kubernetes.partition_from_resource(_partition_resource(status))
    assert (p.leader, p.replicas, p.start, p.end) == (leader, ("s-a-0", "s-b-0", "s-c-0"), 0, 1 << 64)


def test_a_partition_lowered_to_one_member_is_still_replicated_by_its_group_mark() -> None:
    resource = _partition_resource({"leader": "s-a-0"})
    resource["spec"]["members"] = [{"node": "s-a-0", "zone": "a", "role": "full"}]
    resource["spec"]["replicationFactor"] = 1
    assert not is_replicated(kubernetes.partition_from_resource(resource))
    resource["spec"]["replicationGroup"] = True
    assert is_replicated(kubernetes.partition_from_resource(resource))


def test_routes_name_only_full_members_a_joining_or_log_member_is_not_read_from() -> None:
    resource = _partition_resource({"leader": "s-b-0"})
    resource["spec"]["members"] = [
        {"node": "s-a-0", "zone": "a", "role": "full"},
        {"node": "s-b-0", "zone": "b", "role": "full"},
        {"node": "s-c-1", "zone": "c", "role": "joining"},
        {"node": "s-a-1", "zone": "a", "role": "log"},
    ]
    p = kubernetes.partition_from_resource(resource)
    assert (p.replicas, p.leader) == (("s-a-0", "s-b-0"), "s-b-0")


async def test_update_table_turns_the_tables_deletion_protection_on_and_off(
    catalog: KubernetesTableCatalog, api: aiohttp.ClientSession
) -> None:
    assert await catalog.create_table_spec(table())
    for protected in (True, False):
        spec = await catalog.get_table_spec("Orders")
        assert spec is not None
        assert await catalog.replace_table_spec(dataclasses.replace(spec, deletion_protection=protected))
        async with api.get(f"{TABLES}/{kubernetes.resource_name('Orders')}") as resp:
            assert (await resp.json())["spec"]["deletionProtectionEnabled"] is protected
        stored = await catalog.get_table_spec("Orders")
        assert stored is not None and stored.deletion_protection is protected


async def test_resource_policies_ride_in_their_annotation_and_the_last_one_deleted_removes_it(
    catalog: KubernetesTableCatalog, api: aiohttp.ClientSession
) -> None:
    assert await catalog.create_table_spec(table())
    policies = (ResourcePolicy("", '{"Statement": [1]}', "1000"),)
    for wanted in (policies, ()):
        spec = await catalog.get_table_spec("Orders")
        assert spec is not None
        assert await catalog.replace_table_spec(dataclasses.replace(spec, policies=wanted))
        async with api.get(f"{TABLES}/{kubernetes.resource_name('Orders')}") as resp:
            notes = (await resp.json())["metadata"].get("annotations") or {}
        assert (kubernetes.POLICIES_ANNOTATION in notes) is bool(wanted)
        stored = await catalog.get_table_spec("Orders")
        assert stored is not None and stored.policies == wanted


def test_a_backups_and_a_restores_records_ride_in_their_annotations() -> None:
    backup = BackupInfo("01-ab", "nightly", "arn:b", 3.5, "arn:t", table().to_json(), "AVAILABLE", 7, 900)
    restore = RestoreInfo("arn:b", "arn:t", 4.5, ".partita-backup-01-ab")
    for spec in (dataclasses.replace(table(), backup=backup), dataclasses.replace(table(), restore=restore)):
        obj = kubernetes.resource_from_spec(spec, NS)
        validate(obj)
        back = kubernetes.spec_from_resource(obj)
        assert (back.backup, back.restore) == (spec.backup, spec.restore)


def test_a_tables_key_hash_rides_in_its_annotation_and_a_kubectl_table_keeps_blake2b() -> None:
    made = dataclasses.replace(table(), key_hash=KEY_HASH_DYNAMODB)
    obj = kubernetes.resource_from_spec(made, NS)
    validate(obj)
    assert obj["metadata"]["annotations"][kubernetes.KEY_HASH_ANNOTATION] == KEY_HASH_DYNAMODB
    assert kubernetes.spec_from_resource(obj).key_hash == KEY_HASH_DYNAMODB
    # A Table applied with kubectl (or created before the key hash was DynamoDB's) has
    # no annotation: its keys stay where BLAKE2b placed them.
    del obj["metadata"]["annotations"][kubernetes.KEY_HASH_ANNOTATION]
    assert kubernetes.spec_from_resource(obj).key_hash == KEY_HASH_BLAKE2B
    assert (
        kubernetes.KEY_HASH_ANNOTATION
        not in kubernetes.resource_from_spec(table(), NS)["metadata"]["annotations"]
    )


def test_routes_take_a_replicated_splits_children_in_place_of_their_parent_once_both_exist() -> None:
    # The operator creates the children before it deletes the parent (docs/kubernetes.md,
    # "Splits"): the routes hold the parent or its children, never both, never a hole.
    table_obj = kubernetes.resource_from_spec(table("Orders"), NS)
    table_obj["metadata"]["resourceVersion"] = "1"
    parent = _partition_resource({})
    parent["metadata"]["name"] = "orders-p"
    parent["spec"]["table"] = table_obj["metadata"]["name"]
    parent["spec"]["splitAt"] = "8000000000000000"

    def child(name: str, start: str, last: str) -> dict[str, object]:
        obj = _partition_resource({})
        obj["metadata"] = {"name": name}
        obj["spec"] = {**parent["spec"], "hashRange": {"start": start, "last": last}, "parent": "orders-p"}
        obj["spec"].pop("splitAt")
        obj["spec"]["parentIndex"] = 9
        return obj

    left = child("orders-p-0", "0000000000000000", "7fffffffffffffff")
    right = child("orders-p-1", "8000000000000000", "ffffffffffffffff")

    def routed(*partitions: dict[str, object]) -> list[str]:
        (record,) = kubernetes.join_tables([table_obj], list(partitions))
        assert record.partition_map.partitions  # contiguous and complete, or this raises
        return [p.partition_id for p in record.partitions]

    assert routed(parent) == ["orders-p"]
    assert routed(parent, left) == ["orders-p"]  # one child alone would leave a hole
    assert routed(parent, left, right) == ["orders-p-0", "orders-p-1"]
    assert routed(left, right) == ["orders-p-0", "orders-p-1"]
    p = kubernetes.partition_from_resource(left)
    assert (p.parent, p.parent_index) == ("orders-p", 9)
    assert kubernetes.partition_from_resource(parent).split_at == 2**63


def test_the_stream_a_kubectl_spec_asks_for_is_recorded_once_and_a_new_view_type_starts_another() -> None:
    obj = kubernetes.resource_from_spec(ON_DEMAND, NS)
    assert kubernetes.stream_to_record(obj, 5.0) is None  # no field: nothing asked
    obj["spec"]["streamSpecification"] = {"streamEnabled": True, "streamViewType": "NEW_IMAGE"}
    first = kubernetes.stream_to_record(obj, 5.0)
    assert first == StreamSpec(enabled=True, view_type="NEW_IMAGE", created_at=5.0)
    recorded = kubernetes.resource_from_spec(dataclasses.replace(ON_DEMAND, stream=first), NS)
    assert recorded["spec"]["streamSpecification"] == obj["spec"]["streamSpecification"]
    assert kubernetes.stream_to_record(recorded, 6.0) is None  # recorded: agreed
    recorded["spec"]["streamSpecification"] = {"streamEnabled": True, "streamViewType": "KEYS_ONLY"}
    second = kubernetes.stream_to_record(recorded, 7.0)
    assert second is not None and (second.view_type, second.created_at) == ("KEYS_ONLY", 7.0)
    assert second.earlier == (StreamSpec(False, "NEW_IMAGE", 5.0, 7.0),)
    recorded["spec"]["streamSpecification"] = {"streamEnabled": False}
    assert kubernetes.stream_to_record(recorded, 8.0) == StreamSpec(False, "NEW_IMAGE", 5.0, 8.0)
