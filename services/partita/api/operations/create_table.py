"""CreateTable: validate the request into a `CreateTableRequest`.

The checks run in DynamoDB's order, first failure wins after the first step:
1. the request's shape: every constraint violation at once, at most ten of them
   (`Violations`; dynalite's recordings show DynamoDB stopping at ten);
2. parameters Partita does not implement, refused by name;
3. the table: billing mode against throughput, then its key schema against the
   attribute definitions (dynalite's recordings);
4. the secondary indexes (`_check_indexes`): the lists not empty, a local index only on
   a table with a sort key, every index key defined and every definition used, names
   unique, then each index's key schema, projection and throughput, then the per-table
   counts.
Where each message comes from is said where it is raised.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from partita.api import resource_policy, service_model
from partita.api.operations import on_demand_throughput, stream_specification, warm_throughput
from partita.api.operations.common import check_units_in_bounds
from partita.api.operations.tag_resource import check_tag_rules, check_tags
from partita.api.shape import CREATE_TABLE_NEEDS_NAME, Violations, expect_dict, expect_type
from partita.common import errors
from partita.control.model import BillingMode, IndexKind, KeyElement, SecondaryIndex

_INVALID = "One or more parameter values were invalid: "
MAX_KEY_NAME_BYTES = 255  # KeySchemaAttributeName in the service model
MAX_VIOLATIONS = 10  # shape violations DynamoDB reports in one answer (dynalite's recordings)
MAX_LOCAL_INDEXES = 5  # per table (DynamoDB's quota, and its message)
MAX_GLOBAL_INDEXES = 20  # per table, the default quota
MAX_NON_KEY_ATTRIBUTES = 20  # per index: NonKeyAttributeNameList in the service model
MAX_NON_KEY_NAME = 255  # NonKeyAttributeName, in characters as the service model counts them
MAX_PROJECTED_ATTRIBUTES = 100  # NonKeyAttributes summed over a table's indexes (DynamoDB's docs)
MAX_KEY_PART_ATTRIBUTES = 4  # HASH, and RANGE, attributes of a global index's multi-attribute key
# ProjectionType's values in the order DynamoDB's enum message prints them (dynalite's
# recordings), not the model's.
_PROJECTION_TYPES = ["ALL", "INCLUDE", "KEYS_ONLY"]
# Members of a global index Partita does not implement, refused by name as the table's are.
_GLOBAL_INDEX_NOT_IMPLEMENTED = ("OnDemandThroughput", "WarmThroughput")

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
        "LocalSecondaryIndexes",
        "GlobalSecondaryIndexes",
        "StreamSpecification",
        "ResourcePolicy",
        "WarmThroughput",
        "OnDemandThroughput",
        "TableClass",
    }
)
# SSE with the service's own key is DynamoDB's default, and what a Partita table is
# (Alternator's test_table_sse_off, recorded against DynamoDB, creates tables this way).
_WHAT_PARTITA_DOES: dict[str, object] = {
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
    stream: dict[str, Any] | None = None  # StreamSpecification as sent (stream_specification.py)
    # Local indexes first, then global ones, each in request order; `created_at` is left
    # to the router.
    indexes: tuple[SecondaryIndex, ...] = ()
    resource_policy: str | None = None  # ResourcePolicy: a document attached at creation
    warm_throughput: tuple[int, int] = (0, 0)  # WarmThroughput's (read, write); 0: not asked
    on_demand_max: tuple[int, int] = (0, 0)  # OnDemandThroughput's (read, write); 0: none
    table_class: str = ""  # TableClass as given (its enum is the service model's); "": not given


def validate(body: Any) -> CreateTableRequest:
    body = expect_dict(body)
    v = Violations()
    name = body.get("TableName")
    attr_defs = expect_type(body.get("AttributeDefinitions"), list, "a list")
    key_schema = expect_type(body.get("KeySchema"), list, "a list")
    local = expect_type(body.get("LocalSecondaryIndexes"), list, "a list")
    global_ = expect_type(body.get("GlobalSecondaryIndexes"), list, "a list")
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
                key_name_size(d["AttributeName"], f"attributeDefinitions.{i}.member.attributeName", v)
            if v.not_null(d.get("AttributeType"), f"attributeDefinitions.{i}.member.attributeType"):
                v.enum(
                    d.get("AttributeType"), f"attributeDefinitions.{i}.member.attributeType", ["B", "N", "S"]
                )
    if v.not_null(key_schema, "keySchema"):
        key_schema_shape(key_schema, "keySchema", v, max_length=2)
    _index_shapes(local, "localSecondaryIndexes", "LOCAL", v)
    _index_shapes(global_, "globalSecondaryIndexes", "GLOBAL", v)
    v.enum(billing, "billingMode", ["PROVISIONED", "PAY_PER_REQUEST"])
    rcu, wcu = throughput_shape(throughput, "provisionedThroughput", v)
    tags = check_tags(expect_type(body.get("Tags"), list, "a list") or [], v)
    del v.messages[MAX_VIOLATIONS:]  # DynamoDB names the first ten only
    v.raise_if_any()
    assert isinstance(name, str) and attr_defs is not None and key_schema is not None
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
    on_demand_max = on_demand_throughput.on_create(
        on_demand_throughput.requested(body.get("OnDemandThroughput")), mode
    )
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
        raise errors.validation(_undefined_keys(key_names, defined))
    if key_schema[0]["KeyType"] != "HASH":
        raise errors.validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if len(key_schema) == 2 and key_schema[1]["KeyType"] != "RANGE":
        raise errors.validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
    # With indexes, unused definitions have their own message (_check_indexes); dynalite
    # skips this check for any index list given, even an empty one.
    if local is None and global_ is None and len(defined) != len(key_names):
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
    indexes = _check_indexes(local, global_, key_schema, defined, mode)
    warm = warm_throughput.asked(body.get("WarmThroughput"))
    stream = body.get("StreamSpecification")
    stream_specification.on_create(stream, 0.0)  # its checks; the router makes the stream

    check_tag_rules(tags)
    policy = expect_type(body.get("ResourcePolicy"), str, "a string")
    if policy is not None:
        resource_policy.parse(policy)

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
        stream=stream,
        indexes=indexes,
        resource_policy=policy,
        warm_throughput=warm,
        on_demand_max=on_demand_max,
        table_class=expect_type(body.get("TableClass"), str, "a string") or "",
    )


# --- shape ------------------------------------------------------------------------------


def key_schema_shape(key_schema: list[Any], where: str, v: Violations, max_length: int | None) -> None:
    """A KeySchema's constraints: each element's members, then the list's length. The
    model no longer limits the list (a global index's key may have up to eight
    attributes); the table's and a local index's are still refused past two, in Coral's
    words (nubo-db's conformance suite for the table, the 2026 catalogue cited in
    `_check_indexes` for a local index)."""
    for i, k in enumerate(key_schema, 1):
        k = expect_dict(k)
        expect_type(k.get("AttributeName"), str, "a string")
        expect_type(k.get("KeyType"), str, "a string")
        if v.not_null(k.get("AttributeName"), f"{where}.{i}.member.attributeName"):
            key_name_size(k["AttributeName"], f"{where}.{i}.member.attributeName", v)
        if v.not_null(k.get("KeyType"), f"{where}.{i}.member.keyType"):
            # The same enum in an index's key schema (moto's aws_verified
            # test_create_table__specify_non_key_column).
            v.enum(k.get("KeyType"), f"{where}.{i}.member.keyType", ["HASH", "RANGE"])
    if max_length is not None and len(key_schema) > max_length:
        v.add(
            _java_key_schema(key_schema), where, f"Member must have length less than or equal to {max_length}"
        )
    if len(key_schema) < 1:
        v.add(key_schema, where, "Member must have length greater than or equal to 1")


def _index_shapes(indexes: list[Any] | None, where: str, kind: IndexKind, v: Violations) -> None:
    """The constraints of each index of one list, member by member (dynalite's recordings:
    'Value null at 'localSecondaryIndexes.1.member.indexName' ...', the name checked as a
    table name is, an empty key schema or NonKeyAttributes list, throughput below 1)."""
    for i, index in enumerate(indexes or [], 1):
        at = f"{where}.{i}.member"
        index = expect_dict(index)
        name = expect_type(index.get("IndexName"), str, "a string")
        key_schema = expect_type(index.get("KeySchema"), list, "a list")
        projection = expect_type(index.get("Projection"), dict, "a structure")
        v.table_name(name, f"{at}.indexName")  # IndexName has TableName's constraints
        if v.not_null(key_schema, f"{at}.keySchema"):
            key_schema_shape(key_schema, f"{at}.keySchema", v, max_length=2 if kind == "LOCAL" else None)
        if v.not_null(projection, f"{at}.projection"):
            projection_shape(projection, f"{at}.projection", v)
        if kind == "GLOBAL":
            throughput = expect_type(index.get("ProvisionedThroughput"), dict, "a structure")
            throughput_shape(throughput, f"{at}.provisionedThroughput", v)


def projection_shape(projection: dict[str, Any], where: str, v: Violations) -> None:
    projection_type = expect_type(projection.get("ProjectionType"), str, "a string")
    non_key = expect_type(projection.get("NonKeyAttributes"), list, "a list")
    v.enum(projection_type, f"{where}.projectionType", _PROJECTION_TYPES)
    if non_key is None:
        return
    for j, attribute in enumerate(non_key, 1):
        expect_type(attribute, str, "a string")
        if v.not_null(attribute, f"{where}.nonKeyAttributes.{j}.member"):
            if len(attribute) < 1:
                v.add(
                    attribute,
                    f"{where}.nonKeyAttributes.{j}.member",
                    "Member must have length greater than or equal to 1",
                )
            if len(attribute) > MAX_NON_KEY_NAME:
                v.add(
                    attribute,
                    f"{where}.nonKeyAttributes.{j}.member",
                    f"Member must have length less than or equal to {MAX_NON_KEY_NAME}",
                )
    if len(non_key) < 1:
        v.add(
            _java_list(non_key),
            f"{where}.nonKeyAttributes",
            "Member must have length greater than or equal to 1",
        )
    if len(non_key) > MAX_NON_KEY_ATTRIBUTES:
        v.add(
            _java_list(non_key),
            f"{where}.nonKeyAttributes",
            f"Member must have length less than or equal to {MAX_NON_KEY_ATTRIBUTES}",
        )


def throughput_shape(
    throughput: dict[str, Any] | None, where: str, v: Violations
) -> tuple[int | None, int | None]:
    if throughput is None:
        return None, None
    rcu = expect_type(throughput.get("ReadCapacityUnits"), int, "a number")
    wcu = expect_type(throughput.get("WriteCapacityUnits"), int, "a number")
    if v.not_null(rcu, f"{where}.readCapacityUnits"):
        v.at_least(rcu, f"{where}.readCapacityUnits", 1)
    if v.not_null(wcu, f"{where}.writeCapacityUnits"):
        v.at_least(wcu, f"{where}.writeCapacityUnits", 1)
    return rcu, wcu


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


def _java_list(items: list[Any]) -> str:
    """A list of strings as Java prints it: `[a, b]` (dynalite's recordings show `'[]'`)."""
    return f"[{', '.join(str(item) for item in items)}]"


def key_name_size(name: str, where: str, v: Violations) -> None:
    if len(name) < 1:
        v.add(name, where, "Member must have length greater than or equal to 1")
    if len(name.encode("utf-8")) > MAX_KEY_NAME_BYTES:
        v.add(name, where, f"Member must have length less than or equal to {MAX_KEY_NAME_BYTES}")


def refuse_not_implemented(body: dict[str, Any]) -> None:
    """A ValidationException naming every parameter Partita does not implement yet."""
    given = [
        member
        for member in NOT_IMPLEMENTED
        if body.get(member) is not None
        and not (member in _WHAT_PARTITA_DOES and body[member] == _WHAT_PARTITA_DOES[member])
    ]
    for member in _GLOBAL_INDEX_NOT_IMPLEMENTED:
        if any(index.get(member) is not None for index in body.get("GlobalSecondaryIndexes") or []):
            given.append(f"GlobalSecondaryIndexes.{member}")
    if given:
        raise errors.validation(f"Partita does not support creating a table with {', '.join(given)} yet")


# --- secondary indexes ------------------------------------------------------------------


def _check_indexes(
    local: list[dict[str, Any]] | None,
    global_: list[dict[str, Any]] | None,
    key_schema: list[dict[str, Any]],
    defined: dict[str, Any],
    mode: BillingMode,
) -> tuple[SecondaryIndex, ...]:
    """The indexes' semantic checks, in DynamoDB's order, and the indexes they describe.

    Sources: dynalite's test/createTable.js (recorded against DynamoDB) for the order
    and most messages; moto's tests (aws_verified, or verified against the API in
    getmoto/moto#4428) for unused definitions and the key type enum; ScyllaDB
    Alternator's test_gsi*.py / test_lsi.py / test_provisioned_throughput.py (run
    against DynamoDB) for multi-attribute keys and index throughput; a catalogue of
    DynamoDB's answers probed in 2026 (ack-api-quirks) for the multi-attribute key
    messages, INCLUDE without NonKeyAttributes and duplicate NonKeyAttributes, and for
    the unused-definitions check coming before projection, throughput and name checks.
    """
    if local is None and global_ is None:
        return ()
    locals_ = local or []
    globals_ = global_ or []
    # Empty lists and a local index on a table without a sort key come first (dynalite:
    # 'List of LocalSecondaryIndexes is empty' and the range-key message both reported
    # for requests whose definitions are also unused).
    if local is not None and not local:
        raise errors.validation(_INVALID + "List of LocalSecondaryIndexes is empty")
    if locals_ and len(key_schema) != 2:
        raise errors.validation(
            _INVALID + "Table KeySchema does not have a range key, which is required when specifying a "
            "LocalSecondaryIndex"
        )
    if global_ is not None and not global_:
        raise errors.validation(_INVALID + "List of GlobalSecondaryIndexes is empty")

    everything = [*locals_, *globals_]
    # Every index key defined, the first index short of one named with all its keys
    # (dynalite: 'Keys: [a, c]' for an index keyed on a defined a and an undefined c).
    for index in everything:
        names = [k["AttributeName"] for k in index["KeySchema"]]
        if any(n not in defined for n in names):
            raise errors.validation(_undefined_keys(names, defined))
    # Then every definition used by some key (moto: 'Some AttributeDefinitions are not
    # used'; the 'Number of attributes in KeySchema ...' message is for tables without
    # indexes). The keys used are printed in the order of a java.util.HashSet of them,
    # as every recorded answer shows; the definitions in request order.
    used = [k["AttributeName"] for k in key_schema] + [
        k["AttributeName"] for index in everything for k in index["KeySchema"]
    ]
    if set(defined) - set(used):
        raise errors.validation(
            _INVALID
            + f"Some AttributeDefinitions are not used. AttributeDefinitions: [{', '.join(defined)}], "
            f"keys used: [{', '.join(_java_set_order(used))}]"
        )
    # Then names, across both lists (nubo-db's conformance suite; dynalite's recording
    # for a local and a global index of one name).
    seen: set[str] = set()
    for index in everything:
        if index["IndexName"] in seen:
            raise errors.validation(_INVALID + f"Duplicate index name: {index['IndexName']}")
        seen.add(index["IndexName"])

    table_hash = key_schema[0]["AttributeName"]
    for index in locals_:
        _check_local_key_schema(index, table_hash)
        check_projection(index)
    if len(locals_) > MAX_LOCAL_INDEXES:
        raise errors.validation(
            _INVALID + f"Number of LocalSecondaryIndexes exceeds per-table limit of {MAX_LOCAL_INDEXES}"
        )
    for index in globals_:
        check_global_key_schema(index)
        check_projection(index)
        _check_global_throughput(index, mode)
    if len(globals_) > MAX_GLOBAL_INDEXES:
        raise errors.validation(
            _INVALID + f"GlobalSecondaryIndex count exceeds the per-table limit of {MAX_GLOBAL_INDEXES}"
        )
    # Not found recorded: DynamoDB's documented limit, in the words a CloudFormation
    # preflight rule quotes for it (an attribute projected into two indexes counts twice).
    projected = sum(len(index["Projection"].get("NonKeyAttributes") or []) for index in everything)
    if projected > MAX_PROJECTED_ATTRIBUTES:
        raise errors.validation(
            _INVALID
            + f"Number of projected attributes in all indexes exceeds limit of {MAX_PROJECTED_ATTRIBUTES}"
        )
    return tuple(
        [secondary_index(index, "LOCAL", defined, mode) for index in locals_]
        + [secondary_index(index, "GLOBAL", defined, mode) for index in globals_]
    )


def _check_local_key_schema(index: dict[str, Any], table_hash: str) -> None:
    """A local index's key: the table's partition key and a sort key of its own, checked
    in the order dynalite recorded (same name, HASH first, RANGE second, a RANGE at all,
    the table's hash key)."""
    keys = index["KeySchema"]
    if len(keys) == 2 and keys[0]["AttributeName"] == keys[1]["AttributeName"]:
        raise errors.validation(
            "Both the Hash Key and the Range Key element in the KeySchema have the same name"
        )
    if keys[0]["KeyType"] != "HASH":
        raise errors.validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if len(keys) == 2 and keys[1]["KeyType"] != "RANGE":
        raise errors.validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
    if len(keys) != 2:
        raise errors.validation(
            _INVALID + f"Index KeySchema does not have a range key for index: {index['IndexName']}"
        )
    index_hash = keys[0]["AttributeName"]
    if index_hash != table_hash:
        raise errors.validation(
            _INVALID
            + "Index KeySchema does not have the same leading hash key as table KeySchema for index: "
            f"{index['IndexName']}. index hash key: {index_hash}, table hash key: {table_hash}"
        )


def check_global_key_schema(index: dict[str, Any]) -> None:
    """A global index's key: up to four HASH attributes, then up to four RANGE ones.
    A repeated name in a two-element key has dynalite's recorded message; in a longer
    one (possible only since multi-attribute keys) the one probed in 2026."""
    keys = index["KeySchema"]
    names = [k["AttributeName"] for k in keys]
    kinds = [k["KeyType"] for k in keys]
    if len(set(names)) < len(names):
        if len(names) == 2:
            raise errors.validation(
                "Both the Hash Key and the Range Key element in the KeySchema have the same name"
            )
        raise errors.validation("The KeySchema contains multiple key attributes with the same name")
    if kinds[0] != "HASH":
        raise errors.validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if "RANGE" in kinds and "HASH" in kinds[kinds.index("RANGE") :]:
        raise errors.validation(
            _INVALID + "All HASH key attributes must precede RANGE key attributes in the KeySchema"
        )
    for kind in ("HASH", "RANGE"):
        if kinds.count(kind) > MAX_KEY_PART_ATTRIBUTES:
            raise errors.validation(
                _INVALID + f"The KeySchema exceeds the maximum allowed number of {kind} key attributes"
            )


def check_projection(index: dict[str, Any]) -> None:
    """ProjectionType is required after all (Alternator: 'Unknown ProjectionType: null'
    though the model calls it optional); NonKeyAttributes only with INCLUDE, then
    required, and without repeats."""
    projection = index["Projection"]
    projection_type = projection.get("ProjectionType")
    non_key = projection.get("NonKeyAttributes")
    if projection_type is None:
        raise errors.validation(_INVALID + "Unknown ProjectionType: null")
    if non_key is not None and projection_type != "INCLUDE":
        raise errors.validation(
            _INVALID + f"ProjectionType is {projection_type}, but NonKeyAttributes is specified"
        )
    if non_key is None and projection_type == "INCLUDE":
        raise errors.validation(_INVALID + "ProjectionType is INCLUDE, but NonKeyAttributes is not specified")
    seen: set[str] = set()
    for attribute in non_key or []:
        if attribute in seen:
            raise errors.validation(_INVALID + f"Duplicate element in NonKeyAttributes: {attribute}")
        seen.add(attribute)


def _check_global_throughput(index: dict[str, Any], mode: BillingMode) -> None:
    """A global index has its own throughput exactly when the table is provisioned
    (dynalite's recording for on-demand; Alternator's test_provisioned_throughput, run
    against DynamoDB, for provisioned)."""
    throughput = index.get("ProvisionedThroughput")
    if mode == "PAY_PER_REQUEST" and throughput is not None:
        raise errors.validation(
            _INVALID + f"ProvisionedThroughput should not be specified for index: {index['IndexName']} "
            "when BillingMode is PAY_PER_REQUEST"
        )
    if mode == "PROVISIONED" and throughput is None:
        raise errors.validation(
            _INVALID + f"ProvisionedThroughput is not specified for index: {index['IndexName']}"
        )
    if throughput is not None:
        # Not found recorded for an index: the table's bound, in the table's words.
        check_units_in_bounds(throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"])


def secondary_index(
    index: dict[str, Any], kind: IndexKind, defined: dict[str, Any], mode: BillingMode
) -> SecondaryIndex:
    keys = index["KeySchema"]
    hashes = [
        KeyElement(k["AttributeName"], defined[k["AttributeName"]]) for k in keys if k["KeyType"] == "HASH"
    ]
    ranges = [
        KeyElement(k["AttributeName"], defined[k["AttributeName"]]) for k in keys if k["KeyType"] == "RANGE"
    ]
    projection = index["Projection"]
    throughput = index.get("ProvisionedThroughput") if kind == "GLOBAL" and mode == "PROVISIONED" else None
    return SecondaryIndex(
        name=index["IndexName"],
        kind=kind,
        partition_key=hashes[0],
        sort_key=ranges[0] if ranges else None,
        more_hash_keys=tuple(hashes[1:]),
        more_range_keys=tuple(ranges[1:]),
        projection_type=projection["ProjectionType"],
        non_key_attributes=tuple(projection.get("NonKeyAttributes") or ()),
        read_capacity=int(throughput["ReadCapacityUnits"]) if throughput else 0,
        write_capacity=int(throughput["WriteCapacityUnits"]) if throughput else 0,
    )


def _undefined_keys(key_names: list[str], defined: dict[str, Any]) -> str:
    return (
        _INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
        f"Keys: [{', '.join(key_names)}], AttributeDefinitions: [{', '.join(defined)}]"
    )


def _java_set_order(names: Iterable[str]) -> list[str]:
    """`names` without repeats, in the order a java.util.HashSet of them (default
    capacity, inserted in this order) iterates: by bucket, the spread String.hashCode
    masked to the table's size. DynamoDB's 'keys used: [...]' lists come in this order in
    every answer recorded (e.g. '[a, sk, pk]', '[CreatedTime, ProductName, ProductId]')."""
    unique = list(dict.fromkeys(names))
    capacity = 16
    while len(unique) > capacity * 3 // 4:  # HashMap doubles past a 0.75 load factor
        capacity *= 2
    return sorted(unique, key=lambda name: _java_spread_hash(name) & (capacity - 1))


def _java_spread_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit), spread as HashMap does."""
    code_units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(code_units), 2):
        h = (31 * h + int.from_bytes(code_units[i : i + 2], "big")) & 0xFFFFFFFF
    return h ^ (h >> 16)
