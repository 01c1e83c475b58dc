"""The Table and Partition CRDs: valid CRDs for every supported Kubernetes, a
description on every field, and example resources valid against their schemas."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from partita.autoadmin.kube import naming
from tests.unit.autoadmin.kube.manifests import (
    KUBERNETES_VERSIONS,
    custom_schema,
    example,
    load_crds,
    validate,
)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("kind", ["Table", "Partition"])
def test_crd_is_a_valid_customresourcedefinition(kind: str, version: str) -> None:
    kubernetes_validate.validate(load_crds()[kind], version, strict=True)


def test_the_validator_rejects_what_it_should() -> None:
    """The manifest checks can fail: an unknown field is an error under --strict."""
    crd = copy.deepcopy(load_crds()["Table"])
    crd["spec"]["unknownField"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(crd, KUBERNETES_VERSIONS[0], strict=True)


def _fields_without_description(schema: dict[str, Any], path: str) -> list[str]:
    missing = [] if "description" in schema or path.endswith(".metadata") else [path]
    for name, sub in (schema.get("properties") or {}).items():
        missing += _fields_without_description(sub, f"{path}.{name}")
    if "items" in schema:
        missing += _fields_without_description(schema["items"], f"{path}[]")
    return missing


@pytest.mark.parametrize("kind", ["Table", "Partition"])
def test_every_field_has_a_description(kind: str) -> None:
    assert _fields_without_description(custom_schema(kind), kind) == []


@pytest.mark.parametrize(
    ("kind", "plural", "short", "columns"),
    [
        (
            "Table",
            "tables",
            "ptable",
            ["Status", "Billing", "RCU", "WCU", "Partitions", "Items", "Size", "Age"],
        ),
        ("Partition", "partitions", "ppart", ["Table", "Start", "Last", "Leader", "Members", "State", "Age"]),
    ],
)
def test_names_columns_and_status_subresource(kind: str, plural: str, short: str, columns: list[str]) -> None:
    crd = load_crds()[kind]
    assert crd["metadata"]["name"] == f"{plural}.{naming.GROUP}"
    assert crd["spec"]["names"]["shortNames"] == [short]
    assert crd["spec"]["names"]["categories"] == ["partita"]
    (version,) = crd["spec"]["versions"]
    assert version["name"] == naming.VERSION and version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == columns


def test_immutable_fields_carry_transition_rules() -> None:
    spec = custom_schema("Table")["properties"]["spec"]["properties"]
    # attributeDefinitions only keep their types (a new global index may define more).
    for field in ("tableName", "keySchema", "localSecondaryIndexes"):
        rules = spec[field]["x-kubernetes-validations"]
        assert any(r["rule"] == "self == oldSelf" and "immutable" in r["message"] for r in rules), field
    # A Table's replication factor changes freely (the groups' leaders move members
    # toward it); a Partition's replication-group mark, once set, stays.
    assert "x-kubernetes-validations" not in spec["replicationFactor"]
    partition = custom_schema("Partition")["properties"]["spec"]["properties"]
    (rule,) = partition["replicationGroup"]["x-kubernetes-validations"]
    assert rule["rule"] == "self || !oldSelf"
    assert any("oldSelf" in r["rule"] for r in partition["table"]["x-kubernetes-validations"])
    assert any("oldSelf.start" in r["rule"] for r in partition["hashRange"]["x-kubernetes-validations"])


@pytest.mark.parametrize("name", ["table.yaml", "partition.yaml"])
def test_examples_are_valid(name: str) -> None:
    validate(example(name))


def _broken(name: str, edit: Any) -> dict[str, Any]:
    doc = example(name)
    edit(doc)
    return doc


@pytest.mark.parametrize(
    "doc",
    [
        _broken("table.yaml", lambda d: d["spec"].pop("keySchema")),
        _broken("table.yaml", lambda d: d["spec"]["keySchema"][0].update(keyType="PRIMARY")),
        _broken("table.yaml", lambda d: d["spec"]["attributeDefinitions"][0].update(attributeType="X")),
        _broken("table.yaml", lambda d: d["spec"].update(tableName="no spaces allowed")),
        _broken("table.yaml", lambda d: d["spec"].update(billingMode="FREE")),
        _broken("table.yaml", lambda d: d["spec"]["provisionedThroughput"].update(readCapacityUnits=0)),
        _broken("table.yaml", lambda d: d["spec"].update(replicationFactor=4)),
        _broken("table.yaml", lambda d: d["spec"].update(tags=[{"key": "k"}])),
        _broken("partition.yaml", lambda d: d["spec"]["hashRange"].update(start="0x0")),
        _broken("partition.yaml", lambda d: d["spec"]["members"][0].update(role="witness")),
        _broken("partition.yaml", lambda d: d["spec"].update(members=[])),
        _broken("partition.yaml", lambda d: d["spec"].update(replicationFactor=0)),
        _broken("partition.yaml", lambda d: d["status"].update(state="Happy")),
    ],
)
def test_schemas_reject_bad_resources(doc: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)
