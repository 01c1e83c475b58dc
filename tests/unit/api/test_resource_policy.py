"""The policy language: which documents are attached, and what a policy decides."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from partita.api import resource_policy
from partita.api.resource_policy import Decision
from partita.common.errors import DynamoError

ACCOUNT = "000000000000"
TABLE = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/Orders"
ME = resource_policy.principal_names(ACCOUNT, "orders-service")
SOMEONE_ELSE = resource_policy.principal_names(ACCOUNT, "billing")
OTHER_ACCOUNT = resource_policy.principal_names("111111111111", "orders-service")


def document(*statements: dict[str, Any], **top: Any) -> str:
    return orjson.dumps({"Version": "2012-10-17", **top, "Statement": list(statements)}).decode()


def statement(effect: str = "Allow", **fields: Any) -> dict[str, Any]:
    return {"Effect": effect, "Principal": "*", "Action": "dynamodb:*", "Resource": "*", **fields}


def refusal(text: str) -> str:
    with pytest.raises(DynamoError) as exc:
        resource_policy.parse(text)
    assert exc.value.code == "ValidationException"
    return exc.value.message


def decide(
    text: str,
    action: str,
    resource: str = TABLE,
    principal: frozenset[str] = ME,
    context: dict[str, str] | None = None,
) -> Decision:
    return resource_policy.parse(text).decision(principal, action, resource, context)


# --- what is refused ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json", "This policy contains invalid Json"),
        ("[]", "This policy contains invalid Json"),
        ("{}", "Missing required field Statement"),
        (document(), "Missing required field Statement"),
        (document({"Principal": "*", "Action": "dynamodb:*"}), "Missing required field Effect"),
        (document(statement(effect="Maybe")), "Invalid effect: Maybe"),
        (document({"Effect": "Allow", "Action": "dynamodb:*"}), "Missing required field Principal"),
        (document({"Effect": "Allow", "Principal": "*"}), "Missing required field Action"),
        (
            document(statement(NotAction="dynamodb:Scan")),
            "Statement cannot contain both Action and NotAction",
        ),
        (document(statement(Principal={"Nobody": "x"})), "Invalid principal in policy"),
        (document(statement(Principal="someone")), "Invalid principal in policy"),
        (
            document(statement(Action="dynamodb:ListStreams")),
            'The following action names are invalid: "dynamodb:ListStreams"',
        ),
        (
            document(statement(Action=["s3:GetObject", "dynamodb:Fly", "dynamodb:GetItem"])),
            'The following action names are invalid: "dynamodb:Fly", "s3:GetObject"',
        ),
        (
            document(statement(Action="dynamodb:Zz*")),
            'The following action names are invalid: "dynamodb:Zz*"',
        ),
        (
            document(statement(), Version="2020-01-01"),
            "The policy must contain a valid version string: 2020-01-01",
        ),
    ],
)
def test_a_document_dynamodb_would_not_attach_is_refused_saying_why(text: str, why: str) -> None:
    assert refusal(text) == f"One or more parameter values were invalid: Invalid policy document: {why}"


def test_a_document_over_20_kb_is_refused_counting_its_white_space() -> None:
    base = document(statement())
    assert resource_policy.parse(base + " " * (resource_policy.MAX_POLICY_BYTES - len(base)))
    assert "exceeds the maximum of 20480 bytes" in refusal(
        base + " " * (resource_policy.MAX_POLICY_BYTES + 1 - len(base))
    )


def test_a_single_statement_object_and_wildcard_actions_are_taken() -> None:
    text = orjson.dumps({"Statement": statement(Action=["dynamodb:Get*", "dynamodb:Batch?etItem"])}).decode()
    assert decide(text, "dynamodb:GetItem") is Decision.ALLOW
    assert decide(text, "dynamodb:BatchGetItem") is Decision.ALLOW
    assert decide(text, "dynamodb:PutItem") is Decision.NONE


# --- what a policy decides --------------------------------------------------------------


def test_an_explicit_deny_wins_over_any_allow() -> None:
    text = document(statement(), statement("Deny", Action="dynamodb:DeleteItem"))
    assert decide(text, "dynamodb:GetItem") is Decision.ALLOW
    assert decide(text, "dynamodb:DeleteItem") is Decision.DENY


def test_actions_match_without_regard_to_case_and_resources_with_it() -> None:
    text = document(statement(Action="DynamoDB:getitem", Resource=TABLE))
    assert decide(text, "dynamodb:GetItem") is Decision.ALLOW
    assert decide(text, "dynamodb:GetItem", resource=TABLE.lower()) is Decision.NONE


@pytest.mark.parametrize(
    ("principal", "me", "someone_else", "other_account"),
    [
        ("*", True, True, True),
        ({"AWS": "*"}, True, True, True),
        ({"AWS": ACCOUNT}, True, True, False),
        ({"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, True, True, False),
        ({"AWS": [f"arn:aws:iam::{ACCOUNT}:user/orders-service"]}, True, False, False),
        ({"Service": "dynamodb.amazonaws.com"}, False, False, False),
    ],
)
def test_a_principal_names_keys_by_account_or_by_name(
    principal: Any, me: bool, someone_else: bool, other_account: bool
) -> None:
    text = document(statement(Principal=principal))
    for who, expected in ((ME, me), (SOMEONE_ELSE, someone_else), (OTHER_ACCOUNT, other_account)):
        assert (decide(text, "dynamodb:GetItem", principal=who) is Decision.ALLOW) is expected


def test_an_index_is_named_by_its_own_arn() -> None:
    text = document(statement("Deny", Resource=f"{TABLE}/index/*"))
    assert decide(text, "dynamodb:Query", resource=f"{TABLE}/index/by-date") is Decision.DENY
    assert decide(text, "dynamodb:Query") is Decision.NONE


def test_not_action_not_resource_and_not_principal_turn_their_match_around() -> None:
    everything_but_reads = document({**statement("Deny"), "NotAction": ["dynamodb:GetItem"], "Action": None})
    assert decide(everything_but_reads, "dynamodb:GetItem") is Decision.NONE
    assert decide(everything_but_reads, "dynamodb:PutItem") is Decision.DENY
    not_the_table = document({**statement("Deny"), "NotResource": TABLE, "Resource": None})
    assert decide(not_the_table, "dynamodb:GetItem") is Decision.NONE
    assert decide(not_the_table, "dynamodb:GetItem", resource=f"{TABLE}/index/i") is Decision.DENY
    all_but_me = document(
        {
            **statement("Deny"),
            "NotPrincipal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/orders-service"},
            "Principal": None,
        }
    )
    assert decide(all_but_me, "dynamodb:GetItem") is Decision.NONE
    assert decide(all_but_me, "dynamodb:GetItem", principal=SOMEONE_ELSE) is Decision.DENY


def test_a_condition_on_a_key_the_request_does_not_carry_is_false_so_the_statement_does_nothing() -> None:
    # IAM's rule: a missing key fails its test. dynamodb:LeadingKeys is not carried yet.
    condition = {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["me"]}}
    assert (
        decide(
            document(statement("Deny", Condition={"StringEquals": {"dynamodb:Select": "ALL"}})),
            "dynamodb:Query",
        )
        is Decision.NONE
    )
    assert (
        decide(document(statement(Condition=condition)), "dynamodb:GetItem", context={}) is Decision.ALLOW
    )  # ForAllValues of nothing
    assert (
        decide(
            document(statement(Condition={"StringEqualsIfExists": {"aws:PrincipalTag/team": "x"}})),
            "dynamodb:GetItem",
        )
        is Decision.ALLOW
    )


CONTEXT = {
    "aws:principalarn": f"arn:aws:iam::{ACCOUNT}:user/orders-service",
    "aws:username": "orders-service",
    "aws:securetransport": "false",
    "aws:sourceip": "10.1.2.3",
    "aws:epochtime": "1800000000",
    "aws:currenttime": "2027-01-15T08:00:00Z",
}


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        ({"Bool": {"aws:SecureTransport": "false"}}, True),
        ({"Bool": {"aws:SecureTransport": True}}, False),
        ({"StringLike": {"aws:username": "orders-*"}}, True),
        ({"StringNotLike": {"aws:username": ["orders-*", "billing"]}}, False),
        ({"StringEqualsIgnoreCase": {"aws:UserName": "ORDERS-SERVICE"}}, True),
        ({"ArnLike": {"aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:user/*"}}, True),
        ({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}, True),
        ({"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/8", "192.168.0.0/16"]}}, False),
        ({"NumericLessThan": {"aws:EpochTime": 1900000000}}, True),
        ({"DateGreaterThan": {"aws:CurrentTime": "2027-01-01T00:00:00Z"}}, True),
        ({"DateLessThan": {"aws:CurrentTime": "2026-01-01T00:00:00Z"}}, False),
        ({"Null": {"aws:SourceVpc": "true"}}, True),
        ({"Null": {"aws:SourceIp": "true"}}, False),
        (
            {"Bool": {"aws:SecureTransport": "false"}, "IpAddress": {"aws:SourceIp": "172.16.0.0/12"}},
            False,
        ),  # all must hold
    ],
)
def test_conditions_test_the_keys_a_request_carries(condition: dict[str, Any], holds: bool) -> None:
    text = document(statement("Deny", Condition=condition))
    assert (decide(text, "dynamodb:GetItem", context=CONTEXT) is Decision.DENY) is holds


def test_a_condition_operator_iam_does_not_have_is_refused() -> None:
    assert refusal(document(statement(Condition={"StringEqualz": {"aws:username": "x"}}))).endswith(
        "Invalid policy document: Invalid Condition type : StringEqualz"
    )
