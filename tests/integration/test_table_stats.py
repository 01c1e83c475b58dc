"""ItemCount and TableSizeBytes in DescribeTable follow the items, after a recount.

The cluster recounts every 0.3 s here (DynamoDB: about every six hours), so the figures
settle within a few seconds of the writes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita.api.values import item_size
from tests.integration.cluster import Cluster, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-stats")]


@pytest.fixture(scope="module")
def stats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # Twelve partitions a table, so that the partitions holding items are led by more
    # than one node whatever the stable election order gives (with four, all four were
    # led by one node in about one table of 27).
    with running(
        Path(tmp_path_factory.mktemp("stats-cluster")),
        "--stats-interval",
        "0.3",
        "--on-demand-partitions",
        "12",
    ) as c:
        yield c


def _settled(ddb: Any, name: str, expected: tuple[int, int], timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        table: dict[str, Any] = ddb.describe_table(TableName=name)["Table"]
        if (table["ItemCount"], table["TableSizeBytes"]) == expected:
            return table
        assert time.monotonic() < deadline, f"figures stayed {table['ItemCount'], table['TableSizeBytes']}"
        time.sleep(0.1)


def test_describe_table_counts_items_and_their_dynamodb_size_across_partitions(
    stats_cluster: Cluster,
) -> None:
    ddb = stats_cluster.client()
    name = f"stats-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST",
    )  # fmt: skip
    created = wait_active(ddb, name)
    assert (created["ItemCount"], created["TableSizeBytes"]) == (0, 0)

    items = [
        {
            "pk": {"S": f"user-{i % 20}"},
            "sk": {"N": str(i)},
            "payload": {"S": "x" * i},
            "tags": {"SS": ["a", "b"]},
        }
        for i in range(60)
    ]
    for item in items:
        ddb.put_item(TableName=name, Item=item)
    _settled(ddb, name, (60, sum(item_size(i) for i in items)))
    # The table's figures are the sum of its partitions' counts, made by several leaders.
    partitions = _partitions(stats_cluster, name)
    assert sum(p["items"] for p in partitions) == 60
    assert len({p["leader"] for p in partitions if p["items"]}) > 1

    for item in items[:20]:
        ddb.delete_item(TableName=name, Key={"pk": item["pk"], "sk": item["sk"]})
    ddb.put_item(TableName=name, Item={**items[30], "payload": {"S": ""}})  # overwrite: one item, smaller
    remaining = [*items[20:30], {**items[30], "payload": {"S": ""}}, *items[31:]]
    _settled(ddb, name, (40, sum(item_size(i) for i in remaining)))


def _partitions(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", "status", "--data-dir", str(cluster.data_dir)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    table = next(t for t in json.loads(out)["tables"] if t["name"] == name)
    partitions: list[dict[str, Any]] = table["partitions"]
    return partitions
