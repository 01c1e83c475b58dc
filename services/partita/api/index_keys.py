"""Secondary indexes over a table's items: which items an index holds, as what, in what
order, and the checks a write makes on index key attributes (pure).

Partita evaluates an index from the base table's items when it is read (see
`router/actions/index_reads.py`): an item belongs to an index when it has every one of
the index's key attributes, each of the index's declared type (an item written before a
global index was added may not: DynamoDB's backfill leaves such an item out too). A
write refuses an index key attribute of another type, or an empty string or binary, as
DynamoDB does, so items written after an index exists always fit it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from partita.api import capacity
from partita.api.table_keys import key_of_item
from partita.api.values import Item, item_size, values_equal
from partita.common import errors, keys
from partita.control.model import SecondaryIndex, TableRecord

# (index name, attribute, declared type, HASH or RANGE) of every index key attribute
# of a table: what a write checks (sent to the storage node for an UpdateItem).
IndexKeyAttribute = tuple[str, str, str, str]


def index_key_attributes(indexes: Iterable[SecondaryIndex]) -> list[IndexKeyAttribute]:
    return [
        (index.name, element.name, element.type, role)
        for index in indexes
        for role, elements in (("HASH", index.hash_keys), ("RANGE", index.range_keys))
        for element in elements
    ]


def check_index_key_values(attributes: Sequence[Sequence[str]], item: Item) -> None:
    """ValidationException for an index key attribute of the wrong type, empty, or
    longer than a key of its role may be (2048 bytes for a partition key, 1024 for a
    sort key, as the table's own keys).

    The type and empty-value messages are DynamoDB's (ScyllaDB Alternator's
    test_gsi.py, run against it); the size one as DynamoDB reported it for a global
    index's partition key (wellcomecollection/platform#2285, dynalite#35).
    """
    for index_name, name, expected, role in attributes:
        av = item.get(name)
        if av is None:
            continue
        actual = next(iter(av))
        if actual != expected:
            raise errors.validation(
                "One or more parameter values were invalid: Type mismatch for Index Key "
                f"{name} Expected: {expected} Actual: {actual} IndexName: {index_name}"
            )
        if expected == "N":
            continue
        if av[actual] == "":
            what = "string" if expected == "S" else "binary"
            raise errors.validation(
                "One or more parameter values are not valid. A value specified for a secondary index key "
                f"is not supported. The AttributeValue for a key attribute cannot contain an empty {what} "
                f"value. IndexName: {index_name}, IndexKey: {name}"
            )
        size = len(keys.key_bytes(av, expected))  # type: ignore[arg-type]  # S or B, checked above
        limit = keys.MAX_PARTITION_KEY_BYTES if role == "HASH" else keys.MAX_SORT_KEY_BYTES
        if size > limit:
            raise errors.validation(
                f"One or more parameter values were invalid: Size limit exceeded for Index Key {name} "
                f"Actual Size: {size} bytes Max Size: {limit} bytes IndexName: {index_name}"
            )


def in_index(index: SecondaryIndex, item: Item) -> bool:
    """Whether the index holds the item: every index key attribute there, of its type,
    and a key value a write could give it (not empty, not too long). An item written
    before a global index was added may have neither: DynamoDB's backfill leaves it out
    (ScyllaDB Alternator's test_gsi_updatetable.py, run against DynamoDB)."""
    hash_ok = all(_fits(item.get(e.name), e.type, "HASH") for e in index.hash_keys)
    return hash_ok and all(_fits(item.get(e.name), e.type, "RANGE") for e in index.range_keys)


def _holds(attributes: Sequence[Sequence[str]], item: Item) -> bool:
    """`in_index` for an index given as its key attributes (index_key_attributes)."""
    return all(_fits(item.get(name), kind, role) for _, name, kind, role in attributes)


def _fits(av: Any, kind: str, role: str) -> bool:
    """Whether a value can be an index key attribute of its type and role."""
    if av is None or kind not in av:
        return False
    limit = keys.MAX_PARTITION_KEY_BYTES if role == "HASH" else keys.MAX_SORT_KEY_BYTES
    return kind == "N" or 0 < len(keys.key_bytes(av, kind)) <= limit  # type: ignore[arg-type]


# What a write's node needs to count the write units each index consumes, JSON-able (the
# router sends it when the write asks for its consumed capacity): the index's name, its
# key attributes (as index_key_attributes gives them) and its projected attributes
# (None: ALL).
IndexCapacitySpec = tuple[str, list[IndexKeyAttribute], list[str] | None]


# Specs by table version: a client that asks for its consumed capacity on every write
# (PynamoDB does) does not rebuild them for each one.
_SPECS: dict[int, tuple[TableRecord, list[IndexCapacitySpec]]] = {}
_SPECS_KEPT = 1024


def capacity_specs(record: TableRecord) -> list[IndexCapacitySpec]:
    cached = _SPECS.get(id(record))
    if cached is not None and cached[0] is record:
        return cached[1]
    specs: list[IndexCapacitySpec] = []
    for index in record.indexes:
        names = projected_names(record, index)
        specs.append((index.name, index_key_attributes([index]), None if names is None else sorted(names)))
    if len(_SPECS) >= _SPECS_KEPT:
        _SPECS.clear()
    _SPECS[id(record)] = (record, specs)
    return specs


def index_write_units(specs: Sequence[Sequence[Any]], old: Item | None, new: Item | None) -> dict[str, float]:
    """Write units each index consumes for a write that turns `old` into `new` (None: no
    item), as DynamoDB counts them: an entry put or deleted costs its size in write
    units; an entry whose index key changes, both (the old one deleted, the new one
    put); an entry whose projected attributes change, the new one's; an item outside
    the index before and after, or an entry left as it was, nothing. Indexes that cost
    nothing are left out."""
    out: dict[str, float] = {}
    for name, attributes, projected in specs:
        names = None if projected is None else frozenset(projected)
        before = entry_of(old, names) if old is not None and _holds(attributes, old) else None
        after = entry_of(new, names) if new is not None and _holds(attributes, new) else None
        units = _entry_write_units(attributes, before, after)
        if units:
            out[name] = units
    return out


def _entry_write_units(attributes: Sequence[Sequence[str]], before: Item | None, after: Item | None) -> float:
    if before is None or after is None:
        entry = before if after is None else after
        return 0.0 if entry is None else capacity.write_units(item_size(entry))
    if any(not values_equal(before[a[1]], after[a[1]]) for a in attributes):
        return capacity.write_units(item_size(before)) + capacity.write_units(item_size(after))
    if before == after:
        return 0.0
    return capacity.write_units(item_size(after))


def projected_names(record: TableRecord, index: SecondaryIndex) -> frozenset[str] | None:
    """The attributes an index entry holds; None: all of the item's (ALL)."""
    if index.projection_type == "ALL":
        return None
    names = set(record.key_names) | set(index.key_names)
    if index.projection_type == "INCLUDE":
        names |= set(index.non_key_attributes)
    return frozenset(names)


def entry_of(item: Item, names: frozenset[str] | None) -> Item:
    """The index entry of an item: the item cut to the index's projected attributes."""
    if names is None:
        return item
    return {name: av for name, av in item.items() if name in names}


def entry_key(record: TableRecord, index: SecondaryIndex, item: Item) -> dict[str, Any]:
    """An entry's LastEvaluatedKey: the table's key attributes and the index's."""
    return {name: item[name] for name in (*record.key_names, *index.key_names) if name in item}


def query_order(record: TableRecord, index: SecondaryIndex, item: Item) -> tuple[tuple[bytes, ...], bytes]:
    """Where an entry sorts in a Query of its index key: by the index's sort key (each of
    a multi-attribute one's attributes in turn), then (for entries that share it) by
    `entry_tie_order`."""
    return _range_order(index, item), entry_tie_order(record, item)


def entry_tie_order(record: TableRecord, item: Item) -> bytes:
    """Where entries that share an index key sort, from their item's table key (`item`
    holds it). For a table hashing as DynamoDB does, DynamoDB's order: the MD5 of
    "Outliers", the partition key's bytes and the sort key's (dynalite's Query tests of
    a global index, run against DynamoDB); the storage key after it keeps entries apart.
    Older tables: the item's place in the table."""
    storage_key = key_of_item(record, item).storage_key
    if record.key_hash != keys.KEY_HASH_DYNAMODB:
        return storage_key
    elements = (record.partition_key, record.sort_key)
    parts = [(e.type, keys.key_bytes(item[e.name], e.type)) for e in elements if e is not None]
    return keys.dynamodb_digest(parts) + storage_key


def _range_order(index: SecondaryIndex, item: Item) -> tuple[bytes, ...]:
    return tuple(keys.encode_sort_key(item[e.name], e.type) for e in index.range_keys)


def collection_metrics(record: TableRecord, body: Any, key_source: Item) -> dict[str, Any] | None:
    """A write's ItemCollectionMetrics: asked for (ReturnItemCollectionMetrics SIZE) and
    the table has a local index (DynamoDB reports item collections for those tables
    only). The size estimate is DynamoDB's smallest range: collections are not measured."""
    if body.get("ReturnItemCollectionMetrics") != "SIZE" or not has_local_index(record):
        return None
    name = record.partition_key.name
    return {"ItemCollectionKey": {name: key_source[name]}, "SizeEstimateRangeGB": [0.0, 1.0]}


def has_local_index(record: TableRecord) -> bool:
    return any(index.kind == "LOCAL" for index in record.indexes)


def scan_order(
    record: TableRecord, index: SecondaryIndex, item: Item
) -> tuple[int, bytes, tuple[bytes, ...], bytes]:
    """Where an entry sorts in a Scan of its index: as the index's own partitions hold
    it, by its index partition key's hash (a parallel Scan's segments divide those),
    then that key, then its index sort key, then its item's place in the table. A
    multi-attribute partition key is hashed as one value: its attributes' canonical
    bytes, each with its type and length."""
    if not index.more_hash_keys:
        element = index.partition_key
        raw = keys.key_bytes(item[element.name], element.type)
        hashed = keys.key_hash(element.type, raw, record.key_hash)
    else:
        raw = b"".join(
            e.type.encode() + len(part).to_bytes(4, "big") + part
            for e in index.hash_keys
            for part in (keys.key_bytes(item[e.name], e.type),)
        )
        hashed = keys.key_hash("B", raw, record.key_hash)
    return hashed, raw, _range_order(index, item), entry_tie_order(record, item)
