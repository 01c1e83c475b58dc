"""Adaptive capacity (seed 000 section 4.1.2): a pure decision, no clock, no I/O.

A partition's allocation is its share of the table's rate (the rate over the
partition count). Under a skewed load the hot partition is throttled while the table
as a whole is under its rate: DynamoDB then raises ("boosts") the hot partition's
allocation with a proportional controller, so the table's unused throughput goes where
the traffic is, and cuts the boosts back when the table consumes more than its rate.

Each control period the caller passes, for one table and one kind (read, write), the
partitions it serves: their share, current allocation, what they consumed per second
over the period and whether they were refused at the partition layer; `allocations`
answers the next period's allocation of each:

- the table's headroom is its rate minus what its partitions consumed;
- the table over its rate (beyond `OVER_TOLERANCE`, the slack of a rate that is
  charged after the fact): every allocation back to its share; at its rate, the
  allocations stay (cutting them there would make a table held at its rate by the
  routers oscillate between boosted and throttled);
- a throttled partition gains `gain` x the headroom (split among the throttled ones),
  bounded by `ceiling` (the caller's: the table's rate, DynamoDB's per-partition
  maximum and the node's capacity, whichever is lowest), never under its share;
- a boosted partition no longer throttled keeps at most twice what it uses (its boost
  fades with its traffic), never under its share.

Where it runs: at the storage node, which sees each request's partition and every
refusal as it happens, so a boost lands within a period rather than a stats interval
later. A node sees only the partitions it serves, so the headroom it computes is the
table's rate minus the consumption it can see: a boost never lets the table exceed its
rate, because the routers hold the table as a whole to that rate first (global
admission control, DESIGN.md section 5). Moving a boosted partition to a node with room
(the seed gives that to the autoadmin) is not done here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Seconds between two decisions: short, so a hot partition is throttled for about a
# second before its boost (DynamoDB's adaptive capacity now reacts "instantly").
PERIOD_SECONDS = 1.0
# The share of the table's headroom a throttled partition gains per period: half, so
# the allocation closes in on the table's unused rate geometrically without overshoot.
GAIN = 0.5
# How far over its rate a table's consumption may go before its boosts are cut.
OVER_TOLERANCE = 0.1


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    share: float  # the table's rate over its partitions
    allocation: float  # what the partition may use now (share + boost)
    consumed: float  # units per second admitted (the caller: over the last two periods)
    throttled: bool  # refused at the partition layer during the period


def allocations(
    table_rate: float, ceiling: float, loads: Mapping[str, PartitionLoad], gain: float = GAIN
) -> dict[str, float]:
    """Each partition's allocation for the next period (see the module's docstring)."""
    consumed = sum(load.consumed for load in loads.values())
    if consumed > table_rate * (1.0 + OVER_TOLERANCE):
        return {pid: load.share for pid, load in loads.items()}
    headroom = max(0.0, table_rate - consumed)
    hot = sum(1 for load in loads.values() if load.throttled)
    out: dict[str, float] = {}
    for pid, load in loads.items():
        if load.throttled:
            raised = load.allocation + gain * headroom / hot
            out[pid] = max(load.share, min(raised, ceiling))
        else:
            out[pid] = max(load.share, min(load.allocation, 2.0 * load.consumed))
    return out
