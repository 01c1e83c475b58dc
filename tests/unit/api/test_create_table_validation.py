"""CreateTable (and the other table-name requests): DynamoDB's exact messages.

Messages and their precedence follow mhart/dynalite's test/createTable.js, whose
assertions were recorded against real DynamoDB: the billing-mode/throughput check
comes before the key-schema checks, and a two-element key schema short of a
definition reads "Invalid KeySchema: Some index key attribute have no definition".
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from partita.api.operations import create_table, list_tables, table_name_only
from partita.common.errors import DynamoError
from partita.control.model import KeyElement

INVALID = "One or more parameter values were invalid: "


def hash_key(name: str = "pk") -> dict[str, str]:
    return {"AttributeName": name, "KeyType": "HASH"}


def range_key(name: str = "sk") -> dict[str, str]:
    return {"AttributeName": name, "KeyType": "RANGE"}


def attr(name: str, kind: str = "S") -> dict[str, str]:
    return {"AttributeName": name, "AttributeType": kind}


def request(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "TableName": "Orders",
        "AttributeDefinitions": [attr("pk")],
        "KeySchema": [hash_key()],
        "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    }
    for key, value in overrides.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def failure(body: Any) -> DynamoError:
    with pytest.raises(DynamoError) as err:
        create_table.validate(body)
    return err.value


def validation_message(body: Any) -> str:
    error = failure(body)
    assert error.code == "ValidationException", error
    return error.message


# --- valid requests -------------------------------------------------------------------


def test_a_provisioned_hash_key_table_is_accepted() -> None:
    req = create_table.validate(request(Tags=[{"Key": "team", "Value": "payments"}]))
    assert req.table_name == "Orders"
    assert req.partition_key == KeyElement("pk", "S")
    assert req.sort_key is None
    assert req.billing_mode == "PROVISIONED"
    assert (req.read_capacity, req.write_capacity) == (5, 5)
    assert req.tags == (("team", "payments"),)


def test_an_on_demand_table_with_a_sort_key_is_accepted() -> None:
    req = create_table.validate(
        request(
            AttributeDefinitions=[attr("sk", "N"), attr("pk", "B")],
            KeySchema=[hash_key(), range_key()],
            BillingMode="PAY_PER_REQUEST",
            ProvisionedThroughput=None,
        )
    )
    assert req.partition_key == KeyElement("pk", "B")
    assert req.sort_key == KeyElement("sk", "N")
    assert req.billing_mode == "PAY_PER_REQUEST"
    assert (req.read_capacity, req.write_capacity) == (0, 0)


@pytest.mark.parametrize("name", ["abc", "A_b.c-9", "x" * 255])
def test_table_names_within_pattern_and_length_are_accepted(name: str) -> None:
    assert create_table.validate(request(TableName=name)).table_name == name


# --- table name -----------------------------------------------------------------------


def test_a_missing_table_name_is_required_in_dynamodbs_own_words() -> None:
    # nubo-db's conformance suite, run against DynamoDB in 2026 (the data operations
    # still answer "Value null at 'tableName' ...").
    assert validation_message(request(TableName=None)) == (
        "The parameter 'TableName' is required but was not present in the request"
    )


def test_a_short_table_name_fails_the_length_constraint() -> None:
    assert validation_message(request(TableName="ab")) == (
        "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3"
    )


def test_a_long_table_name_fails_the_length_constraint() -> None:
    name = "a" * 256
    assert validation_message(request(TableName=name)) == (
        f"1 validation error detected: Value '{name}' at 'tableName' failed to satisfy constraint: "
        "Member must have length less than or equal to 255"
    )


def test_a_table_name_breaking_pattern_and_length_reports_both() -> None:
    assert validation_message(request(TableName="a;")) == (
        "2 validation errors detected: "
        "Value 'a;' at 'tableName' failed to satisfy constraint: "
        "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; "
        "Value 'a;' at 'tableName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3"
    )


def test_a_table_name_that_is_not_a_string_is_a_serialization_error() -> None:
    assert failure(request(TableName=123)).code == "SerializationException"


# --- key schema and attribute definitions: shape ------------------------------------------


def test_a_missing_key_schema_must_not_be_null() -> None:
    assert validation_message(request(KeySchema=None)) == (
        "1 validation error detected: Value null at 'keySchema' failed to satisfy constraint: Member must not be null"
    )


def test_missing_attribute_definitions_and_key_schema_are_reported_together() -> None:
    message = validation_message(request(AttributeDefinitions=None, KeySchema=None))
    assert message.startswith("2 validation errors detected: ")
    assert (
        "Value null at 'attributeDefinitions' failed to satisfy constraint: Member must not be null"
        in message
    )
    assert "Value null at 'keySchema' failed to satisfy constraint: Member must not be null" in message


def test_an_empty_key_schema_fails_the_length_constraint() -> None:
    assert validation_message(request(KeySchema=[])) == (
        "1 validation error detected: Value '[]' at 'keySchema' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1"
    )


def test_more_than_two_key_elements_fail_the_length_constraint() -> None:
    # The elements as DynamoDB's Java prints them (nubo-db's conformance suite, 2026).
    message = validation_message(request(KeySchema=[hash_key("a"), range_key("b"), range_key("c")]))
    assert message == (
        "1 validation error detected: Value '[KeySchemaElement(attributeName=a, keyType=HASH), "
        "KeySchemaElement(attributeName=b, keyType=RANGE), KeySchemaElement(attributeName=c, keyType=RANGE)]' "
        "at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2"
    )


def test_a_key_type_outside_the_enum_is_named_with_its_position() -> None:
    body = request(KeySchema=[hash_key(), {"AttributeName": "sk", "KeyType": "Woop"}])
    assert validation_message(body) == (
        "1 validation error detected: Value 'Woop' at 'keySchema.2.member.keyType' failed to satisfy constraint: "
        "Member must satisfy enum value set: [HASH, RANGE]"
    )


def test_key_elements_missing_their_members_must_not_be_null() -> None:
    body = request(KeySchema=[{"KeyType": "HASH"}, {"AttributeName": "a"}])
    assert validation_message(body) == (
        "2 validation errors detected: "
        "Value null at 'keySchema.1.member.attributeName' failed to satisfy constraint: Member must not be null; "
        "Value null at 'keySchema.2.member.keyType' failed to satisfy constraint: Member must not be null"
    )


@pytest.mark.parametrize("kind", ["SS", "a", "BOOL"])
def test_an_attribute_type_outside_the_enum_is_refused(kind: str) -> None:
    assert validation_message(request(AttributeDefinitions=[attr("pk", kind)])) == (
        f"1 validation error detected: Value '{kind}' at 'attributeDefinitions.1.member.attributeType' "
        "failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]"
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"KeySchema": "pk"},
        {"AttributeDefinitions": {"pk": "S"}},
        {"KeySchema": [{"AttributeName": 5, "KeyType": "HASH"}]},
        {"KeySchema": [{"AttributeName": ["pk"], "KeyType": "HASH"}]},
        {"AttributeDefinitions": [{"AttributeName": 5, "AttributeType": "S"}]},
        {"AttributeDefinitions": [{"AttributeName": {"a": 1}, "AttributeType": "S"}]},
        {"KeySchema": [{"AttributeName": "pk", "KeyType": ["HASH"]}]},
        {"KeySchema": ["pk"]},
        {"ProvisionedThroughput": {"ReadCapacityUnits": "5", "WriteCapacityUnits": 5}},
        {"ProvisionedThroughput": {"ReadCapacityUnits": True, "WriteCapacityUnits": 5}},
    ],
)
def test_members_of_the_wrong_json_type_are_serialization_errors(overrides: dict[str, Any]) -> None:
    assert failure(request(**overrides)).code == "SerializationException"


# --- key schema and attribute definitions: meaning --------------------------------------


def test_the_first_key_element_must_be_hash() -> None:
    body = request(AttributeDefinitions=[attr("a"), attr("b")], KeySchema=[range_key("a"), hash_key("b")])
    assert validation_message(body) == "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"


def test_two_range_keys_fail_on_the_first() -> None:
    body = request(AttributeDefinitions=[attr("a"), attr("b")], KeySchema=[range_key("a"), range_key("b")])
    assert validation_message(body) == "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"


def test_the_second_key_element_must_be_range() -> None:
    body = request(AttributeDefinitions=[attr("a"), attr("b")], KeySchema=[hash_key("a"), hash_key("b")])
    assert (
        validation_message(body) == "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type"
    )


def test_hash_and_range_key_with_one_name_are_refused() -> None:
    body = request(AttributeDefinitions=[attr("a"), attr("b")], KeySchema=[hash_key("a"), hash_key("a")])
    assert (
        validation_message(body)
        == "Both the Hash Key and the Range Key element in the KeySchema have the same name"
    )


def test_a_repeated_key_name_with_a_single_definition_has_no_definition() -> None:
    body = request(AttributeDefinitions=[attr("a")], KeySchema=[hash_key("a"), range_key("a")])
    assert validation_message(body) == "Invalid KeySchema: Some index key attribute have no definition"


def test_a_two_element_key_schema_short_of_a_definition_has_no_definition() -> None:
    body = request(AttributeDefinitions=[attr("b")], KeySchema=[hash_key("a"), range_key("b")])
    assert validation_message(body) == "Invalid KeySchema: Some index key attribute have no definition"


def test_an_undefined_hash_key_lists_keys_and_definitions() -> None:
    body = request(AttributeDefinitions=[attr("b")], KeySchema=[hash_key("a")])
    assert validation_message(body) == (
        INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
        "Keys: [a], AttributeDefinitions: [b]"
    )


def test_an_undefined_key_is_reported_before_its_key_type() -> None:
    body = request(AttributeDefinitions=[attr("b")], KeySchema=[range_key("a")])
    assert validation_message(body) == (
        INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
        "Keys: [a], AttributeDefinitions: [b]"
    )


@pytest.mark.parametrize(
    ("defs", "schema"),
    [
        ([attr("pk"), attr("extra")], [hash_key()]),
        ([attr("pk"), attr("c"), attr("sk")], [hash_key(), range_key()]),
    ],
)
def test_definitions_beyond_the_key_attributes_are_refused(
    defs: list[dict[str, str]], schema: list[dict[str, str]]
) -> None:
    assert validation_message(request(AttributeDefinitions=defs, KeySchema=schema)) == (
        INVALID + "Number of attributes in KeySchema does not exactly match number of attributes "
        "defined in AttributeDefinitions"
    )


def test_an_attribute_defined_twice_is_refused_naming_it() -> None:
    body = request(AttributeDefinitions=[attr("pk"), attr("pk", "N")])
    assert validation_message(body) == "Attribute Name is duplicated: pk"


# --- billing mode and throughput --------------------------------------------------------


def test_provisioned_billing_needs_throughput() -> None:
    body = request(BillingMode="PROVISIONED", ProvisionedThroughput=None)
    assert validation_message(body) == (
        INVALID
        + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"
    )


def test_no_billing_mode_means_provisioned_and_needs_throughput() -> None:
    assert validation_message(request(ProvisionedThroughput=None)) == (
        INVALID
        + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"
    )


def test_on_demand_billing_refuses_throughput() -> None:
    assert validation_message(request(BillingMode="PAY_PER_REQUEST")) == (
        INVALID
        + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"
    )


def test_missing_throughput_is_reported_before_key_schema_problems() -> None:
    body = request(AttributeDefinitions=[], KeySchema=[hash_key("a")], ProvisionedThroughput=None)
    assert validation_message(body) == (
        INVALID
        + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"
    )


def test_unwanted_throughput_is_reported_before_key_schema_problems() -> None:
    body = request(
        AttributeDefinitions=[], KeySchema=[hash_key("a"), hash_key("a")], BillingMode="PAY_PER_REQUEST"
    )
    assert validation_message(body) == (
        INVALID
        + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"
    )


def test_a_billing_mode_outside_the_enum_is_refused() -> None:
    assert validation_message(request(BillingMode="FREE")) == (
        "1 validation error detected: Value 'FREE' at 'billingMode' failed to satisfy constraint: "
        "Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]"
    )


def test_empty_throughput_reports_both_units_as_null() -> None:
    message = validation_message(request(ProvisionedThroughput={}))
    assert message.startswith("2 validation errors detected: ")
    assert "Value null at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: " in message
    assert (
        "Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: " in message
    )


def test_capacity_units_below_one_are_refused() -> None:
    body = request(ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": -1})
    assert validation_message(body) == (
        "1 validation error detected: Value '-1' at 'provisionedThroughput.writeCapacityUnits' failed to satisfy "
        "constraint: Member must have value greater than or equal to 1"
    )


def test_capacity_above_the_account_limit_is_limit_exceeded() -> None:
    error = failure(request(ProvisionedThroughput={"ReadCapacityUnits": 40_001, "WriteCapacityUnits": 1}))
    assert error.code == "LimitExceededException"
    assert "ReadCapacityUnits" in error.message


def test_a_body_that_is_not_an_object_is_a_serialization_error() -> None:
    assert failure(["TableName"]).code == "SerializationException"


# --- DescribeTable / DeleteTable and ListTables share the name rules --------------------


def test_table_name_only_requests_check_the_name() -> None:
    assert table_name_only.validate({"TableName": "Orders"}) == "Orders"
    with pytest.raises(DynamoError) as err:
        table_name_only.validate({})
    assert err.value.message == (
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null"
    )


def test_list_tables_defaults_to_a_page_of_100() -> None:
    req = list_tables.validate({})
    assert (req.limit, req.exclusive_start) == (100, None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"Limit": 0},
            "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: "
            "Member must have value greater than or equal to 1",
        ),
        (
            {"Limit": 101},
            "1 validation error detected: Value '101' at 'limit' failed to satisfy constraint: "
            "Member must have value less than or equal to 100",
        ),
        (
            {"ExclusiveStartTableName": "a"},
            "1 validation error detected: Value 'a' at 'exclusiveStartTableName' failed to satisfy constraint: "
            "Member must have length greater than or equal to 3",
        ),
    ],
)
def test_list_tables_validates_limit_and_start(body: dict[str, Any], message: str) -> None:
    with pytest.raises(DynamoError) as err:
        list_tables.validate(body)
    assert err.value.message == message


def test_list_tables_limit_must_be_an_integer() -> None:
    with pytest.raises(DynamoError) as err:
        list_tables.validate({"Limit": "10"})
    assert err.value.code == "SerializationException"


# --- key attribute names: 1..255 bytes (KeySchemaAttributeName) ------------------------


def test_a_key_attribute_name_of_255_bytes_is_accepted() -> None:
    name = "é" * 127 + "x"  # 255 UTF-8 bytes
    req = create_table.validate(request(AttributeDefinitions=[attr(name)], KeySchema=[hash_key(name)]))
    assert req.partition_key == KeyElement(name, "S")


def test_a_key_attribute_name_over_255_bytes_is_a_constraint_violation_in_both_places() -> None:
    name = "é" * 128  # 128 characters, 256 bytes
    message = validation_message(request(AttributeDefinitions=[attr(name)], KeySchema=[hash_key(name)]))
    assert message.startswith("2 validation errors detected: ")
    assert "at 'attributeDefinitions.1.member.attributeName' failed to satisfy constraint: " in message
    assert "at 'keySchema.1.member.attributeName' failed to satisfy constraint: " in message
    assert message.count("Member must have length less than or equal to 255") == 2


def test_an_empty_key_attribute_name_is_a_constraint_violation() -> None:
    message = validation_message(request(AttributeDefinitions=[attr("")], KeySchema=[hash_key("")]))
    assert message.count("Member must have length greater than or equal to 1") == 2


# --- tags, with TagResource's rules ------------------------------------------------


def test_tags_are_kept_as_given() -> None:
    req = create_table.validate(
        request(Tags=[{"Key": "team", "Value": "a b+c"}, {"Key": "empty", "Value": ""}])
    )
    assert req.tags == (("team", "a b+c"), ("empty", ""))


def test_a_null_tag_key_is_a_constraint_violation_not_the_text_none() -> None:
    message = validation_message(request(Tags=[{"Key": None, "Value": "v"}]))
    assert message == (
        "1 validation error detected: Value null at 'tags.1.member.key' failed to satisfy constraint: "
        "Member must not be null"
    )


@pytest.mark.parametrize(
    "tag",
    [{"Key": "aws:owner", "Value": "x"}, {"Key": "AWS:owner", "Value": "x"}, {"Key": "k", "Value": "aws:x"}],
)
def test_the_aws_prefix_is_reserved(tag: dict[str, str]) -> None:
    assert "aws:" in validation_message(request(Tags=[tag]))


def test_characters_outside_the_tag_alphabet_are_refused() -> None:
    assert "may contain only" in validation_message(request(Tags=[{"Key": "a*b", "Value": "v"}]))


def test_fifty_tags_are_accepted_and_fifty_one_refused() -> None:
    tags = [{"Key": f"k{i}", "Value": "v"} for i in range(51)]
    assert len(create_table.validate(request(Tags=tags[:50])).tags) == 50
    assert "cannot exceed 50" in validation_message(request(Tags=tags))


def test_a_tag_value_over_256_characters_is_a_constraint_violation() -> None:
    message = validation_message(request(Tags=[{"Key": "k", "Value": "v" * 257}]))
    assert (
        "at 'tags.1.member.value' failed to satisfy constraint: Member must have length less than or equal to 256"
        in message
    )


# --- parameters Partita does not implement are refused by name ---------------------


@pytest.mark.parametrize(("member", "value"), [("SSESpecification", {"Enabled": True})])
def test_a_parameter_partita_does_not_implement_is_refused_by_name(member: str, value: Any) -> None:
    with_sort_key = {
        "KeySchema": [hash_key(), range_key("sk")],
        "AttributeDefinitions": [attr("pk"), attr("sk")],
    }
    message = validation_message(request(**{member: value}, **with_sort_key))
    assert message == f"Partita does not support creating a table with {member} yet"


def test_a_local_index_needs_a_sort_key_and_index_names_are_unique() -> None:
    local = [{"IndexName": "lsi", "KeySchema": [hash_key()], "Projection": {}}]
    assert validation_message(request(LocalSecondaryIndexes=local)) == (
        "One or more parameter values were invalid: Table KeySchema does not have a range key, "
        "which is required when specifying a LocalSecondaryIndex"
    )
    with_sort_key = {
        "KeySchema": [hash_key(), range_key("sk")],
        "AttributeDefinitions": [attr("pk"), attr("sk")],
    }
    same_name = [{"IndexName": "lsi", "KeySchema": [hash_key()], "Projection": {}}]
    assert validation_message(
        request(LocalSecondaryIndexes=local, GlobalSecondaryIndexes=same_name, **with_sort_key)
    ) == ("One or more parameter values were invalid: Duplicate index name: lsi")


def test_every_unimplemented_parameter_given_is_named() -> None:
    index = {"IndexName": "gsi", "KeySchema": [hash_key()], "Projection": {}, "WarmThroughput": {}}
    message = validation_message(request(SSESpecification={"Enabled": True}, GlobalSecondaryIndexes=[index]))
    assert message == (
        "Partita does not support creating a table with SSESpecification, GlobalSecondaryIndexes.WarmThroughput yet"
    )


def test_a_table_class_is_taken_as_given() -> None:
    assert create_table.validate(request(TableClass="STANDARD_INFREQUENT_ACCESS")).table_class == (
        "STANDARD_INFREQUENT_ACCESS"
    )
    assert create_table.validate(request()).table_class == ""


def test_a_resource_policy_is_checked_as_put_resource_policy_checks_it() -> None:
    policy = orjson.dumps(
        {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "dynamodb:GetItem", "Resource": "*"}]}
    ).decode()
    assert create_table.validate(request(ResourcePolicy=policy)).resource_policy == policy
    assert validation_message(request(ResourcePolicy="{}")) == (
        "One or more parameter values were invalid: Invalid policy document: Missing required field Statement"
    )


def test_asking_for_what_a_partita_table_is_anyway_is_accepted() -> None:
    create_table.validate(request(TableClass="STANDARD", DeletionProtectionEnabled=False))


@pytest.mark.parametrize(("given", "kept"), [(True, True), (False, False), (None, False)])
def test_deletion_protection_is_taken_from_the_request(given: bool | None, kept: bool) -> None:
    extra = {} if given is None else {"DeletionProtectionEnabled": given}
    assert create_table.validate(request(**extra)).deletion_protection is kept


def test_every_member_of_the_model_is_implemented_or_refused() -> None:
    from partita.api import service_model

    members = set(service_model.input_members("CreateTable"))
    assert members == create_table.IMPLEMENTED | set(create_table.NOT_IMPLEMENTED)
    assert {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} <= create_table.IMPLEMENTED
    assert "StreamSpecification" in create_table.IMPLEMENTED


def test_warm_throughput_is_taken_and_bounded_as_throughput_is() -> None:
    warm = {"ReadUnitsPerSecond": 1000, "WriteUnitsPerSecond": 1200}
    assert create_table.validate(request(WarmThroughput=warm)).warm_throughput == (1000, 1200)
    assert create_table.validate(request(WarmThroughput={"WriteUnitsPerSecond": 9})).warm_throughput == (0, 9)
    assert create_table.validate(request()).warm_throughput == (0, 0)
    with pytest.raises(DynamoError) as err:
        create_table.validate(request(WarmThroughput={"ReadUnitsPerSecond": 40_001}))
    assert err.value.code == "LimitExceededException"


def test_an_on_demand_maximum_is_taken_with_on_demand_billing_only() -> None:
    on_demand = request(
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput=None,
        OnDemandThroughput={"MaxWriteRequestUnits": 50},
    )
    assert create_table.validate(on_demand).on_demand_max == (0, 50)
    assert validation_message(request(OnDemandThroughput={"MaxReadRequestUnits": 5})) == (
        "One or more parameter values were invalid: MaxReadRequestUnits for OnDemandThroughput cannot be "
        "specified when table BillingMode is PROVISIONED."
    )
