"""The autoadmin's metrics: each action the reconcile core decides is labelled with what
it was and why it was due, counted once it took effect, and counted as a failure (by
cause) when it did not."""

from __future__ import annotations

import pytest

from partita.autoadmin import metrics
from partita.autoadmin.local import LocalAutoadmin
from partita.autoadmin.reconcile import Action, CannotSplit, ChangePartitions, PutState, RemoveTable, Settings
from partita.common.metrics import REGISTRY
from partita.common.partition_map import HASH_SPACE, Partition
from partita.control.model import NodeRecord, Revision, TableState
from partita.control.store import MemoryControlStore
from tests.unit.records import table_spec

SPEC = table_spec("Orders", created_at=1.0)
P = Partition("p", 0, HASH_SPACE, ("n1",), "n1")
CREATING = TableState("Orders", 7, "CREATING", 1)
ACTIVE = TableState("Orders", 7, "ACTIVE", 1)


@pytest.mark.parametrize(
    ("action", "previous", "labels"),
    [
        (ChangePartitions(7, (P,)), None, ("place_partitions", "new_table")),
        (
            ChangePartitions(7, (P,), ("parent",), reason="throughput_raised"),
            ACTIVE,
            ("split_partitions", "throughput_raised"),
        ),
        (
            ChangePartitions(7, (P,), ("parent",), reason="size_exceeded"),
            ACTIVE,
            ("split_partitions", "size_exceeded"),
        ),
        (
            ChangePartitions(7, (P,), ("parent",), reason="consumption_hot"),
            ACTIVE,
            ("split_partitions", "consumption_hot"),
        ),
        (CannotSplit(7, "p", "single_key"), ACTIVE, ("keep_partition_whole", "single_key")),
        (CannotSplit(7, "p", "single_hot_key"), ACTIVE, ("keep_partition_whole", "single_hot_key")),
        (PutState(CREATING), None, ("mark_creating", "partitions_placed")),
        (PutState(ACTIVE), CREATING, ("activate_table", "replicas_ready")),
        (PutState(TableState("Orders", 7, "ACTIVE", 2)), ACTIVE, ("activate_table", "update_complete")),
        (RemoveTable(SPEC), ACTIVE, ("delete_table", "deletion_requested")),
    ],
)
def test_every_action_is_labelled_with_what_it_was_and_why(
    action: Action, previous: TableState | None, labels: tuple[str, str]
) -> None:
    assert metrics.classify(action, previous) == labels


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


NODE = NodeRecord("n1", "a", "127.0.0.1:1", "127.0.0.1:2")


async def test_a_pass_counts_the_actions_that_took_effect_and_the_unsettled_tables() -> None:
    store = MemoryControlStore()
    await store.register_node(NODE, ttl=10)
    assert await store.create_table_spec(SPEC)
    before = {
        key: sample("partita_autoadmin_actions_total", action=key[0], reason=key[1])
        for key in (("place_partitions", "new_table"), ("mark_creating", "partitions_placed"))
    }
    passes = sample("partita_autoadmin_pass_duration_seconds_count")
    autoadmin = LocalAutoadmin(store, Settings(on_demand_partitions=2))
    applied = await autoadmin.reconcile_once()
    assert [type(a) for a in applied] == [ChangePartitions, PutState]
    for (action, reason), count in before.items():
        assert sample("partita_autoadmin_actions_total", action=action, reason=reason) == count + 1
    assert sample("partita_autoadmin_pass_duration_seconds_count") == passes + 1
    assert sample("partita_autoadmin_unsettled_tables") == 1  # CREATING until replicas serve


async def test_a_lost_compare_and_swap_is_counted_as_a_conflict() -> None:
    store = MemoryControlStore()
    await store.register_node(NODE, ttl=10)
    assert await store.create_table_spec(SPEC)
    autoadmin = LocalAutoadmin(store, Settings(on_demand_partitions=2))
    conflicts = sample("partita_autoadmin_action_failures_total", action="mark_creating", cause="conflict")
    stale = PutState(TableState("Orders", 7, "CREATING", 1, Revision("a revision nobody has")))
    assert await autoadmin._apply_counted(stale, None) is False
    assert (
        sample("partita_autoadmin_action_failures_total", action="mark_creating", cause="conflict")
        == conflicts + 1
    )


class BrokenMaintenance:
    async def compact_and_defragment(self, keep_revisions: int) -> None:
        raise ConnectionError("etcd is down")


async def test_a_failed_compaction_is_counted_as_an_error() -> None:
    autoadmin = LocalAutoadmin(MemoryControlStore(), maintenance=BrokenMaintenance(), defrag_interval=0)
    errors = sample("partita_autoadmin_action_failures_total", action="compact_store", cause="error")
    with pytest.raises(ConnectionError):
        await autoadmin.housekeeping_if_due()
    assert (
        sample("partita_autoadmin_action_failures_total", action="compact_store", cause="error") == errors + 1
    )
