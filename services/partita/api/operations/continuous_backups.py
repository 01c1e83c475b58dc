"""DescribeContinuousBackups and UpdateContinuousBackups.

Point-in-time recovery is not built yet, so every table answers that continuous backups
and point-in-time recovery are both DISABLED: tools that read the setting (Terraform
reads it for every table) see the truth, turning it off is a no-op that answers the
same, and turning it on is refused by name, as CreateTable refuses parameters Partita
does not implement. DynamoDB answers a new table so too (Alternator's DynamoDB-verified
test_describe_continuous_backups_without_continuous_backups; its note says DynamoDB
reports ContinuousBackupsStatus ENABLED some seconds later, which Partita, without
continuous backups, does not).
"""

from __future__ import annotations

from typing import Any

from partita.api.operations import table_name_only
from partita.api.shape import expect_dict, expect_type
from partita.common import errors
from partita.common.errors import DynamoError

DESCRIPTION = {
    "ContinuousBackupsStatus": "DISABLED",
    "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
}


def table_not_found(name: str) -> DynamoError:
    # These operations answer a missing table as the backup operations do.
    return DynamoError("TableNotFoundException", f"Table not found: {name}")


def validate_describe(body: Any) -> str:
    return table_name_only.validate(body)


def validate_update(body: Any) -> str:
    name = table_name_only.validate(body)
    spec = expect_dict(body["PointInTimeRecoverySpecification"])
    if expect_type(spec["PointInTimeRecoveryEnabled"], bool, "a boolean"):
        raise errors.validation("Partita does not support point-in-time recovery yet")
    return name
