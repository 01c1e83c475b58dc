"""PutResourcePolicy and DeleteResourcePolicy's rules: targets, revisions, conditions."""

from __future__ import annotations

import orjson
import pytest

from partita.api.operations import resource_policy as ops
from partita.common.errors import DynamoError
from partita.control.model import ResourcePolicy

TABLE_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"
STREAM_ARN = TABLE_ARN + "/stream/2026-11-29T10:00:00.000"


def policy(action: str = "dynamodb:*") -> str:
    statement = {"Effect": "Allow", "Principal": "*", "Action": action, "Resource": "*"}
    return orjson.dumps({"Version": "2012-10-17", "Statement": [statement]}).decode()


def put(
    policies: tuple[ResourcePolicy, ...],
    document: str,
    now: float,
    expected: str | None = None,
    arn: str = TABLE_ARN,
):
    body = {"ResourceArn": arn, "Policy": document, **({"ExpectedRevisionId": expected} if expected else {})}
    return ops.put(policies, ops.validate_put(body), now)


def refused(call) -> DynamoError:  # type: ignore[no-untyped-def]
    with pytest.raises(DynamoError) as exc:
        call()
    return exc.value


def test_an_arn_names_a_table_or_one_of_its_streams() -> None:
    assert ops.target_of(TABLE_ARN) == ops.Target(TABLE_ARN, "Orders", "")
    assert ops.target_of(STREAM_ARN) == ops.Target(STREAM_ARN, "Orders", "2026-11-29T10:00:00.000")
    for wrong in (
        "Orders",
        "arn:aws:dynamodb:us-east-1:000000000000:table/Orders/index/i",
        "arn:aws:s3:::bucket",
    ):
        error = refused(lambda wrong=wrong: ops.target_of(wrong))
        assert (error.code, error.message) == (
            "ValidationException",
            f"Invalid ResourceArn provided as input {wrong}",
        )


def test_revisions_are_milliseconds_and_only_a_new_document_makes_one() -> None:
    first, revision = put((), policy(), now=1000.0)
    assert revision == "1000000"
    same, again = put(first, policy(), now=1001.0)
    assert (same, again) == (first, revision)
    changed, later = put(first, policy("dynamodb:PutItem"), now=1000.0)  # the clock stood still
    assert int(later) > int(revision)
    assert changed == (ResourcePolicy("", policy("dynamodb:PutItem"), later),)


def test_a_table_and_its_stream_each_have_their_own_policy() -> None:
    table, _ = put((), policy(), now=1.0)
    both, _ = put(table, policy("dynamodb:GetRecords"), now=2.0, arn=STREAM_ARN)
    assert [p.resource for p in both] == ["", "2026-11-29T10:00:00.000"]
    after, deleted = ops.delete(both, ops.validate_delete({"ResourceArn": TABLE_ARN}))
    assert deleted == table[0].revision_id
    assert [p.resource for p in after] == ["2026-11-29T10:00:00.000"]


def test_an_expected_revision_must_be_the_current_one() -> None:
    current, revision = put((), policy(), now=1.0)
    put(current, policy("dynamodb:GetItem"), now=2.0, expected=revision)
    error = refused(lambda: put(current, policy("dynamodb:GetItem"), now=2.0, expected="123"))
    assert error.code == "PolicyNotFoundException"
    assert error.message == (
        "Resource-based policy not found for the provided ResourceArn: Requested update for policy with revision "
        f"id 123, but the policy associated to target table Orders has revision id {revision}."
    )
    error = refused(
        lambda: ops.delete(
            current, ops.validate_delete({"ResourceArn": TABLE_ARN, "ExpectedRevisionId": "9"})
        )
    )
    assert error.code == "PolicyNotFoundException"


def test_no_policy_as_the_expected_revision_asks_that_none_be_attached() -> None:
    current, revision = put((), policy(), now=1.0, expected=ops.NO_POLICY)
    error = refused(lambda: put(current, policy("dynamodb:GetItem"), now=2.0, expected=ops.NO_POLICY))
    assert error.message == (
        "Resource-based policy not found for the provided ResourceArn: Requested policy update expecting none to "
        f"be present for table Orders, but a policy exists with revision id {revision}."
    )


def test_a_revision_expected_where_no_policy_is_attached_is_refused() -> None:
    assert refused(lambda: put((), policy(), now=1.0, expected="5")).code == "PolicyNotFoundException"


def test_deleting_where_no_policy_is_attached_is_policy_not_found() -> None:
    error = refused(lambda: ops.delete((), ops.validate_delete({"ResourceArn": TABLE_ARN})))
    assert (error.code, error.message) == (
        "PolicyNotFoundException",
        f"Resource-based policy not found for the provided ResourceArn: {TABLE_ARN}",
    )


def test_a_policy_document_is_checked_before_it_is_put() -> None:
    error = refused(lambda: put((), "{}", now=1.0))
    assert error.code == "ValidationException"


def test_create_table_attaches_its_policy_as_the_first_revision() -> None:
    assert ops.attached_at_creation(None, 5.0) == ()
    assert ops.attached_at_creation(policy(), 5.0) == (ResourcePolicy("", policy(), "5000"),)
