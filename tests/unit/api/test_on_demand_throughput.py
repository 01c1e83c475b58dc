"""OnDemandThroughput's rules, as nubo-db's dynoxide captured DynamoDB's answers
(eu-west-2, 2026-07-24): billing mode gate, range, member-wise merge and -1."""

from __future__ import annotations

import pytest

from partita.api.operations import on_demand_throughput as odt
from partita.common.errors import DynamoError

INVALID = "One or more parameter values were invalid: "


def refusal(call: object, *args: object) -> str:
    with pytest.raises(DynamoError) as err:
        call(*args)  # type: ignore[operator]
    assert err.value.code == "ValidationException"
    return err.value.message


def test_a_member_needs_on_demand_billing_and_the_first_present_one_is_named() -> None:
    assert refusal(odt.on_create, (None, 5), "PROVISIONED") == (
        INVALID
        + "MaxWriteRequestUnits for OnDemandThroughput cannot be specified when table BillingMode is PROVISIONED."
    )
    assert refusal(odt.on_update, (0, 5), "PROVISIONED", (0, 0)) == (
        INVALID
        + "MaxReadRequestUnits for OnDemandThroughput cannot be specified when the table BillingMode is "
        "PROVISIONED"
    )


def test_members_are_at_least_one_and_minus_one_removes_only_on_update() -> None:
    outside = (
        INVALID + "Requested MaxReadRequestUnits for OnDemandThroughput for table is outside of valid range"
    )
    assert refusal(odt.on_create, (0, None), "PAY_PER_REQUEST") == outside
    assert refusal(odt.on_create, (-1, None), "PAY_PER_REQUEST") == outside
    assert refusal(odt.on_update, (-2, None), "PAY_PER_REQUEST", (0, 0)) == outside
    assert odt.on_create((5, None), "PAY_PER_REQUEST") == (5, 0)
    assert odt.requested({}) is None and odt.requested(None) is None  # no member: nothing asked


def test_an_update_merges_member_by_member_and_echoes_a_removal_as_sent() -> None:
    echo, kept = odt.on_update((None, 9), "PAY_PER_REQUEST", (5, 7))
    assert (echo, kept) == ((5, 9), (5, 9))
    echo, kept = odt.on_update((-1, None), "PAY_PER_REQUEST", (5, 9))
    assert (echo, kept) == ((-1, 9), (0, 9))
    assert odt.described(echo) == {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 9}
    assert odt.described(kept) == {"MaxWriteRequestUnits": 9}
    assert odt.described((0, 0)) is None
