"""The Table CRD's secondary indexes (spec.globalSecondaryIndexes and
spec.localSecondaryIndexes): their schema, and the CEL rules that tie them to the
attribute definitions and keep local indexes as they were created.

The rules are evaluated with a real CEL engine as in test_cel_rules.py, and also inside
list items (the index entries carry rules of their own), as the API server does: each
item is `self` in turn, and on an update an item of a map list is correlated with the
old item of the same key (`oldSelf`)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import cel
import jsonschema
import pytest

from tests.unit.autoadmin.kube.manifests import custom_schema, example, validate

_MISSING = object()


def _violations(schema: dict[str, Any], new: Any, old: Any) -> list[str]:
    broken = []
    for r in schema.get("x-kubernetes-validations", []):
        context: dict[str, Any] = {"self": new}
        if "oldSelf" in r["rule"]:
            if old is _MISSING:
                continue  # transition rules run only when there is an old value
            context["oldSelf"] = old
        if cel.evaluate(r["rule"], context) is not True:
            broken.append(r["message"])
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(new, dict) and name in new:  # rules of absent fields are skipped
            before = old[name] if isinstance(old, dict) and name in old else _MISSING
            broken += _violations(sub, new[name], before)
    if "items" in schema and isinstance(new, list):
        keys = schema.get("x-kubernetes-list-map-keys")
        for item in new:
            before = _MISSING
            if keys and isinstance(old, list):
                same = (o for o in old if all(o.get(k) == item.get(k) for k in keys))
                before = next(same, _MISSING)
            broken += _violations(schema["items"], item, before)
    return broken


def violations(new: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """Messages of the Table rules `new` breaks (as an update of `old`, if given)."""
    return _violations(custom_schema("Table"), new, old if old is not None else _MISSING)


Edit = Callable[[dict[str, Any]], Any]


def _index(name: str, *keys: str, throughput: bool = True, **projection: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "indexName": name,
        "keySchema": [
            {"attributeName": k, "keyType": t} for k, t in zip(keys, ("HASH", "RANGE"), strict=False)
        ],
        "projection": projection or {"projectionType": "ALL"},
    }
    if throughput:
        out["provisionedThroughput"] = {"readCapacityUnits": 10, "writeCapacityUnits": 5}
    return out


def _indexed() -> dict[str, Any]:
    """The Music example with a global index on Genre/Year and a local one on Album."""
    doc = example()
    doc["spec"]["attributeDefinitions"] += [
        {"attributeName": "Genre", "attributeType": "S"},
        {"attributeName": "Year", "attributeType": "N"},
        {"attributeName": "Album", "attributeType": "S"},
    ]
    doc["spec"]["globalSecondaryIndexes"] = [_index("ByGenre", "Genre", "Year")]
    doc["spec"]["localSecondaryIndexes"] = [
        _index(
            "ByAlbum",
            "Artist",
            "Album",
            throughput=False,
            projectionType="INCLUDE",
            nonKeyAttributes=["Year"],
        )
    ]
    return doc


def _edited(edit: Edit, base: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(base if base is not None else _indexed())
    edit(doc)
    return doc


def test_a_table_with_a_global_and_a_local_index_is_valid_on_create_and_on_a_no_op_update() -> None:
    doc = _indexed()
    validate(doc)
    assert violations(doc) == []
    assert violations(doc, old=doc) == []


def _on_demand(d: dict[str, Any]) -> None:
    d["spec"]["billingMode"] = "PAY_PER_REQUEST"
    d["spec"].pop("provisionedThroughput")


def test_an_on_demand_tables_global_index_has_no_throughput() -> None:
    def edit(d: dict[str, Any]) -> None:
        _on_demand(d)
        d["spec"]["globalSecondaryIndexes"][0].pop("provisionedThroughput")

    doc = _edited(edit)
    validate(doc)
    assert violations(doc) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["spec"]["attributeDefinitions"].pop(2),  # Genre, of the global index
            "every index key attribute must be defined in attributeDefinitions",
        ),
        (
            lambda d: d["spec"]["attributeDefinitions"].pop(4),  # Album, of the local index
            "every index key attribute must be defined in attributeDefinitions",
        ),
        (
            lambda d: d["spec"]["attributeDefinitions"].append(
                {"attributeName": "Label", "attributeType": "S"}
            ),
            "attributeDefinitions may only define attributes of the table's or an index's key schema",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0].pop("provisionedThroughput"),
            "every global secondary index needs provisionedThroughput when billingMode is PROVISIONED",
        ),
        (
            _on_demand,
            "a global secondary index must not have provisionedThroughput when billingMode is PAY_PER_REQUEST",
        ),
        (
            lambda d: d["spec"]["localSecondaryIndexes"][0].update(indexName="ByGenre"),
            "a global and a local secondary index must not have the same indexName",
        ),
        (
            lambda d: d["spec"]["localSecondaryIndexes"][0]["keySchema"][0].update(attributeName="Genre"),
            "a local secondary index must have the table's HASH key",
        ),
        (
            lambda d: d["spec"]["localSecondaryIndexes"][0]["keySchema"].pop(1),
            "a local secondary index must have a RANGE key",
        ),
        (
            lambda d: d["spec"]["keySchema"].pop(1),
            "a table with local secondary indexes must have a RANGE key",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0]["keySchema"].reverse(),
            "an index keySchema must be its HASH attributes followed by its RANGE attributes",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0]["keySchema"][1].update(attributeName="Genre"),
            "an index's key attributes must be different attributes",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0]["keySchema"].append(  # a HASH after the RANGE
                {"attributeName": "Label", "keyType": "HASH"}
            ),
            "an index keySchema must be its HASH attributes followed by its RANGE attributes",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0].update(
                keySchema=[{"attributeName": f"H{n}", "keyType": "HASH"} for n in range(5)]
            ),
            "an index keySchema may have at most four HASH and four RANGE attributes",
        ),
        (
            lambda d: d["spec"]["localSecondaryIndexes"][0]["projection"].pop("nonKeyAttributes"),
            "nonKeyAttributes are required with projectionType INCLUDE and not allowed otherwise",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0]["projection"].update(nonKeyAttributes=["Album"]),
            "nonKeyAttributes are required with projectionType INCLUDE and not allowed otherwise",
        ),
    ],
)
def test_index_rules_on_create(edit: Edit, message: str) -> None:
    assert message in violations(_edited(edit))


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["spec"]["globalSecondaryIndexes"][0].update(indexName="G"),  # 3 characters at least
        lambda d: d["spec"]["globalSecondaryIndexes"][0].update(indexName="by genre"),
        lambda d: d["spec"]["globalSecondaryIndexes"][0].update(indexName="x" * 256),
        lambda d: d["spec"]["globalSecondaryIndexes"][0]["projection"].update(projectionType="SOME"),
        lambda d: d["spec"]["globalSecondaryIndexes"][0].update(keySchema=[]),
        lambda d: d["spec"]["globalSecondaryIndexes"][0].update(  # past four HASH and four RANGE
            keySchema=[{"attributeName": f"K{n}", "keyType": "HASH" if n < 4 else "RANGE"} for n in range(9)]
        ),
        lambda d: d["spec"]["localSecondaryIndexes"][0]["keySchema"].append(
            {"attributeName": "Album", "keyType": "RANGE"}
        ),
        lambda d: d["spec"]["globalSecondaryIndexes"][0].pop("projection"),
        lambda d: d["spec"]["globalSecondaryIndexes"][0]["provisionedThroughput"].update(readCapacityUnits=0),
        lambda d: d["spec"]["localSecondaryIndexes"][0]["projection"].update(nonKeyAttributes=[]),
        lambda d: d["spec"].update(localSecondaryIndexes=[]),
        lambda d: d["spec"].update(
            localSecondaryIndexes=[
                _index(f"ByAlbum{n}", "Artist", "Album", throughput=False) for n in range(6)
            ]
        ),
        lambda d: d["spec"].update(
            globalSecondaryIndexes=[_index(f"ByGenre{n}", "Genre") for n in range(21)]
        ),
    ],
)
def test_the_index_schema_refuses(edit: Edit) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate(_edited(edit))


def test_as_many_indexes_as_dynamodb_allows_fit_the_attribute_definitions() -> None:
    """5 local indexes (a RANGE key each) and 20 global ones (two keys each), all on
    attributes of their own, plus the table's two: 47 definitions."""

    def edit(d: dict[str, Any]) -> None:
        spec = d["spec"]
        spec["localSecondaryIndexes"] = [
            _index(f"Local{n}", "Artist", f"L{n}", throughput=False) for n in range(5)
        ]
        spec["globalSecondaryIndexes"] = [_index(f"Global{n}", f"G{n}", f"H{n}") for n in range(20)]
        spec["attributeDefinitions"] = spec["attributeDefinitions"][:2] + [
            {"attributeName": a, "attributeType": "S"}
            for a in [f"L{n}" for n in range(5)] + [f"{k}{n}" for n in range(20) for k in "GH"]
        ]

    doc = _edited(edit)
    assert len(doc["spec"]["attributeDefinitions"]) == 47
    validate(doc)
    assert violations(doc) == []


def test_a_multi_attribute_global_index_key_fits() -> None:
    """Up to four HASH attributes then up to four RANGE ones (DynamoDB's since 2025)."""

    def edit(d: dict[str, Any]) -> None:
        names = [f"H{n}" for n in range(4)] + [f"R{n}" for n in range(4)]
        d["spec"]["globalSecondaryIndexes"].append(
            {
                "indexName": "ByMany",
                "keySchema": [
                    {"attributeName": n, "keyType": "HASH" if n[0] == "H" else "RANGE"} for n in names
                ],
                "projection": {"projectionType": "ALL"},
                "provisionedThroughput": {"readCapacityUnits": 1, "writeCapacityUnits": 1},
            }
        )
        d["spec"]["attributeDefinitions"] += [{"attributeName": n, "attributeType": "S"} for n in names]

    doc = _edited(edit)
    validate(doc)
    assert violations(doc) == []


# --- updates --------------------------------------------------------------------------


def _add_global_index(d: dict[str, Any]) -> None:
    d["spec"]["attributeDefinitions"].append({"attributeName": "Label", "attributeType": "S"})
    d["spec"]["globalSecondaryIndexes"].append(_index("ByLabel", "Label"))


def _drop_global_index(d: dict[str, Any]) -> None:
    d["spec"].pop("globalSecondaryIndexes")
    d["spec"]["attributeDefinitions"] = [
        a for a in d["spec"]["attributeDefinitions"] if a["attributeName"] not in ("Genre", "Year")
    ]


@pytest.mark.parametrize(
    "edit",
    [
        _add_global_index,  # with a definition of its new key attribute
        _drop_global_index,  # and of the definitions only it used
        lambda d: d["spec"]["globalSecondaryIndexes"][0].update(
            provisionedThroughput={"readCapacityUnits": 100, "writeCapacityUnits": 50}
        ),
    ],
    ids=["add-global", "drop-global", "global-throughput"],
)
def test_global_indexes_may_be_added_removed_and_rescaled(edit: Edit) -> None:
    old = _indexed()
    new = _edited(edit)
    assert violations(new) == []
    assert violations(new, old=old) == []


def test_a_global_index_may_be_added_to_a_table_that_had_none() -> None:
    old = _edited(_drop_global_index)
    assert violations(_indexed(), old=old) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["spec"]["localSecondaryIndexes"][0].update(projection={"projectionType": "ALL"}),
            "localSecondaryIndexes are immutable",
        ),
        (
            lambda d: d["spec"]["localSecondaryIndexes"][0].update(indexName="ByRecord"),
            "localSecondaryIndexes are immutable",
        ),
        (
            lambda d: d["spec"].pop("localSecondaryIndexes"),
            "localSecondaryIndexes can only be given when the table is created",
        ),
        (
            lambda d: d["spec"]["attributeDefinitions"][3].update(attributeType="S"),  # Year, N before
            "an attribute definition's type is immutable",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0]["keySchema"].pop(1),
            "a global secondary index's keySchema and projection are immutable (remove it and add a new one)",
        ),
        (
            lambda d: d["spec"]["globalSecondaryIndexes"][0].update(
                projection={"projectionType": "KEYS_ONLY"}
            ),
            "a global secondary index's keySchema and projection are immutable (remove it and add a new one)",
        ),
    ],
)
def test_local_indexes_and_existing_keys_cannot_change(edit: Edit, message: str) -> None:
    assert message in violations(_edited(edit), old=_indexed())


def test_a_local_index_cannot_be_added_after_creation() -> None:
    old = _edited(lambda d: d["spec"].pop("localSecondaryIndexes"))
    assert "localSecondaryIndexes can only be given when the table is created" in violations(
        _indexed(), old=old
    )
