"""The CRDs' CEL rules (x-kubernetes-validations), evaluated with a real CEL engine the
way the API server applies them: `self` is the field's new value, `oldSelf` its value
before an update (transition rules run on updates only)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import cel
import pytest

from tests.unit.autoadmin.kube.manifests import custom_schema, example

Rule = tuple[tuple[str, ...], str, str]  # (path, rule, message)


def _rules(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[Rule]:
    out = [(path, r["rule"], r["message"]) for r in schema.get("x-kubernetes-validations", [])]
    for name, sub in (schema.get("properties") or {}).items():
        out += _rules(sub, (*path, name))
    return out


_MISSING = object()


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def violations(kind: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """Messages of the rules `new` breaks (as an update of `old`, if given)."""
    broken = []
    for path, rule, message in _rules(custom_schema(kind)):
        value = _at(new, path)
        if value is _MISSING:
            continue  # the API server skips rules of absent fields
        context: dict[str, Any] = {"self": value}
        if "oldSelf" in rule:
            before = _at(old, path) if old is not None else _MISSING
            if before is _MISSING:
                continue  # transition rules run only when there is an old value
            context["oldSelf"] = before
        if cel.evaluate(rule, context) is not True:
            broken.append(message)
    return broken


def _edited(name: str, edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    doc = copy.deepcopy(example(name))
    edit(doc)
    return doc


@pytest.mark.parametrize(("kind", "name"), [("Table", "table.yaml"), ("Partition", "partition.yaml")])
def test_examples_pass_every_rule_on_create_and_on_a_no_op_update(kind: str, name: str) -> None:
    doc = example(name)
    assert violations(kind, doc) == []
    assert violations(kind, doc, old=doc) == []


def _on_demand(d: dict[str, Any]) -> None:
    d["spec"]["billingMode"] = "PAY_PER_REQUEST"


def _provisioned_without_throughput(d: dict[str, Any]) -> None:
    d["spec"].pop("provisionedThroughput")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_on_demand, "provisionedThroughput must not be set when billingMode is PAY_PER_REQUEST"),
        (
            _provisioned_without_throughput,
            "provisionedThroughput is required when billingMode is PROVISIONED",
        ),
        (
            lambda d: d["spec"]["keySchema"][0].update(attributeName="Album"),
            "every key attribute must be defined in attributeDefinitions",
        ),
        (
            lambda d: d["spec"]["attributeDefinitions"].append(
                {"attributeName": "Year", "attributeType": "N"}
            ),
            "attributeDefinitions may only define attributes of the table's or an index's key schema",
        ),
        (
            lambda d: d["spec"].update(keySchema=list(reversed(d["spec"]["keySchema"]))),
            "keySchema must be a HASH key optionally followed by a RANGE key",
        ),
        (
            lambda d: d["spec"]["keySchema"][1].update(attributeName="Artist"),
            "the HASH and RANGE keys must be different attributes",
        ),
        (
            lambda d: d["metadata"].update(name="t" * 237),
            "metadata.name must be at most 236 characters (partition names append 17)",
        ),
    ],
)
def test_table_cross_field_rules(edit: Callable[[dict[str, Any]], Any], message: str) -> None:
    assert message in violations("Table", _edited("table.yaml", edit))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["spec"].update(tableName="Other"), "tableName is immutable"),
        (lambda d: d["spec"]["keySchema"][1].update(keyType="HASH"), "keySchema is immutable"),
        (
            lambda d: d["spec"]["attributeDefinitions"][1].update(attributeType="N"),
            "an attribute definition's type is immutable",
        ),
    ],
)
def test_table_key_schema_and_name_are_immutable(edit: Callable[[dict[str, Any]], Any], message: str) -> None:
    old = example("table.yaml")
    assert message in violations("Table", _edited("table.yaml", edit), old=old)


def test_throughput_protection_and_replication_factor_may_change() -> None:
    old = example("table.yaml")

    def edit(d: dict[str, Any]) -> None:
        d["spec"]["provisionedThroughput"] = {"readCapacityUnits": 9000, "writeCapacityUnits": 6000}
        d["spec"]["deletionProtectionEnabled"] = False
        d["spec"]["replicationFactor"] = 2

    assert violations("Table", _edited("table.yaml", edit), old=old) == []


def test_a_single_replica_table_may_be_raised_and_lowered_back() -> None:
    single = _edited("table.yaml", lambda d: d["spec"].update(replicationFactor=1))
    tripled = _edited("table.yaml", lambda d: d["spec"].update(replicationFactor=3))
    assert violations("Table", tripled, old=single) == []
    assert violations("Table", single, old=tripled) == []


def test_a_partitions_replication_group_mark_is_never_cleared() -> None:
    marked = _edited("partition.yaml", lambda d: d["spec"].update(replicationGroup=True))
    cleared = _edited("partition.yaml", lambda d: d["spec"].update(replicationGroup=False))
    assert violations("Partition", marked, old=example("partition.yaml")) == []
    assert violations("Partition", marked, old=cleared) == []
    assert violations("Partition", marked, old=marked) == []
    assert "replicationGroup cannot be cleared" in violations("Partition", cleared, old=marked)


@pytest.mark.parametrize(
    ("edit", "message", "as_update"),
    [
        (
            lambda d: d["spec"]["hashRange"].update(start="8000000000000000"),
            "hashRange.start must not be after hashRange.last",
            False,
        ),
        (
            lambda d: d["spec"]["hashRange"].update(start="0000000000000001"),
            "hashRange.start is immutable (a split shortens the range from its end)",
            True,
        ),
        (lambda d: d["spec"].update(table="other"), "table is immutable", True),
        (
            lambda d: [m.update(role="log") for m in d["spec"]["members"]],
            "at least one member must be a full replica",
            False,
        ),
    ],
)
def test_partition_rules(edit: Callable[[dict[str, Any]], Any], message: str, as_update: bool) -> None:
    old = example("partition.yaml") if as_update else None
    assert message in violations("Partition", _edited("partition.yaml", edit), old=old)


def test_a_split_may_shorten_a_range_from_its_end() -> None:
    old = example("partition.yaml")
    split = _edited("partition.yaml", lambda d: d["spec"]["hashRange"].update(last="3fffffffffffffff"))
    assert violations("Partition", split, old=old) == []


def _split_child(d: dict[str, Any]) -> None:
    d["spec"].update(parent="music-0000000000000000", parentIndex=42)


@pytest.mark.parametrize(
    ("before", "edit", "message"),
    [
        (
            lambda d: d["spec"].update(splitAt="8000000000000000"),
            lambda d: d["spec"].update(splitAt="4000000000000000"),
            "splitAt is immutable once set",
        ),
        (_split_child, lambda d: d["spec"].update(parent="other"), "parent is immutable"),
        (_split_child, lambda d: d["spec"].update(parentIndex=43), "parentIndex is immutable"),
    ],
)
def test_a_replicated_splits_fields_never_change_once_set(
    before: Callable[[dict[str, Any]], Any], edit: Callable[[dict[str, Any]], Any], message: str
) -> None:
    old = _edited("partition.yaml", before)
    new = copy.deepcopy(old)
    edit(new)
    assert violations("Partition", old, old=old) == []
    assert message in violations("Partition", new, old=old)


def test_a_partition_may_be_marked_for_a_split() -> None:
    old = example("partition.yaml")
    marked = _edited("partition.yaml", lambda d: d["spec"].update(splitAt="8000000000000000"))
    assert violations("Partition", marked, old=old) == []
