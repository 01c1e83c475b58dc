"""PutResourcePolicy, GetResourcePolicy, DeleteResourcePolicy: their requests, the ARN
they name, and the revision rules (pure; the router's action reads and writes the table).

A policy is attached to a table or to one of its streams. Revision ids are the
milliseconds of the change, as DynamoDB's are (comparable: a later policy has a larger
id), and a put of the very document already attached changes nothing and answers its
revision (moto's test_put_resource_policy_multiple_times, run against DynamoDB).
`ExpectedRevisionId` makes a change conditional; "NO_POLICY" asks that none be attached.
The refusals are DynamoDB's recorded texts (moto's test_dynamodb_resource_policy.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from partita.api import resource_policy
from partita.api.shape import expect_dict, expect_type
from partita.common import errors
from partita.control.model import ResourcePolicy

NO_POLICY = "NO_POLICY"
TABLE = ""  # the `resource` of a table's own policy; a stream's is its label

_ARN = re.compile(
    r"arn:aws[a-z-]*:dynamodb:[a-z0-9-]*:[0-9]*:table/([a-zA-Z0-9_.-]{3,255})(?:/stream/([^/]+))?"
)
_NOT_FOUND = "Resource-based policy not found for the provided ResourceArn: "


@dataclass(frozen=True)
class Target:
    """The resource an ARN names: a table, or a stream of it (`stream` its label)."""

    arn: str
    table_name: str
    stream: str = TABLE


@dataclass(frozen=True)
class PutRequest:
    target: Target
    document: str
    expected_revision: str | None


@dataclass(frozen=True)
class DeleteRequest:
    target: Target
    expected_revision: str | None


def target_of(arn: Any) -> Target:
    arn = expect_type(arn, str, "a string")
    match = _ARN.fullmatch(arn)
    if match is None:
        raise errors.validation(f"Invalid ResourceArn provided as input {arn}")
    return Target(arn, match.group(1), match.group(2) or TABLE)


def validate_put(body: Any) -> PutRequest:
    body = expect_dict(body)
    document = expect_type(body["Policy"], str, "a string")
    resource_policy.parse(document)
    revision = body.get("ExpectedRevisionId")
    return PutRequest(target_of(body["ResourceArn"]), document, expect_type(revision, str, "a string"))


def validate_get(body: Any) -> Target:
    return target_of(expect_dict(body)["ResourceArn"])


def validate_delete(body: Any) -> DeleteRequest:
    body = expect_dict(body)
    revision = body.get("ExpectedRevisionId")
    return DeleteRequest(target_of(body["ResourceArn"]), expect_type(revision, str, "a string"))


def attached(policies: tuple[ResourcePolicy, ...], target: Target) -> ResourcePolicy | None:
    return next((p for p in policies if p.resource == target.stream), None)


def not_attached(target: Target) -> errors.DynamoError:
    return errors.policy_not_found(_NOT_FOUND + target.arn)


def check_expected(current: ResourcePolicy | None, expected: str | None, target: Target) -> None:
    """ExpectedRevisionId's condition, refused in DynamoDB's words."""
    if expected is None:
        return
    if expected == NO_POLICY:
        if current is not None:
            raise errors.policy_not_found(
                _NOT_FOUND + f"Requested policy update expecting none to be present for table "
                f"{target.table_name}, but a policy exists with revision id {current.revision_id}."
            )
        return
    if current is None:
        raise errors.policy_not_found(
            _NOT_FOUND + f"Requested update for policy with revision id {expected}, but there is no policy "
            f"associated to target table {target.table_name}."
        )
    if current.revision_id != expected:
        raise errors.policy_not_found(
            _NOT_FOUND
            + f"Requested update for policy with revision id {expected}, but the policy associated "
            f"to target table {target.table_name} has revision id {current.revision_id}."
        )


def next_revision(policies: tuple[ResourcePolicy, ...], now: float) -> str:
    """The milliseconds of `now`, past every revision the table's policies had (two
    changes within one millisecond, or a clock stepped back, still order)."""
    latest = max((int(p.revision_id) for p in policies if p.revision_id.isdigit()), default=0)
    return str(max(int(now * 1000), latest + 1))


def attached_at_creation(document: str | None, now: float) -> tuple[ResourcePolicy, ...]:
    """CreateTable's ResourcePolicy, as the table's first policy."""
    return () if document is None else (ResourcePolicy(TABLE, document, next_revision((), now)),)


def put(
    policies: tuple[ResourcePolicy, ...], req: PutRequest, now: float
) -> tuple[tuple[ResourcePolicy, ...], str]:
    """(the table's policies after the put, the revision to answer)."""
    current = attached(policies, req.target)
    check_expected(current, req.expected_revision, req.target)
    if current is not None and current.document == req.document:
        return policies, current.revision_id
    policy = ResourcePolicy(req.target.stream, req.document, next_revision(policies, now))
    return (*(p for p in policies if p is not current), policy), policy.revision_id


def delete(
    policies: tuple[ResourcePolicy, ...], req: DeleteRequest
) -> tuple[tuple[ResourcePolicy, ...], str]:
    """(the table's policies after the delete, the deleted policy's revision)."""
    current = attached(policies, req.target)
    if current is None:
        raise not_attached(req.target)
    check_expected(current, req.expected_revision, req.target)
    return tuple(p for p in policies if p is not current), current.revision_id
