"""PutResourcePolicy, GetResourcePolicy, DeleteResourcePolicy, CreateTable's ResourcePolicy.

Written to pass against DynamoDB too, where a policy takes effect eventually: each
change is followed by reading the policy until it shows (`attached`). The access tests
at the end need a second access key, so they run on Partita only.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.compat.helpers import PYTESTMARK, create_table, error, key
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK


def account_of(arn: str) -> str:
    return arn.split(":")[4]


def document(arn: str, action: str = "dynamodb:*", effect: str = "Allow", principal: Any = None) -> str:
    statement = {
        "Effect": effect,
        "Principal": principal or {"AWS": account_of(arn)},
        "Action": [action],
        "Resource": arn,
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def attached(ddb: Any, arn: str, revision: str | None, timeout: float = 30.0) -> None:
    """Until GetResourcePolicy shows `revision` (None: until no policy is attached)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            shown: str | None = ddb.get_resource_policy(ResourceArn=arn)["RevisionId"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "PolicyNotFoundException":
                raise
            shown = None
        if shown == revision:
            return
        assert time.monotonic() < deadline, f"policy revision {shown}, waiting for {revision}"
        time.sleep(0.5)


def put(ddb: Any, arn: str, policy: str, **extra: Any) -> str:
    revision: str = ddb.put_resource_policy(ResourceArn=arn, Policy=policy, **extra)["RevisionId"]
    attached(ddb, arn, revision)
    return revision


@pytest.fixture
def arn(ddb: Any) -> str:
    name = create_table(ddb, [("pk", "S")], prefix="policy")
    table_arn: str = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    return table_arn


def test_a_policy_put_is_read_back_as_written_with_its_revision(ddb: Any, arn: str) -> None:
    policy = document(arn)
    revision = put(ddb, arn, policy)
    got = ddb.get_resource_policy(ResourceArn=arn)
    assert got["RevisionId"] == revision
    assert json.loads(got["Policy"]) == json.loads(policy)


def test_the_same_policy_again_keeps_its_revision_and_a_new_one_gets_a_later_one(ddb: Any, arn: str) -> None:
    first = put(ddb, arn, document(arn))
    assert put(ddb, arn, document(arn)) == first
    changed = put(ddb, arn, document(arn, "dynamodb:PutItem"))
    assert changed != first and int(changed) > int(first)


def test_a_change_expecting_an_older_revision_is_refused(ddb: Any, arn: str) -> None:
    first = put(ddb, arn, document(arn))
    second = put(ddb, arn, document(arn, "dynamodb:GetItem"), ExpectedRevisionId=first)
    table = arn.rsplit("/", 1)[1]
    code, message = error(
        ddb.put_resource_policy,
        ResourceArn=arn,
        Policy=document(arn, "dynamodb:Query"),
        ExpectedRevisionId=first,
    )
    assert (code, message) == (
        "PolicyNotFoundException",
        "Resource-based policy not found for the provided ResourceArn: Requested update for policy with revision "
        f"id {first}, but the policy associated to target table {table} has revision id {second}.",
    )
    code, message = error(ddb.delete_resource_policy, ResourceArn=arn, ExpectedRevisionId=first)
    assert code == "PolicyNotFoundException"
    assert ddb.get_resource_policy(ResourceArn=arn)["RevisionId"] == second


def test_no_policy_as_the_expected_revision_puts_only_where_none_is_attached(ddb: Any, arn: str) -> None:
    revision = put(ddb, arn, document(arn), ExpectedRevisionId="NO_POLICY")
    table = arn.rsplit("/", 1)[1]
    code, message = error(
        ddb.put_resource_policy,
        ResourceArn=arn,
        Policy=document(arn, "dynamodb:Query"),
        ExpectedRevisionId="NO_POLICY",
    )
    assert (code, message) == (
        "PolicyNotFoundException",
        "Resource-based policy not found for the provided ResourceArn: Requested policy update expecting none to be "
        f"present for table {table}, but a policy exists with revision id {revision}.",
    )


def test_a_deleted_policy_is_gone_and_a_table_without_one_says_so(ddb: Any, arn: str) -> None:
    assert error(ddb.get_resource_policy, ResourceArn=arn) == (
        "PolicyNotFoundException",
        f"Resource-based policy not found for the provided ResourceArn: {arn}",
    )
    revision = put(ddb, arn, document(arn))
    assert ddb.delete_resource_policy(ResourceArn=arn, ExpectedRevisionId=revision)["RevisionId"] == revision
    attached(ddb, arn, None)


def test_an_unknown_table_is_resource_not_found(ddb: Any, arn: str) -> None:
    missing = arn + "_gone"
    table = missing.rsplit("/", 1)[1]
    expected = ("ResourceNotFoundException", f"Requested resource not found: Table: {table} not found")
    assert error(ddb.put_resource_policy, ResourceArn=missing, Policy=document(arn)) == expected
    assert error(ddb.get_resource_policy, ResourceArn=missing) == expected
    assert error(ddb.delete_resource_policy, ResourceArn=missing) == expected


def test_a_policy_naming_an_action_dynamodb_does_not_have_is_refused(ddb: Any, arn: str) -> None:
    code, message = error(
        ddb.put_resource_policy, ResourceArn=arn, Policy=document(arn, "dynamodb:ListStreams")
    )
    assert (code, message) == (
        "ValidationException",
        "One or more parameter values were invalid: Invalid policy document: The following action names are "
        'invalid: "dynamodb:ListStreams"',
    )


def test_create_table_attaches_its_resource_policy(ddb: Any, arn: str) -> None:
    name = f"policy-{uuid.uuid4().hex[:10]}"
    future = arn.rsplit("/", 1)[0] + "/" + name
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        ResourcePolicy=document(future, "dynamodb:GetItem"),
    )
    wait_active(ddb, name, timeout=30)
    got = ddb.get_resource_policy(ResourceArn=future)
    assert json.loads(got["Policy"])["Statement"][0]["Action"] == ["dynamodb:GetItem"]


def test_a_stream_has_a_policy_of_its_own(ddb: Any) -> None:
    name = create_table(
        ddb,
        [("pk", "S")],
        prefix="policy",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
    )
    table = ddb.describe_table(TableName=name)["Table"]
    stream_arn = table["LatestStreamArn"]
    revision = put(ddb, stream_arn, document(stream_arn, "dynamodb:GetRecords"))
    assert error(ddb.get_resource_policy, ResourceArn=table["TableArn"])[0] == "PolicyNotFoundException"
    assert ddb.get_resource_policy(ResourceArn=stream_arn)["RevisionId"] == revision


# --- enforcement (a second access key: Partita only) -------------------------------------------


@pytest.fixture
def limited(cluster: Any, arn: str) -> tuple[Any, str]:
    """A client whose key lists no table, and its name."""
    from partita.router.credentials import create_credential

    name = f"svc-{uuid.uuid4().hex[:8]}"
    credential = create_credential(cluster.data_dir / "credentials.json", name=name, tables=["none-of-these"])
    client = cluster.client(
        aws_access_key_id=credential.access_key_id, aws_secret_access_key=credential.secret_access_key
    )
    deadline = time.monotonic() + 10  # the router reads the file again within a second
    while True:
        try:
            client.list_tables()
            return client, name
        except ClientError as exc:
            assert time.monotonic() < deadline, exc
            time.sleep(0.2)


def once_allowed(call: Any, **kwargs: Any) -> None:
    """`call` made as soon as the routers' table cache has followed a policy change."""
    deadline = time.monotonic() + 10
    while True:
        try:
            call(**kwargs)
            return
        except ClientError as exc:
            assert time.monotonic() < deadline, exc
            time.sleep(0.2)


def denied(call: Any, **kwargs: Any) -> str:
    code, message = error(call, **kwargs)
    assert code == "AccessDeniedException", (code, message)
    return message


@pytest.mark.partita_only
def test_a_policy_allows_a_key_what_its_own_list_does_not_and_a_deny_wins(
    ddb: Any, arn: str, limited: tuple[Any, str]
) -> None:
    client, name = limited
    table = arn.rsplit("/", 1)[1]
    item = {"pk": {"S": key()}}
    denied(client.put_item, TableName=table, Item=item)
    user = f"arn:aws:iam::{account_of(arn)}:user/{name}"
    statements = [
        {
            "Effect": "Allow",
            "Principal": {"AWS": user},
            "Action": ["dynamodb:PutItem", "dynamodb:GetItem"],
            "Resource": arn,
        },
        {"Effect": "Deny", "Principal": "*", "Action": "dynamodb:DeleteItem", "Resource": "*"},
    ]
    put(ddb, arn, json.dumps({"Version": "2012-10-17", "Statement": statements}))
    once_allowed(client.put_item, TableName=table, Item=item)
    assert client.get_item(TableName=table, Key=item, ConsistentRead=True)["Item"] == item
    denied(client.scan, TableName=table)  # neither listed nor allowed
    for who in (client, ddb):  # the Deny holds even for the key of every table
        assert "with an explicit deny in a resource-based policy" in denied(
            who.delete_item, TableName=table, Key=item
        )
    ddb.delete_resource_policy(ResourceArn=arn)
    attached(ddb, arn, None)
    once_allowed(ddb.delete_item, TableName=table, Key=item)


@pytest.mark.partita_only
def test_a_condition_on_secure_transport_refuses_plain_http(ddb: Any, arn: str) -> None:
    # This suite's cluster serves plain HTTP (DynamoDB serves only HTTPS, where the same
    # policy refuses nothing); tests/integration/test_tls_endpoint.py shows HTTPS let through.
    table = arn.rsplit("/", 1)[1]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "dynamodb:GetItem",
                "Resource": "*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }
    put(ddb, arn, json.dumps(policy))
    deadline = time.monotonic() + 10
    while True:
        try:
            ddb.get_item(TableName=table, Key={"pk": {"S": key()}})
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "AccessDeniedException"
            break
        assert time.monotonic() < deadline, "the condition never refused plain HTTP"
        time.sleep(0.2)
    ddb.put_item(TableName=table, Item={"pk": {"S": key()}})  # the Deny names GetItem alone


@pytest.mark.partita_only
def test_a_streams_policy_governs_reading_it(ddb: Any, cluster: Any) -> None:
    name = create_table(
        ddb,
        [("pk", "S")],
        prefix="policy",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
    )
    stream_arn = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    streams = cluster.client(service="dynamodbstreams")
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    put(ddb, stream_arn, document(stream_arn, "dynamodb:GetShardIterator", effect="Deny", principal="*"))
    deadline = time.monotonic() + 10
    while True:
        try:
            streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "AccessDeniedException"
            assert "dynamodb:GetShardIterator on resource: " + stream_arn in exc.response["Error"]["Message"]
            break
        assert time.monotonic() < deadline, "the stream's Deny never took effect"
        time.sleep(0.2)
    assert streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["StreamArn"] == stream_arn
