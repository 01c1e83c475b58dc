"""TagResource, UntagResource, ListTagsOfResource: validation and functionality."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table, error, validation

pytestmark = PYTESTMARK


@pytest.fixture(scope="module")
def arn(ddb: Any) -> str:
    name = create_table(ddb, [("pk", "S")], prefix="tags")
    table_arn: str = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    return table_arn


# --- validation ------------------------------------------------------------------------------


def test_a_malformed_arn_is_refused(ddb: Any) -> None:
    assert validation(ddb.list_tags_of_resource, ResourceArn="arn:aws:dynamodb:us-east-1:0:nothing/x") == (
        "Invalid TableArn: Invalid ResourceArn provided as input arn:aws:dynamodb:us-east-1:0:nothing/x"
    )


def test_tagging_with_no_tags_is_refused(ddb: Any, arn: str) -> None:
    assert (
        validation(ddb.tag_resource, ResourceArn=arn, Tags=[])
        == "Atleast one Tag needs to be provided as Input."
    )


def test_untagging_with_no_keys_is_refused(ddb: Any, arn: str) -> None:
    assert validation(ddb.untag_resource, ResourceArn=arn, TagKeys=[]) == (
        "Atleast one Tag Key needs to be provided as Input."
    )


def test_a_tag_key_over_128_characters_is_a_constraint_violation(ddb: Any, arn: str) -> None:
    message = validation(ddb.tag_resource, ResourceArn=arn, Tags=[{"Key": "k" * 129, "Value": "v"}])
    assert message.endswith(
        "at 'tags.1.member.key' failed to satisfy constraint: Member must have length less than or equal to 128"
    )


def test_an_unknown_table_arn_is_resource_not_found(ddb: Any, arn: str) -> None:
    missing = arn.rsplit("/", 1)[0] + "/no-such-table"
    code, message = error(ddb.list_tags_of_resource, ResourceArn=missing)
    assert (code, message) == (
        "ResourceNotFoundException",
        f"Requested resource not found: ResourcArn: {missing} not found",
    )


# --- functionality ---------------------------------------------------------------------------


def test_tags_are_added_overwritten_listed_and_removed(ddb: Any, arn: str) -> None:
    ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "db"}, {"Key": "env", "Value": "test"}])
    ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "prod"}])
    tags = {t["Key"]: t["Value"] for t in ddb.list_tags_of_resource(ResourceArn=arn)["Tags"]}
    assert tags == {"team": "db", "env": "prod"}
    ddb.untag_resource(ResourceArn=arn, TagKeys=["team", "absent"])
    assert ddb.list_tags_of_resource(ResourceArn=arn)["Tags"] == [{"Key": "env", "Value": "prod"}]


def test_tags_given_at_creation_are_listed(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="tags-create", Tags=[{"Key": "born", "Value": "tagged"}])
    table_arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    assert ddb.list_tags_of_resource(ResourceArn=table_arn)["Tags"] == [{"Key": "born", "Value": "tagged"}]


# --- DynamoDB's tagging restrictions ---------------------------------------------------------


def test_the_aws_prefix_is_reserved_for_keys_and_values(ddb: Any, arn: str) -> None:
    for tag in ({"Key": "aws:owner", "Value": "v"}, {"Key": "owner", "Value": "aws:v"}):
        code, _ = error(ddb.tag_resource, ResourceArn=arn, Tags=[tag])
        assert code == "ValidationException"
    listed = {t["Key"] for t in ddb.list_tags_of_resource(ResourceArn=arn)["Tags"]}
    assert not {"aws:owner", "owner"} & listed


def test_a_table_holds_at_most_fifty_tags_across_calls(ddb: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="tags50")
    table_arn = ddb.describe_table(TableName=name)["Table"]["TableArn"]
    ddb.tag_resource(ResourceArn=table_arn, Tags=[{"Key": f"a{i}", "Value": "v"} for i in range(30)])
    ddb.tag_resource(ResourceArn=table_arn, Tags=[{"Key": f"b{i}", "Value": "v"} for i in range(20)])
    ddb.tag_resource(ResourceArn=table_arn, Tags=[{"Key": "a0", "Value": "overwritten"}])  # still 50
    code, _ = error(ddb.tag_resource, ResourceArn=table_arn, Tags=[{"Key": "one-more", "Value": "v"}])
    assert code in ("ValidationException", "LimitExceededException")
    tags = {t["Key"]: t["Value"] for t in ddb.list_tags_of_resource(ResourceArn=table_arn)["Tags"]}
    assert len(tags) == 50 and tags["a0"] == "overwritten" and "one-more" not in tags


@pytest.mark.partita_only
def test_characters_outside_dynamodbs_tag_alphabet_are_refused(ddb: Any, arn: str) -> None:
    message = validation(ddb.tag_resource, ResourceArn=arn, Tags=[{"Key": "semi;colon", "Value": "v"}])
    assert "may contain only letters, numbers, white space and + - = . _ : /" in message


# --- round 3: what Alternator's test_tag.py and test_manual_requests.py record of DynamoDB --


def test_an_arn_without_the_arn_prefix_is_refused_with_the_parsers_words(ddb: Any) -> None:
    code, message = error(ddb.tag_resource, ResourceArn="I_do_not_exist", Tags=[{"Key": "7", "Value": "8"}])
    assert code == "ValidationException"
    assert "ARNs must start with 'arn:'" in message


def test_tag_and_untag_answer_with_an_empty_body(cluster: Any, arn: str) -> None:
    for operation, body in (
        ("TagResource", {"ResourceArn": arn, "Tags": [{"Key": "empty-body", "Value": "v"}]}),
        ("UntagResource", {"ResourceArn": arn, "TagKeys": ["empty-body"]}),
    ):
        payload = json.dumps(body).encode()
        status, answer, _ = cluster.request("POST", "/", payload, cluster.signed_headers(operation, payload))
        assert (status, answer) == (200, b""), operation
