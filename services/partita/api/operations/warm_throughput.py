"""WarmThroughput in CreateTable and UpdateTable: the read and write units per second a
table is to take at once. Partita lays the table's partitions out for that rate (as for
provisioned throughput, `autoadmin.reconcile`) and admits an on-demand table at least
that much from its first request (`common.throughput.on_demand_allowance`).

The members' types and their floor of 1 are the service model's, checked before this.
"""

from __future__ import annotations

from typing import Any

from partita.api.shape import expect_type
from partita.common import errors

# Per table and unit kind, as provisioned throughput's default quota: a warm rate is a
# number of partitions made at once, so it is bounded as throughput is.
MAX_WARM_UNITS = 40_000


def asked(value: Any) -> tuple[int, int]:
    """(read, write) units per second of a WarmThroughput member; 0 for one not given."""
    warm = expect_type(value, dict, "a structure")
    if warm is None:
        return (0, 0)
    read = expect_type(warm.get("ReadUnitsPerSecond"), int, "a number") or 0
    write = expect_type(warm.get("WriteUnitsPerSecond"), int, "a number") or 0
    for name, units in (("ReadUnitsPerSecond", read), ("WriteUnitsPerSecond", write)):
        if units > MAX_WARM_UNITS:
            raise errors.limit_exceeded(
                f"Subscriber limit exceeded: Warm throughput for {name} on a table cannot exceed "
                f"{MAX_WARM_UNITS}"
            )
    return (read, write)


def raised(current: tuple[int, int], wanted: tuple[int, int]) -> tuple[int, int]:
    """The warm throughput after an UpdateTable asks for `wanted`: a table's warm rate
    only ever rises (DynamoDB's guide: it cannot be decreased); a member not given keeps
    its value."""
    return (max(current[0], wanted[0]), max(current[1], wanted[1]))
