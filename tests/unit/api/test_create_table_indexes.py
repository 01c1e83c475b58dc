"""CreateTable with secondary indexes: what DynamoDB accepts, and its exact refusals.

Where each message and its precedence come from (answers recorded against DynamoDB):
- mhart/dynalite test/createTable.js (its assertions were recorded against DynamoDB; its
  validations/createTable.js shows their order): the index members' constraint
  violations (indexName, keySchema, projection, provisionedThroughput, nonKeyAttributes),
  at most ten per answer; empty index lists; the range-key rules of local indexes;
  undefined index keys ('Keys: [a, c]', the index's own keys); same-name, HASH and RANGE
  rules; 'Unknown ProjectionType: null'; 'ProjectionType is ALL, but NonKeyAttributes is
  specified'; duplicate names, also between a local and a global index; more than 5
  local and more than 20 global indexes (ValidationException, not LimitExceeded);
  throughput on an on-demand table's global index.
- getmoto/moto: test_create_table__specify_non_key_column (aws_verified) for the KeyType
  enum inside an index's key schema; test_create_table_with_redundant_attributes (from
  getmoto/moto#4428, checked against the API) for 'Some AttributeDefinitions are not
  used. AttributeDefinitions: [...], keys used: [...]' when indexes are given; its
  multi-attribute GSI tests (aws_verified) for keys of three elements.
- nubo-db/dynamodb-conformance tier3 error-messages/createTable.test.ts (run against
  DynamoDB in 2026): duplicate index names among global indexes; a local index on a
  table without a sort key.
- ScyllaDB Alternator test/alternator (run against DynamoDB): test_gsi_composite_keys.py
  (multi-attribute GSI keys exist since November 2025, LSIs stay at two elements),
  test_lsi.py, test_gsi.py (INCLUDE without NonKeyAttributes, duplicate
  NonKeyAttributes, missing ProjectionType), test_provisioned_throughput.py
  ('ProvisionedThroughput is not specified for index' on a provisioned table).
- A catalogue of DynamoDB's answers probed in 2026 (ack-api-quirks, DDB-TABLE-123..129
  and -442): the words of the multi-attribute key rules, 'ProjectionType is INCLUDE, but
  NonKeyAttributes is not specified', 'Duplicate element in NonKeyAttributes: x', more
  than 20 NonKeyAttributes, a three-element local key schema, the unused-definitions
  check coming before projection, throughput and name checks, and the order of 'keys
  used' ('[a, sk, pk]': a java.util.HashSet's).
Not found recorded, so Partita's own choice (each test says so): the words for more
than 100 projected attributes (DynamoDB's documented limit; the text a CloudFormation
preflight rule quotes), the order of the 'AttributeDefinitions' list of the unused
message (request order here), and the out-of-bounds check of an index's throughput.
"""

from __future__ import annotations

from typing import Any

import pytest

from partita.api.operations import create_table
from partita.control.model import KeyElement, SecondaryIndex
from tests.unit.api.test_create_table_validation import failure, validation_message

INVALID = "One or more parameter values were invalid: "
THROUGHPUT = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}


def hash_key(name: str) -> dict[str, str]:
    return {"AttributeName": name, "KeyType": "HASH"}


def range_key(name: str) -> dict[str, str]:
    return {"AttributeName": name, "KeyType": "RANGE"}


def attrs(*names: str) -> list[dict[str, str]]:
    return [{"AttributeName": n, "AttributeType": "S"} for n in names]


def index(name: str, *keys: dict[str, str], projection: Any = None, **extra: Any) -> dict[str, Any]:
    out = {
        "IndexName": name,
        "KeySchema": list(keys),
        "Projection": {"ProjectionType": "ALL"} if projection is None else projection,
    }
    out.update(extra)
    return out


def gsi(name: str, *keys: dict[str, str], projection: Any = None, **extra: Any) -> dict[str, Any]:
    """A global index of a provisioned table: with its own throughput unless told."""
    extra.setdefault("ProvisionedThroughput", THROUGHPUT)
    if extra["ProvisionedThroughput"] is None:
        del extra["ProvisionedThroughput"]
    return index(name, *keys, projection=projection, **extra)


def request(**overrides: Any) -> dict[str, Any]:
    """dynalite's table: 'abc', attributes a and b, key (a, b), provisioned 1/1."""
    body: dict[str, Any] = {
        "TableName": "abc",
        "AttributeDefinitions": attrs("a", "b"),
        "KeySchema": [hash_key("a"), range_key("b")],
        "ProvisionedThroughput": THROUGHPUT,
    }
    for key, value in overrides.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


# --- accepted ---------------------------------------------------------------------------


def test_a_local_and_a_global_index_parse_into_secondary_indexes() -> None:
    body = request(
        AttributeDefinitions=[
            {"AttributeName": "a", "AttributeType": "S"},
            {"AttributeName": "b", "AttributeType": "S"},
            {"AttributeName": "when", "AttributeType": "N"},
            {"AttributeName": "owner", "AttributeType": "B"},
        ],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 6},
        LocalSecondaryIndexes=[
            index("by_when", hash_key("a"), range_key("when"), projection={"ProjectionType": "KEYS_ONLY"})
        ],
        GlobalSecondaryIndexes=[
            gsi(
                "by-owner",
                hash_key("owner"),
                range_key("when"),
                projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["title", "body"]},
                ProvisionedThroughput={"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
            )
        ],
    )
    req = create_table.validate(body)
    assert req.indexes == (
        SecondaryIndex(
            name="by_when",
            kind="LOCAL",
            partition_key=KeyElement("a", "S"),
            sort_key=KeyElement("when", "N"),
            projection_type="KEYS_ONLY",
        ),
        SecondaryIndex(
            name="by-owner",
            kind="GLOBAL",
            partition_key=KeyElement("owner", "B"),
            sort_key=KeyElement("when", "N"),
            projection_type="INCLUDE",
            non_key_attributes=("title", "body"),
            read_capacity=3,
            write_capacity=4,
        ),
    )
    assert req.indexes[0].created_at == req.indexes[1].created_at == 0.0  # the router sets it
    assert (req.read_capacity, req.write_capacity) == (5, 6)
    assert req.attribute_definitions == (("a", "S"), ("b", "S"), ("when", "N"), ("owner", "B"))


def test_an_on_demand_tables_global_index_has_no_throughput_of_its_own() -> None:
    body = request(
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput=None,
        AttributeDefinitions=attrs("a", "b", "x"),
        GlobalSecondaryIndexes=[index("by-x", hash_key("x"))],
    )
    (only,) = create_table.validate(body).indexes
    assert (only.kind, only.partition_key, only.sort_key) == ("GLOBAL", KeyElement("x", "S"), None)
    assert (only.read_capacity, only.write_capacity) == (0, 0)


def test_a_global_index_identical_to_the_table_key_is_accepted() -> None:
    # Alternator's test_gsi_identical and the 2026 catalogue: silly, but allowed.
    body = request(GlobalSecondaryIndexes=[gsi("same", hash_key("a"), range_key("b"))])
    assert create_table.validate(body).indexes[0].key_names == ["a", "b"]


def test_a_table_without_indexes_has_none() -> None:
    assert create_table.validate(request()).indexes == ()


def test_both_index_members_are_implemented() -> None:
    assert {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} <= create_table.IMPLEMENTED
    assert not {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} & set(create_table.NOT_IMPLEMENTED)


# --- constraint violations (Coral's words, all at once) ------------------------------------


def test_bad_local_index_names_and_an_empty_key_schema_are_constraint_violations() -> None:
    name = "a" * 256
    body = request(
        KeySchema=[hash_key("a")],
        LocalSecondaryIndexes=[
            {"IndexName": "h;", "KeySchema": [], "Projection": {}},
            {"IndexName": name, "KeySchema": [hash_key("a")], "Projection": {}},
        ],
    )
    assert validation_message(body) == (
        "4 validation errors detected: "
        "Value 'h;' at 'localSecondaryIndexes.1.member.indexName' failed to satisfy constraint: "
        "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; "
        "Value 'h;' at 'localSecondaryIndexes.1.member.indexName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3; "
        "Value '[]' at 'localSecondaryIndexes.1.member.keySchema' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1; "
        f"Value '{name}' at 'localSecondaryIndexes.2.member.indexName' failed to satisfy constraint: "
        "Member must have length less than or equal to 255"
    )


def test_bad_global_index_names_and_throughput_are_constraint_violations() -> None:
    name = "a" * 256
    body = request(
        KeySchema=[hash_key("a")],
        GlobalSecondaryIndexes=[
            gsi("h;", projection={}, ProvisionedThroughput={"ReadCapacityUnits": 0, "WriteCapacityUnits": 0}),
            gsi(name, hash_key("a"), projection={}, ProvisionedThroughput={}),
        ],
    )
    at = "globalSecondaryIndexes"
    assert validation_message(body) == (
        "8 validation errors detected: "
        f"Value 'h;' at '{at}.1.member.indexName' failed to satisfy constraint: "
        "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; "
        f"Value 'h;' at '{at}.1.member.indexName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3; "
        f"Value '[]' at '{at}.1.member.keySchema' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1; "
        f"Value '0' at '{at}.1.member.provisionedThroughput.readCapacityUnits' failed to satisfy constraint: "
        "Member must have value greater than or equal to 1; "
        f"Value '0' at '{at}.1.member.provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: "
        "Member must have value greater than or equal to 1; "
        f"Value '{name}' at '{at}.2.member.indexName' failed to satisfy constraint: "
        "Member must have length less than or equal to 255; "
        f"Value null at '{at}.2.member.provisionedThroughput.readCapacityUnits' failed to satisfy constraint: "
        "Member must not be null; "
        f"Value null at '{at}.2.member.provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_at_most_ten_constraint_violations_are_reported() -> None:
    # dynalite: nine empty local indexes make 27 violations; DynamoDB reports ten.
    message = validation_message(request(LocalSecondaryIndexes=[{}] * 9))
    assert message.startswith("10 validation errors detected: ")
    violations = message.removeprefix("10 validation errors detected: ").split("; ")
    assert violations[:3] == [
        f"Value null at 'localSecondaryIndexes.1.member.{member}' failed to satisfy constraint: "
        "Member must not be null"
        for member in ("indexName", "keySchema", "projection")
    ]
    assert violations[-1] == (
        "Value null at 'localSecondaryIndexes.4.member.indexName' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_an_empty_global_index_lacks_its_three_required_members() -> None:
    body = request(GlobalSecondaryIndexes=[gsi("abc", hash_key("a"), range_key("b")), {}])
    assert validation_message(body) == (
        "3 validation errors detected: "
        "Value null at 'globalSecondaryIndexes.2.member.indexName' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'globalSecondaryIndexes.2.member.keySchema' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'globalSecondaryIndexes.2.member.projection' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_a_projection_type_outside_the_enum_and_empty_non_key_attributes_are_violations() -> None:
    projection = {"NonKeyAttributes": [], "ProjectionType": "abc"}
    body = request(LocalSecondaryIndexes=[index("abc", hash_key("a"), range_key("b"), projection=projection)])
    assert validation_message(body) == (
        "2 validation errors detected: "
        "Value 'abc' at 'localSecondaryIndexes.1.member.projection.projectionType' failed to satisfy "
        "constraint: Member must satisfy enum value set: [ALL, INCLUDE, KEYS_ONLY]; "
        "Value '[]' at 'localSecondaryIndexes.1.member.projection.nonKeyAttributes' failed to satisfy "
        "constraint: Member must have length greater than or equal to 1"
    )


def test_more_than_twenty_non_key_attributes_in_one_index_are_a_violation() -> None:
    names = [f"n{i}" for i in range(21)]
    projection = {"ProjectionType": "INCLUDE", "NonKeyAttributes": names}
    body = request(GlobalSecondaryIndexes=[gsi("abc", hash_key("a"), projection=projection)])
    assert validation_message(body) == (
        f"1 validation error detected: Value '[{', '.join(names)}]' at "
        "'globalSecondaryIndexes.1.member.projection.nonKeyAttributes' failed to satisfy constraint: "
        "Member must have length less than or equal to 20"
    )


@pytest.mark.parametrize(
    ("member", "where"),
    [
        ("GlobalSecondaryIndexes", "globalSecondaryIndexes"),
        ("LocalSecondaryIndexes", "localSecondaryIndexes"),
    ],
)
def test_a_key_type_outside_the_enum_in_an_index_is_named_with_its_position(member: str, where: str) -> None:
    # moto's aws_verified test: DynamoDB trips over KeyType=SORT before the undefined keys.
    keys = [hash_key("a"), {"AttributeName": "n/a", "KeyType": "SORT"}]
    body = request(**{member: [gsi("TestGSI", *keys)]})
    assert validation_message(body) == (
        f"1 validation error detected: Value 'SORT' at '{where}.1.member.keySchema.2.member.keyType' "
        "failed to satisfy constraint: Member must satisfy enum value set: [HASH, RANGE]"
    )


def test_a_local_index_key_of_three_elements_fails_the_length_constraint() -> None:
    keys = [hash_key("a"), range_key("b"), range_key("c")]
    body = request(AttributeDefinitions=attrs("a", "b", "c"), LocalSecondaryIndexes=[index("lsi", *keys)])
    assert validation_message(body) == (
        "1 validation error detected: Value '[KeySchemaElement(attributeName=a, keyType=HASH), "
        "KeySchemaElement(attributeName=b, keyType=RANGE), KeySchemaElement(attributeName=c, keyType=RANGE)]' "
        "at 'localSecondaryIndexes.1.member.keySchema' failed to satisfy constraint: "
        "Member must have length less than or equal to 2"
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"LocalSecondaryIndexes": {"IndexName": "abc"}},
        {"GlobalSecondaryIndexes": ["abc"]},
        {"GlobalSecondaryIndexes": [{"IndexName": 5}]},
        {"GlobalSecondaryIndexes": [{"IndexName": "abc", "KeySchema": {}}]},
        {"GlobalSecondaryIndexes": [{"IndexName": "abc", "Projection": []}]},
        {"GlobalSecondaryIndexes": [{"IndexName": "abc", "Projection": {"ProjectionType": 1}}]},
        {"GlobalSecondaryIndexes": [{"IndexName": "abc", "Projection": {"NonKeyAttributes": ["a", 123]}}]},
        {
            "GlobalSecondaryIndexes": [
                {"IndexName": "abc", "ProvisionedThroughput": {"ReadCapacityUnits": "1"}}
            ]
        },
    ],
)
def test_index_members_of_the_wrong_json_type_are_serialization_errors(overrides: dict[str, Any]) -> None:
    # dynalite's assertType cases; Alternator's test_gsi_projection_error_nonstring_nonkeyattributes.
    assert failure(request(**overrides)).code == "SerializationException"


# --- the lists, and a local index's table -------------------------------------------------


def test_an_empty_local_index_list_is_refused() -> None:
    body = request(KeySchema=[hash_key("a")], LocalSecondaryIndexes=[])
    assert validation_message(body) == INVALID + "List of LocalSecondaryIndexes is empty"


def test_an_empty_global_index_list_is_refused() -> None:
    body = request(KeySchema=[hash_key("a")], GlobalSecondaryIndexes=[])
    assert validation_message(body) == INVALID + "List of GlobalSecondaryIndexes is empty"


def test_a_local_index_needs_a_table_with_a_sort_key_before_its_keys_are_looked_at() -> None:
    # dynalite: the index's key c is undefined and RANGE-first, and b is unused; the
    # table's missing sort key is what DynamoDB reports.
    body = request(KeySchema=[hash_key("a")], LocalSecondaryIndexes=[index("abc", range_key("c"))])
    assert validation_message(body) == (
        INVALID + "Table KeySchema does not have a range key, which is required when specifying a "
        "LocalSecondaryIndex"
    )


def test_the_tables_billing_mode_is_checked_before_its_indexes() -> None:
    body = request(ProvisionedThroughput=None, LocalSecondaryIndexes=[])
    assert validation_message(body) == (
        INVALID
        + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"
    )


# --- definitions: every index key defined, every definition used ---------------------------


def test_an_index_key_without_a_definition_is_named_with_all_the_index_keys() -> None:
    body = request(LocalSecondaryIndexes=[index("abc", hash_key("a"), range_key("c"))])
    assert validation_message(body) == (
        INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
        "Keys: [a, c], AttributeDefinitions: [a, b]"
    )


def test_the_first_index_short_of_a_definition_is_reported_before_duplicate_names() -> None:
    body = request(
        GlobalSecondaryIndexes=[
            gsi("abc", range_key("c"), range_key("d"), projection={}),
            gsi("abc", range_key("e"), projection={}),
        ]
    )
    assert validation_message(body) == (
        INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
        "Keys: [c, d], AttributeDefinitions: [a, b]"
    )


def test_an_undefined_index_key_is_reported_before_an_unused_definition() -> None:
    # dynalite: b is defined and unused, c is used and undefined.
    body = request(
        KeySchema=[hash_key("a")], GlobalSecondaryIndexes=[gsi("abc", range_key("c"), projection={})]
    )
    assert validation_message(body) == (
        INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
        "Keys: [c], AttributeDefinitions: [a, b]"
    )


def test_a_definition_no_key_uses_is_refused_with_the_keys_used() -> None:
    # moto (getmoto/moto#4428, checked against the API): with indexes the message names
    # the definitions and the keys used, not the counts.
    body = request(
        KeySchema=[hash_key("id")],
        AttributeDefinitions=attrs("id", "user", "created_at"),
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput=None,
        GlobalSecondaryIndexes=[index("gsi_user-items", hash_key("user"))],
    )
    assert validation_message(body) == (
        INVALID + "Some AttributeDefinitions are not used. AttributeDefinitions: [id, user, created_at], "
        "keys used: [id, user]"
    )


def test_the_keys_used_are_listed_in_dynamodbs_hash_set_order() -> None:
    # The 2026 catalogue's answer: 'keys used: [a, sk, pk]' for a table (pk, sk) with a
    # global index on a (the definitions' order there is not known to be request order).
    body = request(
        KeySchema=[hash_key("pk"), range_key("sk")],
        AttributeDefinitions=attrs("pk", "sk", "a", "b", "c"),
        GlobalSecondaryIndexes=[gsi("g-a", hash_key("a"))],
    )
    assert validation_message(body).endswith(", keys used: [a, sk, pk]")


def test_an_unused_definition_masks_projection_throughput_and_name_problems() -> None:
    # The 2026 catalogue: the unused-definitions check runs before projection,
    # throughput and name checks.
    body = request(
        AttributeDefinitions=attrs("a", "b", "x", "extra"),
        GlobalSecondaryIndexes=[
            gsi("dup", hash_key("x"), projection={}, ProvisionedThroughput=None),
            gsi("dup", hash_key("x")),
        ],
    )
    assert "Some AttributeDefinitions are not used." in validation_message(body)


# --- names ------------------------------------------------------------------------------


def test_two_global_indexes_may_not_share_a_name() -> None:
    body = request(
        GlobalSecondaryIndexes=[gsi("abc", hash_key("a"), range_key("b")), gsi("abc", hash_key("b"))]
    )
    assert validation_message(body) == INVALID + "Duplicate index name: abc"


def test_a_local_and_a_global_index_may_not_share_a_name() -> None:
    body = request(
        LocalSecondaryIndexes=[index("abc", hash_key("a"), range_key("b"))],
        GlobalSecondaryIndexes=[gsi("abc", hash_key("a"), range_key("b"))],
    )
    assert validation_message(body) == INVALID + "Duplicate index name: abc"


# --- a local index's key ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            [hash_key("a"), hash_key("a")],
            "Both the Hash Key and the Range Key element in the KeySchema have the same name",
        ),
        (
            [hash_key("a"), range_key("a")],
            "Both the Hash Key and the Range Key element in the KeySchema have the same name",
        ),
        ([range_key("a")], "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"),
        (
            [hash_key("a"), hash_key("b")],
            "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type",
        ),
        ([hash_key("b")], INVALID + "Index KeySchema does not have a range key for index: abc"),
        (
            [hash_key("b"), range_key("a")],
            INVALID + "Index KeySchema does not have the same leading hash key as table KeySchema for index: "
            "abc. index hash key: b, table hash key: a",
        ),
    ],
    ids=["same-name-hash", "same-name-range", "first-not-hash", "second-not-range", "no-range", "other-hash"],
)
def test_a_local_index_key_is_the_tables_hash_key_and_a_sort_key(
    keys: list[dict[str, str]], message: str
) -> None:
    body = request(LocalSecondaryIndexes=[index("abc", *keys, projection={})])
    assert validation_message(body) == message


# --- a global index's key (multi-attribute since November 2025) --------------------------


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([range_key("a")], "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"),
        (
            [range_key("b"), hash_key("a")],
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ),
        (
            [hash_key("a"), range_key("a")],
            "Both the Hash Key and the Range Key element in the KeySchema have the same name",
        ),
        (
            [hash_key("a"), hash_key("b"), range_key("a")],
            "The KeySchema contains multiple key attributes with the same name",
        ),
        (
            [hash_key("a"), range_key("b"), hash_key("c")],
            INVALID + "All HASH key attributes must precede RANGE key attributes in the KeySchema",
        ),
        (
            [hash_key(n) for n in "abcde"],
            INVALID + "The KeySchema exceeds the maximum allowed number of HASH key attributes",
        ),
        (
            [hash_key("a"), *(range_key(n) for n in "bcdef")],
            INVALID + "The KeySchema exceeds the maximum allowed number of RANGE key attributes",
        ),
    ],
    ids=[
        "range-only",
        "range-first",
        "same-name",
        "same-name-multi",
        "hash-after-range",
        "five-hash",
        "five-range",
    ],
)
def test_a_global_index_key_has_its_hash_attributes_before_its_range_attributes(
    keys: list[dict[str, str]], message: str
) -> None:
    names = sorted({k["AttributeName"] for k in keys} | {"a", "b"})
    body = request(AttributeDefinitions=attrs(*names), GlobalSecondaryIndexes=[gsi("abc", *keys)])
    assert validation_message(body) == message


@pytest.mark.parametrize(
    "keys",
    [[hash_key("x"), hash_key("y")], [hash_key("x"), range_key("y"), range_key("z")]],
    ids=["two-hash", "two-range"],
)
def test_a_multi_attribute_global_key_becomes_its_hash_and_range_attributes(
    keys: list[dict[str, str]],
) -> None:
    # Valid in DynamoDB since November 2025 (moto's and Alternator's multi-attribute tests).
    names = [k["AttributeName"] for k in keys]
    body = request(AttributeDefinitions=attrs("a", "b", *names), GlobalSecondaryIndexes=[gsi("multi", *keys)])
    (index,) = create_table.validate(body).indexes
    assert [e.name for e in index.hash_keys] == [k["AttributeName"] for k in keys if k["KeyType"] == "HASH"]
    assert [e.name for e in index.range_keys] == [k["AttributeName"] for k in keys if k["KeyType"] == "RANGE"]
    assert index.key_names == names


# --- projection ------------------------------------------------------------------------


@pytest.mark.parametrize("member", ["LocalSecondaryIndexes", "GlobalSecondaryIndexes"])
@pytest.mark.parametrize("projection", [{}, {"NonKeyAttributes": ["a"]}], ids=["empty", "no-type"])
def test_a_projection_without_a_type_is_an_unknown_projection_type(
    member: str, projection: dict[str, Any]
) -> None:
    body = request(**{member: [gsi("abc", hash_key("a"), range_key("b"), projection=projection)]})
    assert validation_message(body) == INVALID + "Unknown ProjectionType: null"


def test_a_global_index_on_another_hash_key_reaches_the_projection_check() -> None:
    # dynalite: no local-index key rules for a global index.
    body = request(GlobalSecondaryIndexes=[gsi("abc", hash_key("b"), range_key("a"), projection={})])
    assert validation_message(body) == INVALID + "Unknown ProjectionType: null"


@pytest.mark.parametrize("projection_type", ["ALL", "KEYS_ONLY"])
def test_non_key_attributes_need_an_include_projection(projection_type: str) -> None:
    projection = {"ProjectionType": projection_type, "NonKeyAttributes": ["a"]}
    body = request(LocalSecondaryIndexes=[index("abc", hash_key("a"), range_key("b"), projection=projection)])
    assert validation_message(body) == (
        INVALID + f"ProjectionType is {projection_type}, but NonKeyAttributes is specified"
    )


def test_an_include_projection_needs_non_key_attributes() -> None:
    body = request(
        GlobalSecondaryIndexes=[gsi("abc", hash_key("b"), projection={"ProjectionType": "INCLUDE"})]
    )
    assert (
        validation_message(body)
        == INVALID + "ProjectionType is INCLUDE, but NonKeyAttributes is not specified"
    )


def test_a_non_key_attribute_listed_twice_is_refused() -> None:
    projection = {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x", "y", "x"]}
    body = request(GlobalSecondaryIndexes=[gsi("abc", hash_key("b"), projection=projection)])
    assert validation_message(body) == INVALID + "Duplicate element in NonKeyAttributes: x"


def test_more_than_a_hundred_projected_attributes_over_all_indexes_are_refused() -> None:
    # Not found recorded: DynamoDB's documented limit (an attribute projected into two
    # indexes counts twice), in the words a CloudFormation preflight rule quotes.
    twenty = {"ProjectionType": "INCLUDE", "NonKeyAttributes": [f"n{j}" for j in range(20)]}
    five = [gsi(f"gsi{i}", hash_key("b"), projection=twenty) for i in range(5)]
    assert len(create_table.validate(request(GlobalSecondaryIndexes=five)).indexes) == 5
    six = [
        *five,
        gsi("gsi5", hash_key("b"), projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]}),
    ]
    assert validation_message(request(GlobalSecondaryIndexes=six)) == (
        INVALID + "Number of projected attributes in all indexes exceeds limit of 100"
    )


# --- counts ------------------------------------------------------------------------------


def test_more_than_five_local_indexes_are_a_validation_error() -> None:
    six = [index(f"ab{c}", hash_key("a"), range_key("b")) for c in "cdefgh"]
    assert len(create_table.validate(request(LocalSecondaryIndexes=six[:5])).indexes) == 5
    error = failure(request(LocalSecondaryIndexes=six))
    assert (error.code, error.message) == (
        "ValidationException",
        INVALID + "Number of LocalSecondaryIndexes exceeds per-table limit of 5",
    )


def test_more_than_twenty_global_indexes_are_a_validation_error() -> None:
    many = [gsi(f"abc{i}", hash_key("a"), range_key("b")) for i in range(21)]
    assert len(create_table.validate(request(GlobalSecondaryIndexes=many[:20])).indexes) == 20
    error = failure(request(GlobalSecondaryIndexes=many))
    assert (error.code, error.message) == (
        "ValidationException",
        INVALID + "GlobalSecondaryIndex count exceeds the per-table limit of 20",
    )


# --- a global index's throughput ---------------------------------------------------------


def test_a_provisioned_tables_global_index_needs_its_own_throughput() -> None:
    body = request(GlobalSecondaryIndexes=[gsi("g-a", hash_key("b"), ProvisionedThroughput=None)])
    assert validation_message(body) == INVALID + "ProvisionedThroughput is not specified for index: g-a"


def test_an_on_demand_tables_global_index_may_not_have_throughput() -> None:
    body = request(
        KeySchema=[hash_key("a")],
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput=None,
        GlobalSecondaryIndexes=[
            index("abc", hash_key("a"), range_key("b")),
            index("abd", hash_key("a"), range_key("b"), ProvisionedThroughput=THROUGHPUT),
        ],
    )
    assert validation_message(body) == (
        INVALID
        + "ProvisionedThroughput should not be specified for index: abd when BillingMode is PAY_PER_REQUEST"
    )


def test_a_global_indexs_throughput_beyond_a_trillion_units_is_out_of_bounds() -> None:
    # Not found recorded for an index: the table's bound, in the table's words.
    throughput = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1_000_000_000_001}
    body = request(GlobalSecondaryIndexes=[gsi("abc", hash_key("b"), ProvisionedThroughput=throughput)])
    assert validation_message(body) == "Given value 1000000000001 for WriteCapacityUnits is out of bounds"


@pytest.mark.parametrize("member", ["OnDemandThroughput", "WarmThroughput"])
def test_a_global_index_member_partita_does_not_implement_is_refused_by_name(member: str) -> None:
    body = request(GlobalSecondaryIndexes=[gsi("abc", hash_key("b"), **{member: {"ReadUnitsPerSecond": 5}})])
    assert validation_message(body) == (
        f"Partita does not support creating a table with GlobalSecondaryIndexes.{member} yet"
    )
