"""From an item or a Key to its storage key, following the table's key schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.common import errors, keys
from partita.control.model import TableRecord

_KEY_MISMATCH = "The provided key element does not match the schema"


@dataclass(frozen=True, slots=True)
class ItemKey:
    hash: int
    storage_key: bytes


def _locate(record: TableRecord, pk_av: dict[str, str], sk_av: dict[str, str] | None) -> ItemKey:
    pk_el = record.partition_key
    pk = keys.partition_key_bytes(pk_el.name, pk_av, pk_el.type)
    h = keys.key_hash(pk_el.type, pk, record.key_hash)
    sk = None
    if record.sort_key is not None and sk_av is not None:
        sk = keys.sort_key_bytes(record.sort_key.name, sk_av, record.sort_key.type)
    return ItemKey(h, keys.item_key(record.table_id, h, pk, sk))


def key_of_item(record: TableRecord, item: dict[str, Any]) -> ItemKey:
    """The key of an item being written (PutItem): key attributes present, right types."""
    attrs = [record.partition_key] + ([record.sort_key] if record.sort_key else [])
    for el in attrs:
        av = item.get(el.name)
        if av is None:
            raise errors.validation(
                f"One or more parameter values were invalid: Missing the key {el.name} in the item"
            )
        actual = next(iter(av))
        if actual != el.type:
            raise errors.validation(
                "One or more parameter values were invalid: Type mismatch for key "
                f"{el.name} expected: {el.type} actual: {actual}"
            )
    sk_av = item[record.sort_key.name] if record.sort_key else None
    return _locate(record, item[record.partition_key.name], sk_av)


def key_of_key(record: TableRecord, key: Any) -> ItemKey:
    """The key named by a request's Key (GetItem, DeleteItem): exactly the key attributes.

    `key` comes from the operation's validation (`check_item_values`), which has already
    checked and canonicalised every attribute value once; this checks it against the
    table's schema.
    """
    if not isinstance(key, dict):
        raise errors.serialization("Unexpected value type in payload: expected a map of attribute values")
    sort_key = record.sort_key
    if len(key) != (2 if sort_key else 1):
        raise errors.validation(_KEY_MISMATCH)
    for el in (record.partition_key, sort_key) if sort_key else (record.partition_key,):
        av = key.get(el.name)
        if type(av) is not dict or el.type not in av:
            raise errors.validation(_KEY_MISMATCH)
    sk_av = key[record.sort_key.name] if record.sort_key else None
    return _locate(record, key[record.partition_key.name], sk_av)
