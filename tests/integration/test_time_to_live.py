"""Expired items disappear: the storage nodes sweep every second here (DynamoDB: within
days), each partition's leader deleting its expired items by conditional delete.

Items without the TTL attribute, with a non-number in it, or whose TTL was extended
before it ran out, stay. Deletions are awaited by bounded polls; that an item stays is
checked after a few more sweep intervals.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster, create_pk_table, running, shard_records

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-ttl")]


@pytest.fixture(scope="module")
def ttl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(Path(tmp_path_factory.mktemp("ttl-cluster")), "--ttl-sweep-interval", "1") as c:
        yield c


def _new_table(ddb: Any, **extra: Any) -> str:
    name = f"ttl-{uuid.uuid4().hex[:8]}"
    create_pk_table(ddb, name, **extra)
    return name


def _present(ddb: Any, name: str, pk: str) -> bool:
    return "Item" in ddb.get_item(TableName=name, Key={"pk": {"S": pk}}, ConsistentRead=True)


def _until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_expired_items_are_deleted_and_every_other_item_stays(ttl_cluster: Cluster) -> None:
    ddb = ttl_cluster.client()
    name = _new_table(ddb)
    now = int(time.time())
    # Written before TTL is enabled: swept all the same once it is.
    ddb.put_item(TableName=name, Item={"pk": {"S": "before-enable"}, "expires": {"N": str(now - 60)}})
    ddb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"AttributeName": "expires", "Enabled": True}
    )

    expired = ["before-enable"] + [f"expired-{i}" for i in range(12)]  # spread over the partitions
    for pk in expired[1:]:
        ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "expires": {"N": str(now - 60)}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "fractional"}, "expires": {"N": f"{time.time() - 5:.3f}"}})
    expired.append("fractional")
    staying = {
        "no-attribute": {"pk": {"S": "no-attribute"}},
        "string": {"pk": {"S": "string"}, "expires": {"S": str(now - 60)}},
        "number-set": {"pk": {"S": "number-set"}, "expires": {"NS": [str(now - 60)]}},
        "six-years-ago": {"pk": {"S": "six-years-ago"}, "expires": {"N": str(now - 6 * 365 * 86400)}},
        "future": {"pk": {"S": "future"}, "expires": {"N": str(now + 3600)}},
    }
    for item in staying.values():
        ddb.put_item(TableName=name, Item=item)
    # Expires in a few seconds, but its TTL is extended before then: it must stay.
    soon = int(time.time()) + 4
    ddb.put_item(TableName=name, Item={"pk": {"S": "extended"}, "expires": {"N": str(soon)}})
    # Expires in a few seconds and is left alone: it must go once its time has come.
    ddb.put_item(TableName=name, Item={"pk": {"S": "runs-out"}, "expires": {"N": str(soon)}})
    ddb.update_item(
        TableName=name,
        Key={"pk": {"S": "extended"}},
        UpdateExpression="SET expires = :later",
        ExpressionAttributeValues={":later": {"N": str(now + 3600)}},
    )

    _until(lambda: not any(_present(ddb, name, pk) for pk in expired), 30, "expired items were not deleted")
    _until(lambda: not _present(ddb, name, "runs-out"), 30, "an item whose TTL ran out was not deleted")
    assert time.time() >= soon  # it went only after its time
    time.sleep(2.5)  # two more sweeps after "extended"'s original expiry
    for pk, item in staying.items():
        assert ddb.get_item(TableName=name, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item") == item, (
            pk
        )
    assert _present(ddb, name, "extended")


def test_a_table_without_ttl_keeps_items_whose_attribute_looks_expired(ttl_cluster: Cluster) -> None:
    """The sweep deletes only in tables with TTL enabled (turning it off again needs the
    one-hour cool-down, so the unit tests cover that case)."""
    ddb = ttl_cluster.client()
    name = _new_table(ddb)
    ddb.put_item(TableName=name, Item={"pk": {"S": "old"}, "expires": {"N": str(int(time.time()) - 60)}})
    time.sleep(2.5)  # two sweeps pass this table by
    assert _present(ddb, name, "old")


def test_an_expired_items_deletion_is_a_remove_record_by_the_service(ttl_cluster: Cluster) -> None:
    """DynamoDB Streams shows a TTL deletion as a REMOVE whose userIdentity is the service."""
    ddb = ttl_cluster.client()
    streams = ttl_cluster.client("dynamodbstreams")
    name = _new_table(ddb, StreamSpecification={"StreamEnabled": True, "StreamViewType": "OLD_IMAGE"})
    ddb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"AttributeName": "expires", "Enabled": True}
    )
    expired = {"pk": {"S": "gone"}, "expires": {"N": str(int(time.time()) - 60)}}
    ddb.put_item(TableName=name, Item=expired)
    ddb.delete_item(TableName=name, Key={"pk": {"S": "gone-by-client"}})  # missing: no record
    ddb.put_item(TableName=name, Item={"pk": {"S": "kept"}})
    ddb.delete_item(TableName=name, Key={"pk": {"S": "kept"}})
    arn = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    shards = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]

    def removes() -> list[dict[str, Any]]:
        every = (r for shard in shards for r in shard_records(streams, arn, shard["ShardId"]))
        return [r for r in every if r["eventName"] == "REMOVE"]

    _until(lambda: len(removes()) == 2, 30, "the expired item's REMOVE record")
    by_key = {r["dynamodb"]["Keys"]["pk"]["S"]: r for r in removes()}
    assert by_key["gone"]["userIdentity"] == {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    assert by_key["gone"]["dynamodb"]["OldImage"] == expired
    assert "userIdentity" not in by_key["kept"]  # a client's delete
