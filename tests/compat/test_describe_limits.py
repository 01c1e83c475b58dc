"""DescribeLimits: the ceilings Partita enforces, consistent with CreateTable's own limit."""

from __future__ import annotations

from typing import Any

from tests.compat.helpers import PYTESTMARK, error

pytestmark = PYTESTMARK


def test_describe_limits_reports_account_and_table_ceilings(ddb: Any) -> None:
    out = ddb.describe_limits()
    assert {k: v for k, v in out.items() if k != "ResponseMetadata"} == {
        "AccountMaxReadCapacityUnits": 80000,
        "AccountMaxWriteCapacityUnits": 80000,
        "TableMaxReadCapacityUnits": 40000,
        "TableMaxWriteCapacityUnits": 40000,
    }


def test_the_table_ceiling_is_the_one_create_table_enforces(ddb: Any) -> None:
    limit = ddb.describe_limits()["TableMaxReadCapacityUnits"]
    code, _ = error(
        ddb.create_table, TableName="too-fast", BillingMode="PROVISIONED",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": limit + 1, "WriteCapacityUnits": 1},
    )  # fmt: skip
    assert code == "LimitExceededException"
