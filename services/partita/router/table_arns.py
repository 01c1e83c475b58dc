"""A table's ARN where its name is asked for, as DynamoDB takes it.

Since DynamoDB's resource-based policies, every operation taking a TableName (and the
keys of a batch's RequestItems) takes the table's ARN as well. Partita keeps one
account and region, so an ARN stands for the table named at its end: it is replaced by
that name before the request is checked, and the request then runs (and is answered)
as if the name had been sent, except that a batch's answer is keyed by the ARNs its
RequestItems were keyed by, as DynamoDB keys it (moto's test_batch_write_using_arn, run
against DynamoDB). An ARN that names no table (an index, a stream, another service) is
left as sent, and refused as a table name.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_TABLE_ARN = re.compile(r"arn:aws[a-z-]*:dynamodb:[a-z0-9-]*:[0-9]*:table/([a-zA-Z0-9_.-]{3,255})")


def table_name_of(value: str) -> str:
    """The table an ARN names, or `value` itself when it is not a table's ARN."""
    if not value.startswith("arn:"):
        return value
    match = _TABLE_ARN.fullmatch(value)
    return match.group(1) if match is not None else value


def names_for_arns(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with each table ARN in TableName and RequestItems' keys replaced by the
    table's name (the same object when there is none, the common case)."""
    table = payload.get("TableName")
    if isinstance(table, str) and table.startswith("arn:"):
        payload = {**payload, "TableName": table_name_of(table)}
    items = payload.get("RequestItems")
    if isinstance(items, dict) and any(isinstance(k, str) and k.startswith("arn:") for k in items):
        named = {table_name_of(k): v for k, v in items.items()}
        # A table named twice (by name and by ARN) is left for the checks to refuse;
        # merging would drop one of its requests.
        if len(named) == len(items):
            payload = {**payload, "RequestItems": named}
    listed = payload.get("TransactItems")
    if isinstance(listed, list) and any(_names_an_arn(entry) for entry in listed):
        payload = {**payload, "TransactItems": [_action_by_name(entry) for entry in listed]}
    return payload


def _names_an_arn(entry: Any) -> bool:
    return isinstance(entry, dict) and any(
        isinstance(action, dict) and str(action.get("TableName", "")).startswith("arn:")
        for action in entry.values()
    )


def _action_by_name(entry: Any) -> Any:
    """A transaction's entry with its action's table ARN replaced by the table's name."""
    if not _names_an_arn(entry):
        return entry
    return {
        member: {**action, "TableName": table_name_of(action["TableName"])}
        if isinstance(action, dict) and str(action.get("TableName", "")).startswith("arn:")
        else action
        for member, action in entry.items()
    }


# A batch answer's members keyed by table.
_KEYED_BY_TABLE = ("Responses", "UnprocessedKeys", "UnprocessedItems", "ItemCollectionMetrics")


def request_item_arns(payload: dict[str, Any]) -> dict[str, str]:
    """The tables a batch's RequestItems name by ARN: name -> the ARN as sent."""
    items = payload.get("RequestItems")
    if not isinstance(items, dict):
        return {}
    return {
        table_name_of(k): k
        for k in items
        if isinstance(k, str) and k.startswith("arn:") and table_name_of(k) != k
    }


def keyed_by_arn(answer: bytes | dict[str, Any], arns: dict[str, str]) -> bytes | dict[str, Any]:
    """A batch's answer with its tables keyed by the ARNs the request used."""
    out = orjson.loads(answer) if isinstance(answer, bytes) else dict(answer)
    for member in _KEYED_BY_TABLE:
        keyed = out.get(member)
        if isinstance(keyed, dict):
            out[member] = {arns.get(name, name): value for name, value in keyed.items()}
    return orjson.dumps(out) if isinstance(answer, bytes) else out
