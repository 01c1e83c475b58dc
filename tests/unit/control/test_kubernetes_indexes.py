"""Secondary indexes on the Table resource: `resource_from_spec` writes a spec's indexes
as CreateTable gives them (spec.globalSecondaryIndexes, spec.localSecondaryIndexes),
their creation times in an annotation, and `spec_from_resource` reads back the same
spec; UpdateTable's merge patch adds and removes global indexes. kmock is the API
server (tests/unit/control/kube_api.py)."""

from __future__ import annotations

import dataclasses

import aiohttp
import pytest

from partita.control import kubernetes
from partita.control.kubernetes import KubernetesTableCatalog
from partita.control.model import KeyElement, SecondaryIndex, TableSpec
from tests.unit.autoadmin.kube.emulator import NS, TABLES
from tests.unit.autoadmin.kube.manifests import validate
from tests.unit.autoadmin.kube.test_cel_rules_indexes import violations
from tests.unit.control.conftest import table
from tests.unit.control.kube_api import VersionedApiServer

pytestmark = [pytest.mark.kmock(cls=VersionedApiServer)]

BY_GENRE = SecondaryIndex(
    name="ByGenre",
    kind="GLOBAL",
    partition_key=KeyElement("genre", "S"),
    sort_key=KeyElement("year", "N"),
    projection_type="INCLUDE",
    non_key_attributes=("title", "label"),
    read_capacity=7,
    write_capacity=3,
    created_at=99.25,
)
BY_ALBUM = SecondaryIndex(
    name="by.album_1",
    kind="LOCAL",
    partition_key=KeyElement("pk", "S"),
    sort_key=KeyElement("album", "B"),
    projection_type="KEYS_ONLY",
    created_at=1.5,
)
BY_LABEL = SecondaryIndex(
    name="ByLabel",
    kind="GLOBAL",
    partition_key=KeyElement("label", "S"),
    sort_key=None,
    read_capacity=1,
    write_capacity=1,
    created_at=120.0,
)
INDEXED = dataclasses.replace(
    table(),
    attribute_definitions=(("pk", "S"), ("sk", "N"), ("genre", "S"), ("year", "N"), ("album", "B")),
    indexes=(BY_GENRE, BY_ALBUM),
)


def _on_demand(spec: TableSpec) -> TableSpec:
    indexes = tuple(dataclasses.replace(i, read_capacity=0, write_capacity=0) for i in spec.indexes)
    return dataclasses.replace(
        spec, billing_mode="PAY_PER_REQUEST", read_capacity=0, write_capacity=0, indexes=indexes
    )


# A local index before a global one: the two lists alone could not say so.
INTERLEAVED = dataclasses.replace(
    INDEXED,
    attribute_definitions=(*INDEXED.attribute_definitions, ("label", "S")),
    indexes=(BY_ALBUM, BY_LABEL, BY_GENRE),
)


# A multi-attribute global key: two HASH attributes, then two RANGE ones.
MULTI = dataclasses.replace(
    INDEXED,
    attribute_definitions=(
        ("pk", "S"),
        ("sk", "N"),
        ("genre", "S"),
        ("year", "N"),
        ("region", "S"),
        ("day", "N"),
    ),
    indexes=(
        dataclasses.replace(
            BY_GENRE,
            more_hash_keys=(KeyElement("region", "S"),),
            more_range_keys=(KeyElement("day", "N"),),
        ),
    ),
)


@pytest.mark.parametrize(
    "spec",
    [INDEXED, _on_demand(INDEXED), INTERLEAVED, MULTI],
    ids=["provisioned", "on-demand", "interleaved", "multi-attribute"],
)
def test_indexes_are_written_as_the_crd_wants_and_read_back_the_same(spec: TableSpec) -> None:
    obj = kubernetes.resource_from_spec(spec, NS)
    validate(obj)
    assert violations(obj) == []
    obj["metadata"].update(resourceVersion="7", generation=1)
    assert kubernetes.spec_from_resource(obj) == spec


def test_the_resource_reads_like_a_create_table_request() -> None:
    obj = kubernetes.resource_from_spec(INDEXED, NS)
    assert obj["spec"]["globalSecondaryIndexes"] == [
        {
            "indexName": "ByGenre",
            "keySchema": [
                {"attributeName": "genre", "keyType": "HASH"},
                {"attributeName": "year", "keyType": "RANGE"},
            ],
            "projection": {"projectionType": "INCLUDE", "nonKeyAttributes": ["title", "label"]},
            "provisionedThroughput": {"readCapacityUnits": 7, "writeCapacityUnits": 3},
        }
    ]
    # A local index shares the table's throughput: it has none of its own.
    assert obj["spec"]["localSecondaryIndexes"] == [
        {
            "indexName": "by.album_1",
            "keySchema": [
                {"attributeName": "pk", "keyType": "HASH"},
                {"attributeName": "album", "keyType": "RANGE"},
            ],
            "projection": {"projectionType": "KEYS_ONLY"},
        }
    ]
    on_demand = kubernetes.resource_from_spec(_on_demand(INDEXED), NS)
    assert "provisionedThroughput" not in on_demand["spec"]["globalSecondaryIndexes"][0]


def test_a_table_without_indexes_has_neither_list_nor_annotation() -> None:
    obj = kubernetes.resource_from_spec(table(), NS)
    assert not {"globalSecondaryIndexes", "localSecondaryIndexes"} & set(obj["spec"])
    assert kubernetes.INDEX_CREATED_AT_ANNOTATION not in obj["metadata"]["annotations"]


def test_indexes_written_with_kubectl_take_the_tables_creation_time_and_defaults() -> None:
    obj = kubernetes.resource_from_spec(INDEXED, NS)
    del obj["metadata"]["annotations"][kubernetes.INDEX_CREATED_AT_ANNOTATION]
    obj["spec"]["localSecondaryIndexes"][0]["projection"] = {}  # the API server defaults it to ALL
    spec = kubernetes.spec_from_resource(obj)
    assert [(i.name, i.kind, i.created_at) for i in spec.indexes] == [
        ("ByGenre", "GLOBAL", INDEXED.created_at),
        ("by.album_1", "LOCAL", INDEXED.created_at),
    ]
    assert spec.indexes[1].projection_type == "ALL"
    # Key types come from the attribute definitions.
    assert (spec.indexes[0].sort_key, spec.indexes[1].sort_key) == (
        KeyElement("year", "N"),
        KeyElement("album", "B"),
    )


async def test_update_table_adds_and_removes_a_global_index(
    catalog: KubernetesTableCatalog, api: aiohttp.ClientSession
) -> None:
    assert await catalog.create_table_spec(INDEXED)
    stored = await catalog.get_table_spec("Orders")
    assert stored == INDEXED

    added = dataclasses.replace(
        stored,
        attribute_definitions=(*stored.attribute_definitions, ("label", "S")),
        indexes=(*stored.indexes, BY_LABEL),
    )
    assert await catalog.replace_table_spec(added)
    stored = await catalog.get_table_spec("Orders")
    # The API server moved the generation (a spec change); all else is as written.
    assert stored is not None and stored.generation == 2
    assert dataclasses.replace(stored, generation=1) == added

    # Every global index dropped (with the definitions only they used): the merge patch
    # must remove the list, which it would otherwise leave as it was.
    dropped = dataclasses.replace(
        stored,
        attribute_definitions=(("pk", "S"), ("sk", "N"), ("album", "B")),
        indexes=(BY_ALBUM,),
    )
    assert await catalog.replace_table_spec(dropped)
    stored = await catalog.get_table_spec("Orders")
    assert stored is not None and dataclasses.replace(stored, generation=2) == dropped
    async with api.get(f"{TABLES}/{kubernetes.resource_name('Orders')}") as resp:
        obj = await resp.json()
    assert "globalSecondaryIndexes" not in obj["spec"]
    assert obj["metadata"]["annotations"][kubernetes.INDEX_CREATED_AT_ANNOTATION] == '[["by.album_1",1.5]]'
    assert violations(obj, old=kubernetes.resource_from_spec(INDEXED, NS)) == []
