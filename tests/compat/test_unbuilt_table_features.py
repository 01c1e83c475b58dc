"""Contributor Insights and Kinesis Data Streams destinations, which Partita does not
build: a table answers as a DynamoDB table that uses neither (LocalStack's recordings
of DynamoDB's answers), and turning either on is refused there (partita_only)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, create_table, error

pytestmark = PYTESTMARK

NOWHERE = "arn:aws:kinesis:us-east-1:111111111111:stream/bad-stream"


@pytest.fixture(scope="module")
def table(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S")], prefix="unbuilt")


def test_a_table_reports_contributor_insights_disabled(ddb: Any, table: str) -> None:
    out = ddb.describe_contributor_insights(TableName=table)
    assert {k: v for k, v in out.items() if k != "ResponseMetadata"} == {
        "TableName": table,
        "ContributorInsightsStatus": "DISABLED",
    }


def test_a_missing_table_has_no_contributor_insights_or_destinations(ddb: Any) -> None:
    gone = ("ResourceNotFoundException", "Requested resource not found: Table: bad-table not found")
    assert error(ddb.describe_contributor_insights, TableName="bad-table") == gone
    assert error(ddb.describe_kinesis_streaming_destination, TableName="bad-table") == gone
    assert error(ddb.enable_kinesis_streaming_destination, TableName="bad-table", StreamArn=NOWHERE) == gone
    assert error(ddb.disable_kinesis_streaming_destination, TableName="bad-table", StreamArn=NOWHERE) == gone


def test_a_table_has_no_kinesis_destination(ddb: Any, table: str) -> None:
    out = ddb.describe_kinesis_streaming_destination(TableName=table)
    assert out["TableName"] == table and out["KinesisDataStreamDestinations"] == []


def test_updating_a_destination_the_table_lacks_is_refused_in_dynamodbs_words(ddb: Any, table: str) -> None:
    assert error(ddb.update_kinesis_streaming_destination, TableName=table, StreamArn=NOWHERE) == (
        "ValidationException",
        "Streaming destination cannot be updated with given parameters: "
        "UpdateKinesisStreamingConfiguration cannot be null or contain only null values",
    )
    code, message = error(
        ddb.update_kinesis_streaming_destination,
        TableName=table,
        StreamArn=NOWHERE,
        UpdateKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": "SECOND"},
    )
    assert (code, message) == (
        "ValidationException",
        "1 validation error detected: Value 'SECOND' at "
        "'updateKinesisStreamingConfiguration.approximateCreationDateTimePrecision' failed to satisfy "
        "constraint: Member must satisfy enum value set: [MILLISECOND, MICROSECOND]",
    )
    assert error(
        ddb.update_kinesis_streaming_destination,
        TableName=table,
        StreamArn=NOWHERE,
        UpdateKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": "MICROSECOND"},
    ) == (
        "ValidationException",
        "Table is not in a valid state to enable Kinesis Streaming Destination: No streaming destination "
        f"with streamArn: {NOWHERE} found for table with tableName: {table}",
    )


@pytest.mark.partita_only
def test_turning_contributor_insights_or_a_destination_on_is_refused_by_name(ddb: Any, table: str) -> None:
    assert error(ddb.update_contributor_insights, TableName=table, ContributorInsightsAction="ENABLE") == (
        "ValidationException",
        "Partita does not support CloudWatch Contributor Insights yet",
    )
    assert error(ddb.enable_kinesis_streaming_destination, TableName=table, StreamArn=NOWHERE) == (
        "ValidationException",
        "Partita does not support Kinesis Data Streams destinations yet",
    )
    off = ddb.update_contributor_insights(TableName=table, ContributorInsightsAction="DISABLE")
    assert off["ContributorInsightsStatus"] == "DISABLED"
    assert ddb.list_contributor_insights(TableName=table)["ContributorInsightsSummaries"] == []
    assert error(ddb.describe_contributor_insights, TableName=table, IndexName="no-such-index") == (
        "ResourceNotFoundException",
        "Requested resource not found: Index: no-such-index not found",
    )
