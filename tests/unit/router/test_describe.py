"""TableDescription: ItemCount and TableSizeBytes are the sums of the partitions' counts."""

from __future__ import annotations

from partita.common.partition_map import Partition
from partita.control.model import PartitionStats, SplitParent, TableRecord
from partita.router.describe import table_description, table_totals
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


def _split(parent: str, count: int, size: int, *children: tuple[str, int, int]) -> dict[str, PartitionStats]:
    root = SplitParent(parent, count, size)
    return {pid: PartitionStats(n, b, 1.0, estimated=True, parent=root) for pid, n, b in children}


def test_split_children_not_counted_yet_add_up_to_their_parents_count() -> None:
    stats = {
        "p0": PartitionStats(3, 300, 1.0),
        **_split("p1", 41, 4100, ("p1-0", 20, 2050), ("p1-1", 21, 2050)),
    }
    assert table_totals(["p0", "p1-0", "p1-1"], stats) == (44, 4400)


def test_a_child_counted_before_its_sibling_leaves_the_sibling_the_rest_of_the_parent() -> None:
    # The keys did not hash evenly: the left child holds 30 of the parent's 40 items,
    # not the 20 it was estimated at. The sum stays 40, not 30 + 20.
    stats = _split("p1", 40, 4000, ("p1-0", 20, 2000), ("p1-1", 20, 2000))
    stats["p1-0"] = PartitionStats(30, 3100, 2.0)
    assert table_totals(["p1-0", "p1-1"], stats) == (40, 4000)
    # Grown past the parent's count since the split: the counted child alone.
    stats["p1-0"] = PartitionStats(45, 4500, 3.0)
    assert table_totals(["p1-0", "p1-1"], stats) == (45, 4500)
    # Both counted: the plain sum.
    stats["p1-1"] = PartitionStats(9, 800, 3.0)
    assert table_totals(["p1-0", "p1-1"], stats) == (54, 5300)


def test_a_family_spans_every_generation_split_from_its_last_counted_partition() -> None:
    # p1's children were split again before either was counted: the grandchildren's
    # estimates start from p1's count, and a counted one is subtracted from it.
    stats = _split("p1", 40, 4000, ("p1-0-0", 10, 1000), ("p1-0-1", 10, 1000), ("p1-1", 20, 2000))
    stats["p1-0-1"] = PartitionStats(16, 1600, 2.0)
    stats["p10"] = PartitionStats(5, 500, 2.0)  # an id that extends "p1" but not "p1-"
    assert table_totals(["p1-0-0", "p1-0-1", "p1-1", "p10"], stats) == (45, 4500)


def test_a_counted_child_split_again_is_a_family_inside_its_parents() -> None:
    # p1 (40 items) split; p1-0 counted 30 and split again before p1-1 was counted.
    stats = {
        **_split("p1", 40, 4000, ("p1-1", 20, 2000)),
        **_split("p1-0", 30, 3000, ("p1-0-0", 15, 1500), ("p1-0-1", 15, 1500)),
    }
    ids = ["p1-0-0", "p1-0-1", "p1-1"]
    assert table_totals(ids, stats) == (40, 4000)
    stats["p1-0-0"] = PartitionStats(14, 1400, 2.0)  # counted: its sibling carries the rest of 30
    assert table_totals(ids, stats) == (40, 4000)
    stats["p1-1"] = PartitionStats(12, 1200, 2.0)  # every family member of p1 counted or inner
    assert table_totals(ids, stats) == (14 + 16 + 12, 1400 + 1600 + 1200)
