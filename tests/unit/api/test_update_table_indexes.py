"""UpdateTable's GlobalSecondaryIndexUpdates and AttributeDefinitions: what DynamoDB
accepts, how the table spec changes, and its exact refusals.

Where each message and its precedence come from (answers recorded against DynamoDB):
- mhart/dynalite test/updateTable.js: the entries' member paths, an entry without an
  action, one index named twice (before the table is looked up), six Deletes as a
  LimitExceededException (before the indexes are looked up), an Update without
  ProvisionedThroughput (from when the model still required it).
- ScyllaDB Alternator test/alternator/test_gsi_updatetable.py (run against DynamoDB): a
  Create's keys must be defined in the request even when the table knows them; a name a
  global or local index already has ('already exists'); the redefinition message
  (quoted in test_gsi_key_type_conflict_on_update); two Creates, two Deletes, a Create
  and a Delete as LimitExceededException; deleting an index twice.
- alexdebrie/dynamodbguide.com#16 (DynamoDB's answer, 2019): a Create whose sort key has
  no definition in the request.
- The 2026 catalogue of DynamoDB's answers (ack-api-quirks, table-indexes.md and
  DDB-TABLE-442), findings: -015 and -359 (an empty list alone counts as absent, with
  another change it is refused), -160 (two actions in one entry), -162 (no
  AttributeDefinitions for a Create; other definitions ignored), -442 ('Attempting to
  create an index which already exists', before the schema; a local index named by a
  Delete or Update; an on-demand table's Create with throughput), -152 (a provisioned
  table's Create without throughput; an Update on an on-demand table; a switch to
  PROVISIONED needs an Update for each index), -164 (an Update that changes nothing),
  -169 (the 21st index as a LimitExceededException), -174 (a Create with table
  throughput or deletion protection), -149 and -151 (definitions pruned on Delete).
Not found recorded, so Partita's own choice (each test says so): an undefined partition
key (the sort key's message), a repeated definition in the request (CreateTable's
words), the rest of the 'will not change' message past 'Current WriteCapacityUnits',
the redefinition message for keys of two elements.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from partita.api.operations import update_table
from partita.common.errors import DynamoError
from partita.control.model import KeyElement, SecondaryIndex, TableSpec
from partita.router.actions import update_table as update_table_action

INVALID = "One or more parameter values were invalid: "
NOW = 1_700_000_000.0

BY_GROUP = SecondaryIndex(
    "by_group", "GLOBAL", KeyElement("group", "S"), KeyElement("rank", "N"), read_capacity=2, write_capacity=3
)
BY_RANK = SecondaryIndex("by_rank", "LOCAL", KeyElement("pk", "S"), KeyElement("rank", "N"), "KEYS_ONLY")
PROVISIONED = TableSpec(
    name="Orders",
    table_id=7,
    partition_key=KeyElement("pk", "S"),
    sort_key=KeyElement("sk", "N"),
    attribute_definitions=(("pk", "S"), ("sk", "N"), ("group", "S"), ("rank", "N")),
    billing_mode="PROVISIONED",
    read_capacity=5,
    write_capacity=5,
    created_at=1.0,
    indexes=(BY_RANK, BY_GROUP),
)
ON_DEMAND = dataclasses.replace(
    PROVISIONED,
    billing_mode="PAY_PER_REQUEST",
    read_capacity=0,
    write_capacity=0,
    indexes=(BY_RANK, dataclasses.replace(BY_GROUP, read_capacity=0, write_capacity=0)),
)
THROUGHPUT = {"ReadCapacityUnits": 4, "WriteCapacityUnits": 6}


def keys(hash_name: str, range_name: str | None = None) -> list[dict[str, str]]:
    out = [{"AttributeName": hash_name, "KeyType": "HASH"}]
    if range_name is not None:
        out.append({"AttributeName": range_name, "KeyType": "RANGE"})
    return out


def create(name: str, schema: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return {
        "Create": {"IndexName": name, "KeySchema": schema, "Projection": {"ProjectionType": "ALL"}, **extra}
    }


def defs(**types: str) -> list[dict[str, str]]:
    return [{"AttributeName": n, "AttributeType": t} for n, t in types.items()]


def request(*updates: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"TableName": "Orders", "GlobalSecondaryIndexUpdates": list(updates), **extra}


def failure(body: dict[str, Any], spec: TableSpec | None = None) -> DynamoError:
    """The error of validating `body`, then (given a spec) of applying it to `spec`."""
    with pytest.raises(DynamoError) as err:
        applied(body, spec or PROVISIONED)
    return err.value


def message(body: dict[str, Any], spec: TableSpec | None = None) -> str:
    error = failure(body, spec)
    assert error.code == "ValidationException", error
    return error.message


def applied(body: dict[str, Any], spec: TableSpec) -> TableSpec:
    """The spec after the router's edit, as UpdateTable stores it."""
    return update_table_action._updated(update_table.validate(body), spec, NOW)


# --- accepted ---------------------------------------------------------------------------


def test_a_create_adds_a_global_index_created_now_with_its_new_definitions() -> None:
    body = request(
        create("by_colour", keys("colour", "rank"), ProvisionedThroughput=THROUGHPUT),
        # Only the new key attributes need defining; rank is known already.
        AttributeDefinitions=defs(colour="S", rank="N"),
    )
    spec = applied(body, PROVISIONED)
    assert spec.indexes[-1] == SecondaryIndex(
        "by_colour",
        "GLOBAL",
        KeyElement("colour", "S"),
        KeyElement("rank", "N"),
        read_capacity=4,
        write_capacity=6,
        created_at=NOW,
    )
    assert spec.indexes[:-1] == PROVISIONED.indexes
    assert spec.attribute_definitions == (*PROVISIONED.attribute_definitions, ("colour", "S"))
    # Nothing for the autoadmin to apply: the generation stays, the table ACTIVE.
    assert spec.generation == PROVISIONED.generation


def test_definitions_no_new_key_uses_are_ignored() -> None:
    # The 2026 catalogue, DDB-TABLE-162: unused and stale definitions pass silently.
    body = request(
        create("by_colour", keys("colour")),
        AttributeDefinitions=defs(colour="S", unused="B", pk="S"),
    )
    spec = applied(body, ON_DEMAND)
    assert spec.attribute_definitions == (*ON_DEMAND.attribute_definitions, ("colour", "S"))
    assert (spec.indexes[-1].read_capacity, spec.indexes[-1].write_capacity) == (0, 0)


def test_an_on_demand_tables_new_index_has_no_throughput() -> None:
    spec = applied(
        request(create("by_colour", keys("colour")), AttributeDefinitions=defs(colour="S")), ON_DEMAND
    )
    assert spec.indexes[-1] == SecondaryIndex(
        "by_colour", "GLOBAL", KeyElement("colour", "S"), None, created_at=NOW
    )


def test_a_new_index_keyed_on_a_table_key_attribute_defined_again() -> None:
    # Alternator's test_gsi_backfill_with_real_column: the table's sort key as the hash key.
    spec = applied(request(create("by_sk", keys("sk")), AttributeDefinitions=defs(sk="N")), ON_DEMAND)
    assert spec.attribute_definitions == ON_DEMAND.attribute_definitions
    assert spec.indexes[-1].partition_key == KeyElement("sk", "N")


def test_a_delete_drops_the_index_and_the_definitions_only_it_used() -> None:
    # group is BY_GROUP's alone; rank is BY_RANK's too, so it stays.
    spec = applied(request({"Delete": {"IndexName": "by_group"}}), PROVISIONED)
    assert spec.indexes == (BY_RANK,)
    assert spec.attribute_definitions == (("pk", "S"), ("sk", "N"), ("rank", "N"))
    assert spec.generation == PROVISIONED.generation


def test_a_delete_keeps_a_definition_the_table_key_uses() -> None:
    by_sk = SecondaryIndex("by_sk", "GLOBAL", KeyElement("sk", "N"), None)
    table = dataclasses.replace(ON_DEMAND, indexes=(*ON_DEMAND.indexes, by_sk))
    assert applied(request({"Delete": {"IndexName": "by_sk"}}), table).attribute_definitions == (
        ON_DEMAND.attribute_definitions
    )


def test_an_update_sets_the_indexs_throughput() -> None:
    body = request({"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}})
    spec = applied(body, PROVISIONED)
    assert spec.indexes == (BY_RANK, dataclasses.replace(BY_GROUP, read_capacity=4, write_capacity=6))
    assert spec.generation == PROVISIONED.generation


def test_updates_of_two_indexes_and_a_create_may_share_a_request() -> None:
    # The 2026 catalogue, DDB-TABLE-159 and -174.
    other = dataclasses.replace(BY_GROUP, name="other")
    table = dataclasses.replace(PROVISIONED, indexes=(*PROVISIONED.indexes, other))
    spec = applied(
        request(
            {"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}},
            {"Update": {"IndexName": "other", "ProvisionedThroughput": THROUGHPUT}},
            create("by_colour", keys("colour"), ProvisionedThroughput=THROUGHPUT),
            AttributeDefinitions=defs(colour="S"),
        ),
        table,
    )
    assert [(i.name, i.read_capacity) for i in spec.indexes] == [
        ("by_rank", 0),
        ("by_group", 4),
        ("other", 4),
        ("by_colour", 4),
    ]


def test_a_switch_to_on_demand_leaves_the_indexes_without_throughput() -> None:
    spec = applied({"TableName": "Orders", "BillingMode": "PAY_PER_REQUEST"}, PROVISIONED)
    assert spec.indexes == ON_DEMAND.indexes
    assert spec.generation == PROVISIONED.generation + 1  # the billing switch moves it


def test_a_switch_to_provisioned_with_an_update_for_each_index() -> None:
    body = request(
        {"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}},
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    )
    spec = applied(body, ON_DEMAND)
    assert (spec.billing_mode, spec.indexes[1].read_capacity, spec.indexes[1].write_capacity) == (
        "PROVISIONED",
        4,
        6,
    )


def test_a_create_with_a_switch_to_on_demand_has_no_throughput_of_its_own() -> None:
    # The 2026 catalogue, DDB-TABLE-174: a Create may come with a BillingMode switch.
    body = request(
        create("by_colour", keys("colour")),
        AttributeDefinitions=defs(colour="S"),
        BillingMode="PAY_PER_REQUEST",
    )
    assert applied(body, PROVISIONED).indexes[-1].read_capacity == 0


# --- the answer -------------------------------------------------------------------------


def test_the_answer_lists_a_deleted_index_where_it_was_and_an_updated_one_as_it_was() -> None:
    req = update_table.validate(
        request(
            {"Delete": {"IndexName": "by_rank_g"}},
            {"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}},
        )
    )
    by_rank_g = dataclasses.replace(BY_GROUP, name="by_rank_g", partition_key=KeyElement("rank", "N"))
    before = dataclasses.replace(PROVISIONED, indexes=(BY_RANK, by_rank_g, BY_GROUP))
    after = update_table_action._updated(req, before, NOW)
    assert update_table_action._indexes_as_answered(req, before, after) == (BY_RANK, by_rank_g, BY_GROUP)


def test_the_answer_of_a_switch_to_provisioned_has_the_indexs_new_throughput() -> None:
    # The 2026 catalogue, DDB-TABLE-165.
    req = update_table.validate(
        request(
            {"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}},
            BillingMode="PROVISIONED",
            ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
        )
    )
    after = update_table_action._updated(req, ON_DEMAND, NOW)
    answered = update_table_action._indexes_as_answered(req, ON_DEMAND, after)
    assert (answered[1].read_capacity, answered[1].write_capacity) == (4, 6)


def test_the_answer_tells_each_changed_index_under_way() -> None:
    req = update_table.validate(
        request(
            create("new", keys("colour")),
            {"Update": {"IndexName": "upd", "ProvisionedThroughput": THROUGHPUT}},
            AttributeDefinitions=defs(colour="S"),
        )
    )
    description = {
        "GlobalSecondaryIndexes": [
            {"IndexName": "same", "IndexStatus": "ACTIVE"},
            {"IndexName": "upd", "IndexStatus": "ACTIVE"},
            {"IndexName": "new", "IndexStatus": "ACTIVE"},
        ]
    }
    update_table_action._tell_index_changes(req, description)
    assert description["GlobalSecondaryIndexes"] == [
        {"IndexName": "same", "IndexStatus": "ACTIVE"},
        {"IndexName": "upd", "IndexStatus": "UPDATING"},
        {"IndexName": "new", "IndexStatus": "CREATING", "Backfilling": False},
    ]


# --- the request's shape ------------------------------------------------------------------


def test_the_entries_members_are_checked_at_dynamodbs_member_paths() -> None:
    # dynalite: "should return ValidationException for bad IndexName and ProvisionedThroughput"
    # (its five violations; its ReadCapacityUnits beyond a trillion is a 2 here).
    body = request(
        {"Update": {"IndexName": "a", "ProvisionedThroughput": {}}},
        {
            "Update": {
                "IndexName": "abc;",
                "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 0},
            }
        },
    )
    assert message(body) == (
        "5 validation errors detected: "
        "Value 'a' at 'globalSecondaryIndexUpdates.1.member.update.indexName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3; "
        "Value null at 'globalSecondaryIndexUpdates.1.member.update.provisionedThroughput.readCapacityUnits' "
        "failed to satisfy constraint: Member must not be null; "
        "Value null at 'globalSecondaryIndexUpdates.1.member.update.provisionedThroughput.writeCapacityUnits' "
        "failed to satisfy constraint: Member must not be null; "
        "Value 'abc;' at 'globalSecondaryIndexUpdates.2.member.update.indexName' failed to satisfy constraint: "
        "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; "
        "Value '0' at 'globalSecondaryIndexUpdates.2.member.update.provisionedThroughput.writeCapacityUnits' "
        "failed to satisfy constraint: Member must have value greater than or equal to 1"
    )


def test_an_empty_update_lacks_its_name_and_throughput() -> None:
    # dynalite: "should return ValidationException for empty Update".
    assert message(request({"Update": {}})) == (
        "2 validation errors detected: "
        "Value null at 'globalSecondaryIndexUpdates.1.member.update.indexName' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'globalSecondaryIndexUpdates.1.member.update.provisionedThroughput' failed to satisfy "
        "constraint: Member must not be null"
    )


def test_an_empty_create_and_delete_lack_their_required_members() -> None:
    # The model's required members (the front door's service model reports the same).
    assert message(request({"Create": {}}, {"Delete": {}})) == (
        "4 validation errors detected: "
        "Value null at 'globalSecondaryIndexUpdates.1.member.create.indexName' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'globalSecondaryIndexUpdates.1.member.create.keySchema' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'globalSecondaryIndexUpdates.1.member.create.projection' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'globalSecondaryIndexUpdates.2.member.delete.indexName' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_attribute_definitions_have_createtables_constraints() -> None:
    body = request(
        create("idx", keys("x")), AttributeDefinitions=[{"AttributeName": "x", "AttributeType": "Q"}]
    )
    assert message(body) == (
        "1 validation error detected: Value 'Q' at 'attributeDefinitions.1.member.attributeType' failed to "
        "satisfy constraint: Member must satisfy enum value set: [B, N, S]"
    )


@pytest.mark.parametrize(
    "updates",
    [
        "x",
        ["x"],
        [{"Create": []}],
        [{"Update": {"IndexName": 5}}],
        [{"Create": {"IndexName": "idx", "KeySchema": {}, "Projection": {}}}],
    ],
)
def test_entries_of_the_wrong_json_type_are_serialization_errors(updates: Any) -> None:
    error = failure({"TableName": "Orders", "GlobalSecondaryIndexUpdates": updates})
    assert error.code == "SerializationException"


# --- the request on its own ---------------------------------------------------------------


def test_an_empty_list_alone_asks_for_nothing() -> None:
    # dynalite: "should return ValidationException for empty GlobalSecondaryIndexUpdates";
    # the 2026 catalogue, DDB-TABLE-015. AttributeDefinitions alone asks for nothing too
    # (DDB-TABLE-162).
    expected = (
        "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates "
        "or SSESpecification or ReplicaUpdates is required"
    )
    assert message(request()) == expected
    assert message({"TableName": "Orders", "AttributeDefinitions": defs(x="S")}) == expected


def test_an_empty_list_with_another_change_is_refused() -> None:
    # The 2026 catalogue, DDB-TABLE-359.
    assert (
        message(request(DeletionProtectionEnabled=True))
        == INVALID + "List of GlobalSecondaryIndexUpdates is empty"
    )


def test_an_entry_without_an_action_is_refused() -> None:
    # dynalite: "should return ValidationException for empty index struct" (and for six).
    expected = (
        INVALID + "One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
        "GlobalSecondaryIndexUpdate.Delete must not be null"
    )
    assert message(request({})) == expected
    assert message(request({}, {}, {}, {}, {}, {})) == expected


def test_an_entry_with_two_actions_is_refused() -> None:
    # The 2026 catalogue, DDB-TABLE-160; Alternator's test_gsi_updatetable_errors ('one').
    body = request(
        {**create("ind", keys("x")), "Delete": {"IndexName": "xyz"}}, AttributeDefinitions=defs(x="N")
    )
    assert message(body) == (
        INVALID + "Only one global secondary index action is allowed per GlobalSecondaryIndexUpdate object"
    )


@pytest.mark.parametrize(
    "updates",
    [
        [{"Delete": {"IndexName": "abc"}}, {"Delete": {"IndexName": "abc"}}],  # dynalite
        [{"Delete": {"IndexName": "abc"}}, create("abc", keys("x"))],  # DDB-TABLE-160
        [{"Update": {"IndexName": "abc", "ProvisionedThroughput": THROUGHPUT}}] * 2,  # DDB-TABLE-160
    ],
)
def test_one_index_named_twice_is_refused_before_the_table_is_looked_at(
    updates: list[dict[str, Any]],
) -> None:
    body = request(*updates, AttributeDefinitions=defs(x="S"))
    with pytest.raises(DynamoError) as err:
        update_table.validate(body)
    assert err.value.message == (
        INVALID + "Only one global secondary index update per index is allowed simultaneously. Index: abc"
    )


@pytest.mark.parametrize(
    "updates",
    [
        # dynalite: six Deletes of indexes the table lacks.
        [{"Delete": {"IndexName": f"ab{c}"}} for c in "cdefgh"],
        # Alternator's test_gsi_updatetable_errors; the 2026 catalogue, DDB-TABLE-159.
        [create("ind1", keys("x")), create("ind2", keys("x"))],
        [create("ind1", keys("x")), {"Delete": {"IndexName": "ind2"}}],
    ],
)
def test_more_than_one_create_or_delete_is_a_limit_exceeded(updates: list[dict[str, Any]]) -> None:
    error = failure(request(*updates, AttributeDefinitions=defs(x="N")))
    assert (error.code, error.message) == (
        "LimitExceededException",
        "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table",
    )


@pytest.mark.parametrize(
    ("action", "member"),
    [("Create", "OnDemandThroughput"), ("Create", "WarmThroughput"), ("Update", "OnDemandThroughput")],
)
def test_index_members_partita_does_not_implement_are_refused_by_name(action: str, member: str) -> None:
    entry = (
        create("idx", keys("x"), **{member: {}})
        if action == "Create"
        else {"Update": {"IndexName": "idx", member: {}}}
    )
    assert message(request(entry, AttributeDefinitions=defs(x="S"))) == (
        f"Partita does not support updating GlobalSecondaryIndexUpdates.{action}.{member} yet"
    )


@pytest.mark.parametrize("entry", [create("idx", keys("x")), {"Delete": {"IndexName": "by_group"}}])
def test_a_create_or_delete_may_not_come_with_table_throughput(entry: dict[str, Any]) -> None:
    # The 2026 catalogue, DDB-TABLE-174 (and -442 for the Delete).
    body = request(entry, AttributeDefinitions=defs(x="S"), ProvisionedThroughput=THROUGHPUT)
    assert message(body) == INVALID + "You cannot create or delete index while updating table IOPS"


def test_a_create_may_not_come_with_deletion_protection() -> None:
    # The 2026 catalogue, DDB-TABLE-174.
    body = request(create("idx", keys("x")), AttributeDefinitions=defs(x="S"), DeletionProtectionEnabled=True)
    assert (
        message(body) == INVALID + "DeletionProtection modification must be the only operation in the request"
    )


def test_a_definition_given_twice_is_refused_for_a_create() -> None:
    # Not found recorded for UpdateTable: CreateTable's words (scylladb/scylladb#13870).
    body = request(create("idx", keys("x")), AttributeDefinitions=defs(x="S") + defs(x="N"))
    assert message(body) == "Attribute Name is duplicated: x"
    # Without a Create the definitions are not read (the 2026 catalogue, DDB-TABLE-162).
    update = {"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}}
    assert (
        applied(request(update, AttributeDefinitions=defs(x="S") + defs(x="N")), PROVISIONED)
        .indexes[1]
        .read_capacity
        == 4
    )


# --- a Create against the table -------------------------------------------------------------


@pytest.mark.parametrize("name", ["by_group", "by_rank"])
def test_a_name_an_index_already_has_is_refused_before_the_schema(name: str) -> None:
    # The 2026 catalogue (DDB-TABLE-442, 'beats schema validation'); Alternator's
    # test_gsi_backfill (a global index) and test_gsi_backfill_with_lsi (a local one).
    body = request(create(name, keys("nowhere")), AttributeDefinitions=defs(y="S"))
    assert message(body) == "Attempting to create an index which already exists"


def test_a_create_needs_attribute_definitions() -> None:
    # The 2026 catalogue, DDB-TABLE-162; Alternator's test_gsi_backfill_with_lsi ('AttributeDefinitions').
    assert message(request(create("idx", keys("group")))) == (
        INVALID + "AttributeDefinitions is not specified for index: idx"
    )


@pytest.mark.parametrize(
    ("schema", "given"),
    [
        (keys("colour", "rank"), {"colour": "S"}),  # alexdebrie/dynamodbguide.com#16
        (keys("group"), {"colour": "S"}),  # not recorded: the sort key's message
    ],
)
def test_a_key_the_request_does_not_define_is_refused(
    schema: list[dict[str, str]], given: dict[str, str]
) -> None:
    # The table knows rank and group: the request must still define them.
    body = request(
        create("idx", schema, ProvisionedThroughput=THROUGHPUT), AttributeDefinitions=defs(**given)
    )
    assert message(body) == "Invalid KeySchema: Some index key attribute have no definition"


def test_a_key_attribute_defined_with_another_type_is_refused() -> None:
    # Alternator's test_gsi_key_type_conflict_on_update quotes DynamoDB's message.
    xyz = SecondaryIndex("index1", "GLOBAL", KeyElement("xyz", "S"), None)
    table = dataclasses.replace(
        ON_DEMAND, attribute_definitions=(("pk", "S"), ("xyz", "S")), sort_key=None, indexes=(xyz,)
    )
    body = request(create("index2", keys("xyz")), AttributeDefinitions=defs(xyz="N"))
    assert message(body, table) == (
        INVALID + "Attributes cannot be redefined. Please check that your attribute has the same type as "
        "previously defined. Existing schema: Schema:[SchemaElement: key{xyz:S:HASH}] New schema: "
        "Schema:[SchemaElement: key{xyz:N:HASH}]"
    )


def test_a_table_key_attribute_defined_with_another_type_names_the_tables_schema() -> None:
    # Not recorded for two-element schemas: every element, as Java prints a list.
    body = request(create("idx", keys("sk", "colour")), AttributeDefinitions=defs(sk="S", colour="S"))
    assert message(body, ON_DEMAND) == (
        INVALID + "Attributes cannot be redefined. Please check that your attribute has the same type as "
        "previously defined. Existing schema: Schema:[SchemaElement: key{pk:S:HASH}, SchemaElement: "
        "key{sk:N:RANGE}] New schema: Schema:[SchemaElement: key{sk:S:HASH}, SchemaElement: key{colour:S:RANGE}]"
    )


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # CreateTable's checks of a global index's key (dynalite's recordings; the 2026 catalogue).
        (keys("x", "x"), "Both the Hash Key and the Range Key element in the KeySchema have the same name"),
        (
            [{"AttributeName": "x", "KeyType": "RANGE"}],
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ),
        (
            [*keys("x", "y"), {"AttributeName": "z", "KeyType": "HASH"}],
            INVALID + "All HASH key attributes must precede RANGE key attributes in the KeySchema",
        ),
    ],
)
def test_the_key_schema_is_checked_as_createtable_checks_a_global_index(
    schema: list[dict[str, str]], expected: str
) -> None:
    body = request(create("idx", schema), AttributeDefinitions=defs(x="S", y="S", z="S"))
    assert message(body, ON_DEMAND) == expected


@pytest.mark.parametrize(
    ("projection", "expected"),
    [
        ({}, "Unknown ProjectionType: null"),
        ({"ProjectionType": "INCLUDE"}, "ProjectionType is INCLUDE, but NonKeyAttributes is not specified"),
        (
            {"ProjectionType": "ALL", "NonKeyAttributes": ["a"]},
            "ProjectionType is ALL, but NonKeyAttributes is specified",
        ),
        (
            {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "a"]},
            "Duplicate element in NonKeyAttributes: a",
        ),
    ],
)
def test_the_projection_is_checked_as_createtable_checks_one(
    projection: dict[str, Any], expected: str
) -> None:
    entry = {"Create": {"IndexName": "idx", "KeySchema": keys("x"), "Projection": projection}}
    assert message(request(entry, AttributeDefinitions=defs(x="S")), ON_DEMAND) == INVALID + expected


def test_a_provisioned_tables_new_index_needs_throughput() -> None:
    # The 2026 catalogue, DDB-TABLE-152.
    body = request(create("idx", keys("x")), AttributeDefinitions=defs(x="S"))
    assert message(body, PROVISIONED) == (
        INVALID + "Both ReadCapacityUnits and WriteCapacityUnits must be specified for index: idx"
    )


def test_an_on_demand_tables_new_index_may_not_have_throughput() -> None:
    # The 2026 catalogue, DDB-TABLE-442.
    body = request(
        create("idx", keys("x"), ProvisionedThroughput=THROUGHPUT), AttributeDefinitions=defs(x="S")
    )
    assert message(body, ON_DEMAND) == (
        INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified for index: idx when "
        "BillingMode is PAY_PER_REQUEST"
    )


def test_a_new_indexs_throughput_beyond_a_trillion_units_is_out_of_bounds() -> None:
    # Not recorded for an index: the table's bound, in the table's words (as CreateTable).
    throughput = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1_000_000_000_001}
    body = request(
        create("idx", keys("x"), ProvisionedThroughput=throughput), AttributeDefinitions=defs(x="S")
    )
    assert message(body) == "Given value 1000000000001 for WriteCapacityUnits is out of bounds"


def test_a_twenty_first_global_index_is_a_limit_exceeded() -> None:
    # The 2026 catalogue, DDB-TABLE-169 (CreateTable answers a ValidationException).
    many = tuple(
        dataclasses.replace(BY_GROUP, name=f"g{i:02}", read_capacity=0, write_capacity=0) for i in range(20)
    )
    table = dataclasses.replace(ON_DEMAND, indexes=many)
    error = failure(request(create("g20", keys("x")), AttributeDefinitions=defs(x="S")), table)
    assert (error.code, error.message) == (
        "LimitExceededException",
        "Subscriber limit exceeded: Number of global secondary indexes exceeds per-table limit of 20",
    )
    # The local index does not count.
    assert (
        len(applied(request(create("g19", keys("x")), AttributeDefinitions=defs(x="S")), ON_DEMAND).indexes)
        == 3
    )


def test_more_than_a_hundred_projected_attributes_over_all_indexes_are_refused() -> None:
    # Not found recorded: CreateTable's words for DynamoDB's documented limit.
    wide = dataclasses.replace(
        BY_GROUP, projection_type="INCLUDE", non_key_attributes=tuple(f"a{i}" for i in range(95))
    )
    table = dataclasses.replace(ON_DEMAND, indexes=(wide,))
    projection = {"ProjectionType": "INCLUDE", "NonKeyAttributes": [f"b{i}" for i in range(6)]}
    entry = {"Create": {"IndexName": "idx", "KeySchema": keys("x"), "Projection": projection}}
    assert message(request(entry, AttributeDefinitions=defs(x="S")), table) == (
        INVALID + "Number of projected attributes in all indexes exceeds limit of 100"
    )


def test_a_multi_attribute_key_is_created() -> None:
    body = request(
        create("idx", [*keys("x"), {"AttributeName": "y", "KeyType": "HASH"}]),
        AttributeDefinitions=defs(x="S", y="S"),
    )
    index = applied(body, ON_DEMAND).indexes[-1]
    assert [e.name for e in index.hash_keys] == ["x", "y"] and index.range_keys == ()


# --- a Delete or an Update against the table ------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        {"Delete": {"IndexName": "nope"}},
        {"Update": {"IndexName": "nope", "ProvisionedThroughput": THROUGHPUT}},
    ],
)
def test_an_index_the_table_lacks_is_not_found(entry: dict[str, Any]) -> None:
    # Alternator's test_updatetable_delete_missing_gsi and nubo-db's conformance suite:
    # ResourceNotFoundException (the wording follows a missing table's).
    error = failure(request(entry))
    assert (error.code, error.message) == (
        "ResourceNotFoundException",
        "Requested resource not found: Index: nope not found",
    )


@pytest.mark.parametrize(
    ("entry", "verb"),
    [
        ({"Delete": {"IndexName": "by_rank"}}, "delete"),
        ({"Update": {"IndexName": "by_rank", "ProvisionedThroughput": THROUGHPUT}}, "update"),
    ],
)
def test_a_local_index_is_not_a_global_one(entry: dict[str, Any], verb: str) -> None:
    # The 2026 catalogue, DDB-TABLE-442; Alternator's test_gsi_delete_with_lsi.
    assert message(request(entry)) == f"Cannot {verb} an index that is not a GlobalSecondaryIndex: by_rank"


def test_an_on_demand_tables_index_takes_no_throughput_update() -> None:
    # The 2026 catalogue, DDB-TABLE-152.
    body = request({"Update": {"IndexName": "by_group", "ProvisionedThroughput": THROUGHPUT}})
    assert message(body, ON_DEMAND) == (
        INVALID
        + "The only Updates for index: by_group when TableThroughputMode is PAY_PER_REQUEST can be to "
        "OnDemandThroughput, WarmThroughput"
    )
    # Nor one with a switch to on-demand.
    assert "The only Updates for index: by_group" in message({**body, "BillingMode": "PAY_PER_REQUEST"})


def test_an_update_that_changes_nothing_is_refused() -> None:
    # The 2026 catalogue, DDB-TABLE-164, recorded as far as 'Current WriteCapacityUnits';
    # the rest follows the table's message.
    body = request(
        {
            "Update": {
                "IndexName": "by_group",
                "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3},
            }
        }
    )
    assert message(body) == (
        "The provisioned throughput for the index by_group will not change. The requested value equals the "
        "current value. Current ReadCapacityUnits provisioned for index by_group: 2. Requested "
        "ReadCapacityUnits: 2. Current WriteCapacityUnits provisioned for index by_group: 3. Requested "
        "WriteCapacityUnits: 3. Refer to the Amazon DynamoDB Developer Guide for current limits and how to "
        "request higher limits."
    )


def test_an_update_beyond_a_trillion_units_is_out_of_bounds() -> None:
    # dynalite's recordings put the table's lookup first; the bound is the table's.
    throughput = {"ReadCapacityUnits": 1_000_000_000_001, "WriteCapacityUnits": 1}
    body = request({"Update": {"IndexName": "by_group", "ProvisionedThroughput": throughput}})
    assert message(body) == "Given value 1000000000001 for ReadCapacityUnits is out of bounds"


def test_a_switch_to_provisioned_needs_throughput_for_each_global_index() -> None:
    # The 2026 catalogue, DDB-TABLE-152.
    body = {
        "TableName": "Orders",
        "BillingMode": "PROVISIONED",
        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    }
    assert message(body, ON_DEMAND) == INVALID + "ProvisionedThroughput must be specified for index: by_group"


def test_deleting_an_index_twice_finds_it_gone() -> None:
    # Alternator's test_gsi_delete_with_lsi.
    once = applied(request({"Delete": {"IndexName": "by_group"}}), PROVISIONED)
    assert failure(request({"Delete": {"IndexName": "by_group"}}), once).code == "ResourceNotFoundException"
