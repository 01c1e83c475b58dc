"""Telling a partition limit from a table limit after a throttle."""

from __future__ import annotations

from typing import Any

import pytest

from partita.client.sharding.signals import (
    Constraint,
    ConsumedCapacityMeter,
    FirstKnown,
    NullSignal,
    ProvisionedCapacitySignal,
    ThrottlingReasonsSignal,
)


def throttle(*reasons: str) -> dict[str, Any]:
    """A ClientError.response as botocore parses DynamoDB's throttle (modeled fields at the top)."""
    response: dict[str, Any] = {
        "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    if reasons:
        arn = "arn:aws:dynamodb:us-east-1:000000000000:table/audit"
        response["ThrottlingReasons"] = [{"reason": r, "resource": arn} for r in reasons]
    return response


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        (("TableWriteKeyRangeThroughputExceeded",), Constraint.PARTITION),
        (("TableWriteProvisionedThroughputExceeded",), Constraint.TABLE),
        (("TableWriteAccountLimitExceeded",), Constraint.TABLE),
        (("TableWriteMaxOnDemandThroughputExceeded",), Constraint.TABLE),
        (
            ("TableWriteKeyRangeThroughputExceeded", "TableWriteProvisionedThroughputExceeded"),
            Constraint.TABLE,
        ),
        ((), Constraint.UNKNOWN),
    ],
)
def test_dynamodbs_throttling_reasons_name_the_constraint(
    reasons: tuple[str, ...], expected: Constraint
) -> None:
    assert ThrottlingReasonsSignal().classify("audit", throttle(*reasons)) is expected


def test_the_null_signal_knows_nothing() -> None:
    assert (
        NullSignal().classify("audit", throttle("TableWriteKeyRangeThroughputExceeded")) is Constraint.UNKNOWN
    )


def test_first_known_asks_signals_in_order() -> None:
    chain = FirstKnown([NullSignal(), ThrottlingReasonsSignal()])
    assert chain.classify("audit", throttle("TableWriteKeyRangeThroughputExceeded")) is Constraint.PARTITION
    assert chain.classify("audit", throttle()) is Constraint.UNKNOWN


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_meter_averages_consumed_units_over_its_window() -> None:
    clock = Clock()
    meter = ConsumedCapacityMeter(clock, window=10.0)
    for _ in range(50):
        meter.record("audit", 2.0)
        clock.now += 0.1
    assert meter.rate("audit") == pytest.approx(10.0)  # 100 units in the last 10 s
    assert meter.rate("other") == 0.0  # per table
    clock.now += 10.0
    assert meter.rate("audit") == 0.0


class DescribeOnly:
    """A stand-in for the DescribeTable call of a boto3 client (the only call the signal makes)."""

    def __init__(self, table: dict[str, Any]) -> None:
        self.table = table
        self.calls = 0

    def describe_table(self, TableName: str) -> dict[str, Any]:
        self.calls += 1
        return {"Table": self.table}


class Rate:
    def __init__(self, value: float | None) -> None:
        self.value = value

    def rate(self, table_name: str) -> float | None:
        return self.value


PROVISIONED_100 = {
    "BillingModeSummary": {"BillingMode": "PROVISIONED"},
    "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 100},
}


@pytest.mark.parametrize(
    ("consumed", "expected"),
    [
        (20.0, Constraint.PARTITION),
        (89.0, Constraint.PARTITION),
        (95.0, Constraint.TABLE),
        (None, Constraint.UNKNOWN),
    ],
)
def test_consumed_below_provisioned_means_the_partition_is_the_limit(
    consumed: float | None, expected: Constraint
) -> None:
    signal = ProvisionedCapacitySignal(DescribeOnly(PROVISIONED_100), Rate(consumed), Clock())
    assert signal.classify("audit", throttle()) is expected


def test_a_table_without_billing_summary_is_provisioned_as_in_dynamodb() -> None:
    table = {"ProvisionedThroughput": {"WriteCapacityUnits": 100}}
    signal = ProvisionedCapacitySignal(DescribeOnly(table), Rate(10.0), Clock())
    assert signal.classify("audit", throttle()) is Constraint.PARTITION


def test_on_demand_tables_have_nothing_to_compare() -> None:
    table = {
        "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
        "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0},
    }
    signal = ProvisionedCapacitySignal(DescribeOnly(table), Rate(10.0), Clock())
    assert signal.classify("audit", throttle()) is Constraint.UNKNOWN


def test_describe_table_is_cached_for_its_ttl() -> None:
    client = DescribeOnly(PROVISIONED_100)
    clock = Clock()
    signal = ProvisionedCapacitySignal(client, Rate(1.0), clock, describe_ttl=30.0)
    for _ in range(5):
        signal.classify("audit", throttle())
    assert client.calls == 1
    clock.now += 30.0
    signal.classify("audit", throttle())
    assert client.calls == 2
