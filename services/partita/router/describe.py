"""A table record as DynamoDB's TableDescription."""

from __future__ import annotations

import uuid
from typing import Any

from partita.control.model import TableRecord


def table_description(record: TableRecord, arn: str) -> dict[str, Any]:
    key_schema = [{"AttributeName": record.partition_key.name, "KeyType": "HASH"}]
    if record.sort_key is not None:
        key_schema.append({"AttributeName": record.sort_key.name, "KeyType": "RANGE"})
    out: dict[str, Any] = {
        "AttributeDefinitions": [
            {"AttributeName": n, "AttributeType": t} for n, t in record.attribute_definitions
        ],
        "TableName": record.name,
        "KeySchema": key_schema,
        "TableStatus": record.status,
        "CreationDateTime": record.created_at,
        "ProvisionedThroughput": {
            "NumberOfDecreasesToday": 0,
            "ReadCapacityUnits": record.read_capacity,
            "WriteCapacityUnits": record.write_capacity,
        },
        # Size and count are refreshed every six hours in DynamoDB; Partita does not
        # track them yet (README feature table).
        "TableSizeBytes": 0,
        "ItemCount": 0,
        "TableArn": arn,
        "TableId": str(uuid.UUID(int=record.table_id)),
        "DeletionProtectionEnabled": False,
    }
    if record.billing_mode == "PAY_PER_REQUEST":
        out["BillingModeSummary"] = {
            "BillingMode": "PAY_PER_REQUEST",
            "LastUpdateToPayPerRequestDateTime": record.created_at,
        }
    return out
