"""How many partitions a table needs for its provisioned throughput.

DynamoDB's rule: one partition serves at most 3000 RCU and 1000 WCU, so a provisioned
table starts with ceil(RCU/3000 + WCU/1000) partitions (at least one). On-demand tables
have no throughput to divide and start with a configured count. Size (10 GB per
partition) only matters later, when data exists, and drives splits, not this count.
"""

from __future__ import annotations

RCU_PER_PARTITION = 3000
WCU_PER_PARTITION = 1000
# Partitions of a new PAY_PER_REQUEST table. DynamoDB does not publish its number; this
# is only a starting point, since on-demand tables split as their traffic grows.
ON_DEMAND_DEFAULT = 4


def _required(rcu: int, wcu: int) -> int:
    if rcu < 0 or wcu < 0:
        raise ValueError("capacity units cannot be negative")
    # ceil(rcu/3000 + wcu/1000) in integers: floats would round 0.1 + 0.2 style sums.
    units = rcu + wcu * (RCU_PER_PARTITION // WCU_PER_PARTITION)
    return max(1, -(-units // RCU_PER_PARTITION))


def initial_partition_count(
    rcu: int, wcu: int, on_demand: bool, on_demand_default: int = ON_DEMAND_DEFAULT
) -> int:
    """Partitions of a new table: ceil(RCU/3000 + WCU/1000), at least one."""
    if on_demand:
        if on_demand_default < 1:
            raise ValueError("on_demand_default must be at least 1")
        return on_demand_default
    return _required(rcu, wcu)


def partition_count_after_update(current: int, rcu: int, wcu: int) -> int:
    """Partitions after a throughput increase: each partition splits in two until enough.

    Splitting every partition keeps them equal in size and throughput, which is why
    DynamoDB's worked example goes from 4 partitions to 8 (not 6) at 6000 WCU. A
    decrease never merges partitions.
    """
    if current < 1:
        raise ValueError("a table has at least one partition")
    needed = _required(rcu, wcu)
    count = current
    while count < needed:
        count *= 2
    return count
