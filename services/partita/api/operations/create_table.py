"""CreateTable: validate the request into a `CreateTableRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api import service_model
from partita.api.operations.common import check_units_in_bounds
from partita.api.operations.tag_resource import check_tag_rules, check_tags
from partita.api.shape import CREATE_TABLE_NEEDS_NAME, Violations, expect_dict, expect_type
from partita.common import errors
from partita.control.model import BillingMode, KeyElement

_INVALID = "One or more parameter values were invalid: "
MAX_KEY_NAME_BYTES = 255  # KeySchemaAttributeName in the service model

# What Partita does with a CreateTable request. Every other member of the operation's
# input shape in DynamoDB's service model is refused by name (never accepted and
# ignored), unless it asks for exactly what a Partita table is anyway.
IMPLEMENTED = frozenset(
    {
        "TableName",
        "AttributeDefinitions",
        "KeySchema",
        "BillingMode",
        "ProvisionedThroughput",
        "Tags",
        "DeletionProtectionEnabled",
    }
)
# Streams off and SSE with the service's own key are DynamoDB's defaults, and what a
# Partita table is (Alternator's test_table_streams_off and test_table_sse_off, recorded
# against DynamoDB, create tables this way).
_WHAT_PARTITA_DOES: dict[str, object] = {
    "TableClass": "STANDARD",
    "StreamSpecification": {"StreamEnabled": False},
    "SSESpecification": {"Enabled": False},
}
NOT_IMPLEMENTED = tuple(m for m in service_model.input_members("CreateTable") if m not in IMPLEMENTED)


@dataclass(frozen=True)
class CreateTableRequest:
    table_name: str
    partition_key: KeyElement
    sort_key: KeyElement | None
    attribute_definitions: tuple[tuple[str, str], ...]
    billing_mode: BillingMode
    read_capacity: int
    write_capacity: int
    tags: tuple[tuple[str, str], ...]
    deletion_protection: bool = False


def validate(body: Any) -> CreateTableRequest:
    body = expect_dict(body)
    v = Violations()
    name = body.get("TableName")
    attr_defs = expect_type(body.get("AttributeDefinitions"), list, "a list")
    key_schema = expect_type(body.get("KeySchema"), list, "a list")
    billing = body.get("BillingMode")
    throughput = expect_type(body.get("ProvisionedThroughput"), dict, "a structure")

    if name is None:
        raise errors.validation(CREATE_TABLE_NEEDS_NAME)
    v.table_name(name)
    if v.not_null(attr_defs, "attributeDefinitions"):
        for i, d in enumerate(attr_defs, 1):
            d = expect_dict(d)
            expect_type(d.get("AttributeName"), str, "a string")
            expect_type(d.get("AttributeType"), str, "a string")
            if v.not_null(d.get("AttributeName"), f"attributeDefinitions.{i}.member.attributeName"):
                _key_name_size(d["AttributeName"], f"attributeDefinitions.{i}.member.attributeName", v)
            if v.not_null(d.get("AttributeType"), f"attributeDefinitions.{i}.member.attributeType"):
                v.enum(
                    d.get("AttributeType"), f"attributeDefinitions.{i}.member.attributeType", ["B", "N", "S"]
                )
    if v.not_null(key_schema, "keySchema"):
        for i, k in enumerate(key_schema, 1):
            k = expect_dict(k)
            expect_type(k.get("AttributeName"), str, "a string")
            expect_type(k.get("KeyType"), str, "a string")
            if v.not_null(k.get("AttributeName"), f"keySchema.{i}.member.attributeName"):
                _key_name_size(k["AttributeName"], f"keySchema.{i}.member.attributeName", v)
            if v.not_null(k.get("KeyType"), f"keySchema.{i}.member.keyType"):
                v.enum(k.get("KeyType"), f"keySchema.{i}.member.keyType", ["HASH", "RANGE"])
        if len(key_schema) > 2:
            v.add(
                _java_key_schema(key_schema), "keySchema", "Member must have length less than or equal to 2"
            )
        if len(key_schema) < 1:
            v.add(key_schema, "keySchema", "Member must have length greater than or equal to 1")
    v.enum(billing, "billingMode", ["PROVISIONED", "PAY_PER_REQUEST"])
    rcu = wcu = None
    if throughput is not None:
        rcu = expect_type(throughput.get("ReadCapacityUnits"), int, "a number")
        wcu = expect_type(throughput.get("WriteCapacityUnits"), int, "a number")
        if v.not_null(rcu, "provisionedThroughput.readCapacityUnits"):
            v.at_least(rcu, "provisionedThroughput.readCapacityUnits", 1)
        if v.not_null(wcu, "provisionedThroughput.writeCapacityUnits"):
            v.at_least(wcu, "provisionedThroughput.writeCapacityUnits", 1)
    tags = check_tags(expect_type(body.get("Tags"), list, "a list") or [], v)
    v.raise_if_any()
    assert isinstance(name, str) and attr_defs is not None and key_schema is not None
    _check_index_names(body, key_schema)
    refuse_not_implemented(body)

    # Precedence as DynamoDB's (recorded by dynalite's tests): billing mode against
    # throughput first, then key attributes against definitions, then key types.
    mode: BillingMode = billing or "PROVISIONED"
    if mode == "PROVISIONED" and throughput is None:
        raise errors.validation(
            _INVALID + "ReadCapacityUnits and WriteCapacityUnits must both be specified "
            "when BillingMode is PROVISIONED"
        )
    if mode == "PAY_PER_REQUEST" and throughput is not None:
        raise errors.validation(
            _INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified "
            "when BillingMode is PAY_PER_REQUEST"
        )
    check_units_in_bounds(rcu, wcu)
    defined: dict[str, Any] = {}  # names to "S"|"N"|"B", checked against the enum above
    for d in attr_defs:
        if d["AttributeName"] in defined:
            # DynamoDB's words, as ScyllaDB recorded them (scylladb/scylladb#13870).
            raise errors.validation(f"Attribute Name is duplicated: {d['AttributeName']}")
        defined[d["AttributeName"]] = d["AttributeType"]
    key_names = [k["AttributeName"] for k in key_schema]
    undefined = any(n not in defined for n in key_names)
    if len(key_names) == 2:
        if undefined or (key_names[0] == key_names[1] and len(defined) == 1):
            raise errors.validation("Invalid KeySchema: Some index key attribute have no definition")
        if key_names[0] == key_names[1]:
            raise errors.validation(
                "Both the Hash Key and the Range Key element in the KeySchema have the same name"
            )
    elif undefined:
        raise errors.validation(
            _INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
            f"Keys: [{', '.join(key_names)}], AttributeDefinitions: [{', '.join(defined)}]"
        )
    if key_schema[0]["KeyType"] != "HASH":
        raise errors.validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if len(key_schema) == 2 and key_schema[1]["KeyType"] != "RANGE":
        raise errors.validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
    if len(defined) != len(key_names):
        raise errors.validation(
            _INVALID + "Number of attributes in KeySchema does not exactly match number of attributes "
            "defined in AttributeDefinitions"
        )
    for limit_name, units in (("ReadCapacityUnits", rcu), ("WriteCapacityUnits", wcu)):
        if units is not None and units > 40_000:
            raise errors.limit_exceeded(
                f"Subscriber limit exceeded: Provisioned throughput for {limit_name} on a table "
                "cannot exceed 40000"
            )

    check_tag_rules(tags)

    pk_name = key_schema[0]["AttributeName"]
    sk = None
    if len(key_schema) == 2:
        sk_name = key_schema[1]["AttributeName"]
        sk = KeyElement(sk_name, defined[sk_name])
    return CreateTableRequest(
        table_name=name,
        partition_key=KeyElement(pk_name, defined[pk_name]),
        sort_key=sk,
        attribute_definitions=tuple(defined.items()),
        billing_mode=mode,
        read_capacity=int(rcu or 0),
        write_capacity=int(wcu or 0),
        tags=tuple(tags),
        deletion_protection=body.get("DeletionProtectionEnabled") is True,
    )


def _java_key_schema(key_schema: list[Any]) -> str:
    """A KeySchema as DynamoDB prints it in a constraint message: Java's rendering of
    its elements, `[KeySchemaElement(attributeName=pk, keyType=HASH), ...]` (nubo-db's
    conformance suite, run against DynamoDB in 2026)."""
    elements = []
    for k in key_schema:
        fields = [
            f"{n}={k[m]}" for n, m in (("attributeName", "AttributeName"), ("keyType", "KeyType")) if m in k
        ]
        elements.append(f"KeySchemaElement({', '.join(fields)})")
    return f"[{', '.join(elements)}]"


def _key_name_size(name: str, where: str, v: Violations) -> None:
    if len(name) < 1:
        v.add(name, where, "Member must have length greater than or equal to 1")
    if len(name.encode("utf-8")) > MAX_KEY_NAME_BYTES:
        v.add(name, where, f"Member must have length less than or equal to {MAX_KEY_NAME_BYTES}")


def _check_index_names(body: dict[str, Any], key_schema: list[Any]) -> None:
    """What DynamoDB refuses of secondary indexes before they are built (which Partita
    does not do yet): a local index on a table without a sort key, and one name given
    to two indexes (nubo-db's conformance suite, run against DynamoDB in 2026)."""
    local = body.get("LocalSecondaryIndexes")
    has_range = any(isinstance(k, dict) and k.get("KeyType") == "RANGE" for k in key_schema)
    if isinstance(local, list) and local and not has_range:
        raise errors.validation(
            _INVALID + "Table KeySchema does not have a range key, which is required when specifying a "
            "LocalSecondaryIndex"
        )
    seen: set[str] = set()
    for member in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        indexes = body.get(member)
        for index in indexes if isinstance(indexes, list) else []:
            name = index.get("IndexName") if isinstance(index, dict) else None
            if isinstance(name, str) and name in seen:
                raise errors.validation(_INVALID + f"Duplicate index name: {name}")
            if isinstance(name, str):
                seen.add(name)


def refuse_not_implemented(body: dict[str, Any]) -> None:
    """A ValidationException naming every parameter Partita does not implement yet."""
    given = [
        member
        for member in NOT_IMPLEMENTED
        if body.get(member) is not None
        and not (member in _WHAT_PARTITA_DOES and body[member] == _WHAT_PARTITA_DOES[member])
    ]
    if given:
        raise errors.validation(f"Partita does not support creating a table with {', '.join(given)} yet")
