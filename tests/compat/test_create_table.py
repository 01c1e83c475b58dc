"""CreateTable: parameters Partita does not implement are refused by name, tags follow
DynamoDB's rules, key attribute names are limited, and a local table is ACTIVE by the
time a waiter first asks."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table, error, validation
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK


def spec(**extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "TableName": f"compat-ct-{uuid.uuid4().hex[:10]}",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    out.update(extra)
    return out


def table_exists(ddb: Any, name: str) -> bool:
    try:
        ddb.describe_table(TableName=name)
        return True
    except ddb.exceptions.ResourceNotFoundException:
        return False


GSI = [
    {
        "IndexName": "by-other",
        "KeySchema": [{"AttributeName": "other", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }
]
LSI = [
    {
        "IndexName": "by-sk",
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "other", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }
]
WITH_OTHER = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "other", "AttributeType": "S"}]


@pytest.mark.partita_only
@pytest.mark.parametrize(("member", "extra"), [("SSESpecification", {"SSESpecification": {"Enabled": True}})])
def test_an_unimplemented_parameter_is_refused_by_name_and_no_table_is_created(
    ddb: Any, member: str, extra: dict[str, Any]
) -> None:
    request = spec(**extra)
    message = validation(ddb.create_table, **request)
    assert message == f"Partita does not support creating a table with {member} yet"
    assert not table_exists(ddb, request["TableName"])


def test_a_local_index_needs_a_table_with_a_sort_key(ddb: Any) -> None:
    request = spec(LocalSecondaryIndexes=LSI, AttributeDefinitions=WITH_OTHER)
    assert validation(ddb.create_table, **request) == (
        "One or more parameter values were invalid: Table KeySchema does not have a range key, "
        "which is required when specifying a LocalSecondaryIndex"
    )


def test_two_indexes_may_not_share_a_name(ddb: Any) -> None:
    twice = [GSI[0], {**GSI[0], "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}]
    request = spec(GlobalSecondaryIndexes=twice, AttributeDefinitions=WITH_OTHER)
    assert validation(ddb.create_table, **request) == (
        "One or more parameter values were invalid: Duplicate index name: by-other"
    )


def test_more_than_two_key_elements_are_printed_as_dynamodb_prints_them(ddb: Any) -> None:
    keys = [{"AttributeName": n, "KeyType": t} for n, t in (("pk", "HASH"), ("sk", "RANGE"), ("x", "RANGE"))]
    assert validation(ddb.create_table, **spec(KeySchema=keys)) == (
        "1 validation error detected: Value '[KeySchemaElement(attributeName=pk, keyType=HASH), "
        "KeySchemaElement(attributeName=sk, keyType=RANGE), KeySchemaElement(attributeName=x, keyType=RANGE)]' "
        "at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2"
    )


def test_asking_for_the_standard_table_class_without_deletion_protection_is_accepted(ddb: Any) -> None:
    request = spec(TableClass="STANDARD", DeletionProtectionEnabled=False)
    assert ddb.create_table(**request)["TableDescription"]["TableName"] == request["TableName"]
    ddb.get_waiter("table_exists").wait(
        TableName=request["TableName"], WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )


def test_a_table_class_given_is_told_and_can_change(ddb: Any) -> None:
    """LocalStack's test_dynamodb_create_table_with_class; DynamoDB's TableClassSummary."""
    request = spec(TableClass="STANDARD")
    assert ddb.create_table(**request)["TableDescription"]["TableClassSummary"]["TableClass"] == "STANDARD"
    name = request["TableName"]
    wait_active(ddb, name, timeout=30)
    assert ddb.describe_table(TableName=name)["Table"]["TableClassSummary"]["TableClass"] == "STANDARD"
    changed = ddb.update_table(TableName=name, TableClass="STANDARD_INFREQUENT_ACCESS")["TableDescription"]
    assert changed["TableClassSummary"]["TableClass"] == "STANDARD_INFREQUENT_ACCESS"
    wait_active(ddb, name, timeout=30)
    summary = ddb.describe_table(TableName=name)["Table"]["TableClassSummary"]
    assert summary["TableClass"] == "STANDARD_INFREQUENT_ACCESS" and "LastUpdateDateTime" in summary
    assert "TableClassSummary" not in ddb.describe_table(TableName=create_table(ddb, [("pk", "S")]))["Table"]


def test_a_key_attribute_name_over_255_bytes_is_refused_with_a_length_constraint(ddb: Any) -> None:
    name = "k" * 256
    message = validation(
        ddb.create_table,
        **spec(KeySchema=[{"AttributeName": name, "KeyType": "HASH"}], AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"}]),
    )  # fmt: skip
    assert "failed to satisfy constraint: Member must have length less than or equal to 255" in message


def test_a_key_attribute_name_of_255_bytes_works(ddb: Any) -> None:
    name = "k" * 255
    request = spec(
        KeySchema=[{"AttributeName": name, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"}],
    )
    ddb.create_table(**request)
    ddb.get_waiter("table_exists").wait(
        TableName=request["TableName"], WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    ddb.put_item(TableName=request["TableName"], Item={name: {"S": "x"}})
    assert ddb.get_item(TableName=request["TableName"], Key={name: {"S": "x"}}, ConsistentRead=True)["Item"]


def test_a_duplicate_attribute_definition_is_named(ddb: Any) -> None:
    # DynamoDB's words, as ScyllaDB recorded them (scylladb/scylladb#13870).
    defs = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "pk", "AttributeType": "N"}]
    assert (
        validation(ddb.create_table, **spec(AttributeDefinitions=defs)) == "Attribute Name is duplicated: pk"
    )


# --- tags ------------------------------------------------------------------------------


def test_tags_over_dynamodbs_limits_are_refused_on_create_table(ddb: Any) -> None:
    too_many = [{"Key": f"k{i}", "Value": "v"} for i in range(51)]
    for tags in (too_many, [{"Key": "aws:reserved", "Value": "v"}], [{"Key": "k" * 129, "Value": "v"}]):
        request = spec(Tags=tags)
        code, _ = error(ddb.create_table, **request)
        assert code in ("ValidationException", "LimitExceededException")
        assert not table_exists(ddb, request["TableName"])


@pytest.mark.partita_only
def test_a_tag_key_that_is_not_a_string_is_refused_not_stored_as_text(cluster: Any, ddb: Any) -> None:
    import orjson

    from tests.compat.helpers import error_type, raw_call

    request = spec(Tags=[{"Key": None, "Value": "v"}])
    status, answer = raw_call(cluster, "CreateTable", orjson.dumps(request))
    assert (status, error_type(answer)) == (400, "ValidationException")
    assert (
        "Value null at 'tags.1.member.key' failed to satisfy constraint: Member must not be null"
        in answer["message"]
    )
    assert not table_exists(ddb, request["TableName"])


def test_fifty_tags_at_creation_are_kept(ddb: Any) -> None:
    tags = [{"Key": f"k{i}", "Value": f"v{i}"} for i in range(50)]
    request = spec(Tags=tags)
    arn = ddb.create_table(**request)["TableDescription"]["TableArn"]
    ddb.get_waiter("table_exists").wait(
        TableName=request["TableName"], WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    listed = ddb.list_tags_of_resource(ResourceArn=arn)["Tags"]
    assert sorted(listed, key=lambda t: t["Key"]) == sorted(tags, key=lambda t: t["Key"])


# --- a local table is ACTIVE by the time a waiter asks -------------------------------------


@pytest.mark.partita_only
def test_the_table_exists_waiter_succeeds_on_its_first_attempt(ddb: Any) -> None:
    request = spec()
    created = ddb.create_table(**request)["TableDescription"]
    assert created["TableStatus"] == "CREATING"  # the CreateTable answer says so, as DynamoDB's
    # MaxAttempts=1: a first DescribeTable still saying CREATING would fail the waiter
    # (with the default config it would sleep 20 s).
    ddb.get_waiter("table_exists").wait(TableName=request["TableName"], WaiterConfig={"MaxAttempts": 1})
    assert ddb.describe_table(TableName=request["TableName"])["Table"]["TableStatus"] == "ACTIVE"


@pytest.mark.parametrize(
    "extra",
    [{"StreamSpecification": {"StreamEnabled": False}}, {"SSESpecification": {"Enabled": False}}],
)
def test_streams_or_encryption_asked_off_are_what_a_table_is_and_accepted(
    ddb: Any, extra: dict[str, Any]
) -> None:
    # Alternator's test_table_streams_off / test_table_sse_off, recorded against DynamoDB.
    request = spec(**extra)
    assert ddb.create_table(**request)["TableDescription"]["TableName"] == request["TableName"]
    ddb.get_waiter("table_exists").wait(
        TableName=request["TableName"], WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    assert "StreamSpecification" not in ddb.describe_table(TableName=request["TableName"])["Table"]


@pytest.mark.parametrize("member", ["ReadCapacityUnits", "WriteCapacityUnits"])
def test_capacity_beyond_a_trillion_units_is_out_of_bounds_not_over_a_limit(ddb: Any, member: str) -> None:
    throughput = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1, member: 1_000_000_000_001}
    request = spec(BillingMode="PROVISIONED", ProvisionedThroughput=throughput)
    message = validation(ddb.create_table, **request)
    assert message == f"Given value 1000000000001 for {member} is out of bounds"


def test_a_tables_id_is_a_version_4_uuid_that_stays_the_same(ddb: Any) -> None:
    import uuid

    name = create_table(ddb, [("pk", "S")], prefix="uuid")
    first = ddb.describe_table(TableName=name)["Table"]["TableId"]
    assert uuid.UUID(first).version == 4 and str(uuid.UUID(first)) == first
    assert ddb.describe_table(TableName=name)["Table"]["TableId"] == first


# --- as recorded against DynamoDB by LocalStack's snapshots --------------------------------


def test_an_on_demand_tables_create_answer_does_not_date_its_billing_mode(ddb: Any) -> None:
    request = spec(BillingMode="PAY_PER_REQUEST")
    created = ddb.create_table(**request)["TableDescription"]
    assert created["BillingModeSummary"] == {"BillingMode": "PAY_PER_REQUEST"}
    assert "WarmThroughput" not in created  # told once described
    wait_active(ddb, request["TableName"], timeout=30)
    described = ddb.describe_table(TableName=request["TableName"])["Table"]
    assert (
        described["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"] == described["CreationDateTime"]
    )


@pytest.mark.parametrize(
    ("extra", "warm"),
    [
        (
            {
                "BillingMode": "PROVISIONED",
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 6},
            },
            (5, 6),
        ),
        ({"BillingMode": "PAY_PER_REQUEST"}, (12000, 4000)),
    ],
    ids=["provisioned", "on-demand"],
)
def test_a_table_describes_its_warm_throughput(
    ddb: Any, extra: dict[str, Any], warm: tuple[int, int]
) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="warm", **extra)
    assert ddb.describe_table(TableName=name)["Table"]["WarmThroughput"] == {
        "ReadUnitsPerSecond": warm[0],
        "WriteUnitsPerSecond": warm[1],
        "Status": "ACTIVE",
    }


def test_a_warm_throughput_asked_is_told_updating_then_active(ddb: Any) -> None:
    """LocalStack's recording of DynamoDB's answers (test_table_warm_throughput)."""
    request = spec(
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
        WarmThroughput={"ReadUnitsPerSecond": 1000, "WriteUnitsPerSecond": 1200},
    )
    created = ddb.create_table(**request)["TableDescription"]
    assert created["WarmThroughput"] == {
        "ReadUnitsPerSecond": 1000,
        "WriteUnitsPerSecond": 1200,
        "Status": "UPDATING",
    }
    assert created["ProvisionedThroughput"]["ReadCapacityUnits"] == 5
    wait_active(ddb, request["TableName"], timeout=30)
    described = ddb.describe_table(TableName=request["TableName"])["Table"]
    assert described["WarmThroughput"] == {
        "ReadUnitsPerSecond": 1000,
        "WriteUnitsPerSecond": 1200,
        "Status": "ACTIVE",
    }


def test_an_on_demand_tables_warm_throughput_raises_what_it_takes_at_once(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="warm", WarmThroughput={"WriteUnitsPerSecond": 9000})
    assert ddb.describe_table(TableName=name)["Table"]["WarmThroughput"] == {
        "ReadUnitsPerSecond": 12000,  # the on-demand default, not asked
        "WriteUnitsPerSecond": 9000,
        "Status": "ACTIVE",
    }
    updated = ddb.update_table(TableName=name, WarmThroughput={"ReadUnitsPerSecond": 20000})[
        "TableDescription"
    ]
    assert updated["TableStatus"] == "UPDATING"
    assert updated["WarmThroughput"]["ReadUnitsPerSecond"] == 20000
    wait_active(ddb, name, timeout=60)
    assert ddb.describe_table(TableName=name)["Table"]["WarmThroughput"] == {
        "ReadUnitsPerSecond": 20000,
        "WriteUnitsPerSecond": 9000,  # a member not given keeps its value
        "Status": "ACTIVE",
    }
    ddb.put_item(TableName=name, Item={"pk": {"S": "after"}})  # the split table serves
    assert ddb.get_item(TableName=name, Key={"pk": {"S": "after"}}, ConsistentRead=True)["Item"]


@pytest.mark.partita_only
def test_a_warm_throughput_past_a_tables_quota_is_refused(ddb: Any) -> None:
    code, message = error(ddb.create_table, **spec(WarmThroughput={"WriteUnitsPerSecond": 40001}))
    assert code == "LimitExceededException"
    assert (
        message
        == "Subscriber limit exceeded: Warm throughput for WriteUnitsPerSecond on a table cannot exceed 40000"
    )
