"""Replication factor 3 on a real local cluster (`partita up --replication-factor 3`):
every partition a group across the three storage nodes (zones a, b, c), real processes,
boto3 as the client, SIGKILL and SIGTERM of storage nodes."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, running, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-replication")]

NODES = ("storage-a", "storage-b", "storage-c")


@pytest.fixture(scope="module")
def rf3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(Path(tmp_path_factory.mktemp("rf3")), "--replication-factor", "3") as c:
        yield c


def _create(ddb: Any, name: str) -> None:
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    wait_active(ddb, name)


def _until(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition never became true")


def test_items_written_with_three_replicas_read_back_strongly_and_eventually(rf3: Cluster) -> None:
    ddb = rf3.client()
    name = f"rf3-{uuid.uuid4().hex[:8]}"
    _create(ddb, name)
    for i in range(30):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "v": {"N": str(i)}})
    for i in range(30):
        got = ddb.get_item(TableName=name, Key={"pk": {"S": f"k{i}"}}, ConsistentRead=True)
        assert got["Item"]["v"] == {"N": str(i)}

    # Eventually consistent reads go to any replica: every one of them converges.
    def all_seen() -> bool:
        return all("Item" in ddb.get_item(TableName=name, Key={"pk": {"S": f"k{i}"}}) for i in range(30))

    _until(all_seen)
    assert ddb.scan(TableName=name, ConsistentRead=True)["Count"] == 30


def test_a_conditional_write_that_fails_is_refused_once_on_the_leader(rf3: Cluster) -> None:
    ddb = rf3.client()
    name = f"rf3c-{uuid.uuid4().hex[:8]}"
    _create(ddb, name)
    ddb.put_item(TableName=name, Item={"pk": {"S": "x"}, "n": {"N": "1"}})
    with pytest.raises(ClientError) as refused:
        ddb.put_item(
            TableName=name,
            Item={"pk": {"S": "x"}, "n": {"N": "2"}},
            ConditionExpression="attribute_not_exists(pk)",
        )
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    got = ddb.get_item(TableName=name, Key={"pk": {"S": "x"}}, ConsistentRead=True)
    assert got["Item"]["n"] == {"N": "1"}
