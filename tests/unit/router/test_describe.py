"""TableDescription: ItemCount and TableSizeBytes are the sums of the partitions' counts."""

from __future__ import annotations

from partita.common.partition_map import Partition
from partita.control.model import PartitionStats, TableRecord
from partita.router.describe import table_description
from tests.unit.records import table_record


def _record() -> TableRecord:
    return table_record(Partition("p0", 0, 2**63, ("a",), "a"), Partition("p1", 2**63, 2**64, ("b",), "b"))


def test_figures_are_summed_over_the_current_partitions_only() -> None:
    stats = {
        "p0": PartitionStats(3, 300, 1.0),
        "p1": PartitionStats(4, 410, 1.0),
        "p-old": PartitionStats(99, 9900, 0.5),  # a partition no longer in the map
    }
    out = table_description(_record(), "arn", stats)
    assert (out["ItemCount"], out["TableSizeBytes"]) == (7, 710)


def test_a_partition_not_counted_yet_adds_nothing() -> None:
    out = table_description(_record(), "arn", {"p1": PartitionStats(4, 410, 1.0)})
    assert (out["ItemCount"], out["TableSizeBytes"]) == (4, 410)
    assert (
        table_description(_record(), "arn")["ItemCount"],
        table_description(_record(), "arn")["TableSizeBytes"],
    ) == (0, 0)
