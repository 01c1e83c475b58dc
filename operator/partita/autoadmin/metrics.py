"""The autoadmin's metrics: what it did to which tables and why, what failed, whether
this process leads, and how long a reconcile pass takes.

Each action the reconcile core decides is counted once it took effect, labelled with
what it was and the observation that called for it (`classify`, a pure function of
the action and the state it was decided from), so an operator reads "4 partitions
placed for new tables, 1 split for throughput" off one family. Labels are bounded:
a handful of actions and reasons, never a table name.
"""

from __future__ import annotations

from typing import Literal

from partita.autoadmin.reconcile import Action, CannotSplit, ChangePartitions, MarkSplit, PutState
from partita.common import metrics
from partita.control.model import TableState

ActionName = Literal[
    "place_partitions",
    "split_partitions",
    "request_split",
    "mark_creating",
    "activate_table",
    "delete_table",
    "compact_store",
    "keep_partition_whole",
    "move_replica",
    "end_move",
]
# Why a failed action did not take effect: someone else changed the record first (the
# next pass decides again; harmless), or the store refused or could not be reached.
FailureCause = Literal["conflict", "error"]

ACTIONS = metrics.counter(
    "partita_autoadmin_actions_total",
    "Control-plane actions the autoadmin carried out, by action and the reason it was due",
    ("action", "reason"),
)
FAILURES = metrics.counter(
    "partita_autoadmin_action_failures_total",
    "Actions that did not take effect: conflict (a lost compare-and-swap) or error",
    ("action", "cause"),
)
PASSES = metrics.counter(
    "partita_autoadmin_passes_total",
    "Reconcile passes over every table, by outcome (ok, or failed: the store was unavailable)",
    ("outcome",),
)
PASS_DURATION = metrics.histogram(
    "partita_autoadmin_pass_duration_seconds", "Time one reconcile pass over every table takes"
)
UNSETTLED = metrics.gauge(
    "partita_autoadmin_unsettled_tables",
    "Tables the last pass found not settled (creating, updating or deleting)",
)
PLACEMENTS = metrics.counter(
    "partita_autoadmin_placements_total",
    "New tables placed, by whether their shuffle shard kept within the bound on replicas of "
    "other tables' partitions (within_bound) or the fleet did not allow it (over_bound)",
    ("shard",),
)
HOT_NODES = metrics.gauge(
    "partita_autoadmin_hot_nodes",
    "Storage nodes whose last load report was above the migration share of their capacity",
)
STUCK_NODES = metrics.gauge(
    "partita_autoadmin_hot_nodes_without_room",
    "Hot storage nodes for none of whose replicas a node of their zone had room (at the last check)",
)
LEADER = metrics.gauge(
    "partita_autoadmin_leader", "1 while this autoadmin leads (acts), 0 while it waits its turn"
)


def classify(action: Action, previous: TableState | None) -> tuple[ActionName, str]:
    """(action, reason) labels of an action decided from the table's `previous` state."""
    if isinstance(action, ChangePartitions):
        if action.reason == "new_table":
            return "place_partitions", "new_table"
        return "split_partitions", action.reason
    if isinstance(action, MarkSplit):
        return "request_split", action.reason
    if isinstance(action, CannotSplit):
        # A split was due (size_exceeded) but would not help: single_key, too_narrow.
        return "keep_partition_whole", action.obstacle
    if isinstance(action, PutState):
        if action.state.phase == "CREATING":
            return "mark_creating", "partitions_placed"
        if previous is not None and previous.phase == "CREATING":
            return "activate_table", "replicas_ready"
        return "activate_table", "update_complete"
    return "delete_table", "deletion_requested"


def record_applied(action: Action, previous: TableState | None) -> None:
    name, reason = classify(action, previous)
    ACTIONS.labels(name, reason).inc()
    if isinstance(action, ChangePartitions) and action.reason == "new_table":
        PLACEMENTS.labels("over_bound" if action.exposed else "within_bound").inc()


def record_failed(action: Action, previous: TableState | None, cause: FailureCause) -> None:
    name, _ = classify(action, previous)
    FAILURES.labels(name, cause).inc()
