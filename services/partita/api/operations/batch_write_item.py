"""BatchWriteItem: validate the request into a `BatchWriteItemRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.item import check_item
from partita.api.operations import common
from partita.api.shape import Violations, expect_dict
from partita.api.values import Item, item_size
from partita.common import errors

MAX_REQUESTS = 25
_ONE_OF = "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"


@dataclass(frozen=True)
class WriteRequest:
    table_name: str
    put: Item | None  # the item of a PutRequest (canonical), or None for a DeleteRequest
    key: dict[str, Any] | None  # the key of a DeleteRequest
    size: int  # the put item's size, for capacity
    raw: dict[str, Any]  # the client's WriteRequest, echoed in UnprocessedItems


@dataclass(frozen=True)
class BatchWriteItemRequest:
    requests: list[WriteRequest]
    capacity: str


def validate(body: Any) -> BatchWriteItemRequest:
    body = expect_dict(body)
    v = Violations()
    capacity = common.capacity_mode(body, v)
    common.collection_metrics(body, v)
    items = common.request_items(body, v)
    for name, entries in items.items():
        if not isinstance(entries, list):
            raise errors.serialization("Unexpected value type in payload: expected a list")
        if not common.valid_table_name(name):
            v.add(
                name,
                "requestItems",
                "Map keys must satisfy constraint: [Member must have length less than or equal to 255, "
                "Member must have length greater than or equal to 3, "
                "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+]",
            )
        if not 1 <= len(entries) <= MAX_REQUESTS:
            v.add(
                "{" + name + "=" + str(entries) + "}",
                "requestItems",
                "Map value must satisfy constraint: [Member must have length less than or equal to "
                f"{MAX_REQUESTS}, Member must have length greater than or equal to 1]",
            )
    v.raise_if_any()

    requests = []
    for name, entries in items.items():
        for entry in entries:
            requests.append(_request(name, entry))
    if len(requests) > MAX_REQUESTS:
        raise errors.validation("Too many items requested for the BatchWriteItem call")
    return BatchWriteItemRequest(requests, capacity)


def _request(table: str, entry: Any) -> WriteRequest:
    if entry is None:  # a null in the list: a WriteRequest with neither request set
        raise errors.validation(_ONE_OF)
    if not isinstance(entry, dict):
        raise errors.serialization("Unexpected value type in payload: expected a WriteRequest structure")
    put = entry.get("PutRequest")
    delete = entry.get("DeleteRequest")
    if (put is None) == (delete is None):
        raise errors.validation(_ONE_OF)
    if put is not None:
        if not isinstance(put, dict):
            raise errors.serialization("Unexpected value type in payload: expected a PutRequest structure")
        raw_item = common.attribute_map(put.get("Item"))
        if raw_item is None:
            raise _null_member(table, "putRequest.item")
        item = check_item(raw_item)
        return WriteRequest(table, item, None, item_size(item), entry)
    if not isinstance(delete, dict):
        raise errors.serialization("Unexpected value type in payload: expected a DeleteRequest structure")
    raw_key = common.attribute_map(delete.get("Key"))
    if raw_key is None:
        raise _null_member(table, "deleteRequest.key")
    return WriteRequest(table, None, common.check_item_values(raw_key), 0, entry)


def _null_member(table: str, path: str) -> errors.DynamoError:
    return errors.constraint_violations(
        [
            f"Value null at 'requestItems.{table}.member.{path}' failed to satisfy constraint: Member must not be null"
        ]
    )
