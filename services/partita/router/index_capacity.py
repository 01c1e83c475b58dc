"""A global secondary index's own throughput, admitted as a table of its own.

DynamoDB gives every global index its own read and write capacity: a Query or Scan of
the index consumes the index's read capacity, not the table's, and a write that changes
the index's entries consumes the index's write capacity too, the write refused when the
index has none left (ThrottlingReasons `IndexWriteProvisionedThroughputExceeded`, the
index's ARN). A local index's reads and writes are the table's.

Admission, metering and Doorman know tables by name, so an index is a table to them:
`index_record` is the table's record under the name `<table>/index/<index>` (its ARN is
then the index's, and its Doorman resources `table/<table>/index/<index>/rcu` and
`wcu`) with the index's provisioned throughput. On-demand indexes take an on-demand
table's allowance and grow with their own peaks.
"""

from __future__ import annotations

import dataclasses

from partita.control.model import SecondaryIndex, TableRecord

INDEX_SEPARATOR = "/index/"


def index_name(table: str, index: str) -> str:
    """What admission and metering call a global index."""
    return f"{table}{INDEX_SEPARATOR}{index}"


def is_index(name: str) -> bool:
    return INDEX_SEPARATOR in name


# The records made, by (table, index): each is made again only when its table's record
# changes (a new object in the route cache), not per request.
_made: dict[tuple[str, str], tuple[TableRecord, TableRecord]] = {}


def index_record(record: TableRecord, index: SecondaryIndex) -> TableRecord:
    key = (record.name, index.name)
    made = _made.get(key)
    if made is not None and made[0] is record:
        return made[1]
    pseudo = dataclasses.replace(
        record,
        name=index_name(record.name, index.name),
        read_capacity=index.read_capacity,
        write_capacity=index.write_capacity,
        warm_throughput=(0, 0),
        on_demand_max=(0, 0),
    )
    _made[key] = (record, pseudo)
    return pseudo


def global_indexes(record: TableRecord) -> list[TableRecord]:
    """The table's global indexes as records (none for most tables: a tuple check)."""
    if not record.indexes:
        return []
    return [index_record(record, i) for i in record.indexes if i.kind == "GLOBAL"]


def queried(record: TableRecord, index_name_asked: object) -> TableRecord:
    """The record a Query or Scan is admitted against: the global index it names, or the
    table (no index, a local one, or a name the request's own checks will refuse)."""
    if not isinstance(index_name_asked, str) or not record.indexes:
        return record
    index = record.index(index_name_asked)
    if index is None or index.kind != "GLOBAL":
        return record
    return index_record(record, index)
