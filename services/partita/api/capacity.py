"""Capacity units as DynamoDB charges them, and the ConsumedCapacity a response carries.

DynamoDB's rules (developer guide, "Capacity unit consumption"):
- a read costs one unit per started 4 KB of item size when strongly consistent, half
  that when eventually consistent; reading a missing item still costs the minimum;
- Query and Scan add up the sizes of every item they read (before any filter) in each
  partition and round each partition's total once, so many small items share units; a
  partition read that found nothing still costs the minimum ("queries that do not
  return results consume the minimum"), so a Scan of a one-item table of four
  partitions (a new on-demand table) costs 4 units strongly consistent and 2 eventually,
  DynamoDB's own figures (Alternator's test_scan_consumed_capacity);
- a write costs one unit per started 1 KB of the larger of the item before and after
  (a delete of a missing item still costs one unit);
- BatchGetItem and BatchWriteItem charge every item on its own and report one sum per
  table;
- a write to a table with secondary indexes also costs each index the write units of
  the entries it puts or deletes (`index_keys.index_write_units`), reported in the
  total, and with INDEXES under GlobalSecondaryIndexes and LocalSecondaryIndexes
  beside the table's own.
Sizes are `partita.api.values.item_size`: UTF-8 attribute names count, numbers by
their significant digits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024

ReturnConsumedCapacity = Literal["NONE", "TOTAL", "INDEXES"]


def _units(size: int, unit: int) -> int:
    return max(1, -(-size // unit))


def read_units(size: int, consistent: bool) -> float:
    """Units of one item read (GetItem, one key of BatchGetItem); size 0 = no item."""
    units = _units(size, READ_UNIT_BYTES)
    return float(units) if consistent else units / 2


def range_read_units(total_size: int, consistent: bool) -> float:
    """Units of one Query or Scan read of one partition: the sizes of every item read
    there, rounded once."""
    return read_units(total_size, consistent)


def write_units(old_size: int, new_size: int = 0) -> float:
    """Units of one write: the larger of the item before and after, per started KB."""
    return float(_units(max(old_size, new_size), WRITE_UNIT_BYTES))


def consumed(table: str, units: float, mode: str | None) -> dict[str, Any] | None:
    """The ConsumedCapacity of one table, or None when the request did not ask."""
    if mode != "TOTAL" and mode != "INDEXES":
        return None
    out: dict[str, Any] = {"TableName": table, "CapacityUnits": units}
    if mode == "INDEXES":
        # Without secondary indexes every unit is the table's own.
        out["Table"] = {"CapacityUnits": units}
    return out


# The write units each index of a table consumed: index name -> (local, units).
IndexUnits = dict[str, tuple[bool, float]]


def consumed_with_indexes(
    table: str, units: float, indexes: IndexUnits, mode: str | None
) -> dict[str, Any] | None:
    """The ConsumedCapacity of a write: the table's units plus its indexes'."""
    out = consumed(table, units + sum(n for _, n in indexes.values()), mode)
    if out is not None and mode == "INDEXES":
        out["Table"] = {"CapacityUnits": units}
        for name, (local, n) in indexes.items():
            section = out.setdefault("LocalSecondaryIndexes" if local else "GlobalSecondaryIndexes", {})
            section[name] = {"CapacityUnits": n}
    return out


def add_index_units(into: IndexUnits, units: dict[str, float], local: frozenset[str]) -> None:
    """Adds one write's units per index (a storage answer's) to a table's sums."""
    for name, n in units.items():
        total = into.get(name, (name in local, 0.0))[1]
        into[name] = (name in local, total + n)


def consumed_on_index(
    table: str, index: str, local: bool, units: float, mode: str | None, fetched: float = 0.0
) -> dict[str, Any] | None:
    """The ConsumedCapacity of a Query or Scan of a secondary index: the index's units,
    and the table's for the items a local index fetched from it (`fetched`)."""
    out = consumed(table, units + fetched, mode)
    if out is not None and mode == "INDEXES":
        out["Table"] = {"CapacityUnits": fetched}
        out["LocalSecondaryIndexes" if local else "GlobalSecondaryIndexes"] = {
            index: {"CapacityUnits": units}
        }
    return out


def consumed_per_table(
    units: Iterable[tuple[str, float]], mode: str | None, indexes: dict[str, IndexUnits] | None = None
) -> list[dict[str, Any]] | None:
    """BatchGetItem/BatchWriteItem: one ConsumedCapacity per table, in first-seen order;
    `indexes`: the write units of each table's indexes (BatchWriteItem)."""
    if mode != "TOTAL" and mode != "INDEXES":
        return None
    totals: dict[str, float] = {}
    for table, n in units:
        totals[table] = totals.get(table, 0.0) + n
    out = []
    for table, n in totals.items():
        own = (indexes or {}).get(table)
        c = consumed_with_indexes(table, n, own, mode) if own else consumed(table, n, mode)
        if c is not None:
            out.append(c)
    return out
