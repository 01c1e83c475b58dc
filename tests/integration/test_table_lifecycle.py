"""CreateTable / DescribeTable / ListTables / DeleteTable through boto3 on a real cluster."""

from __future__ import annotations

import time
import uuid

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, wait_active, wait_gone

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-tables")]


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize(
    ("key_schema", "definitions"),
    [
        ([("pk", "HASH")], [("pk", "S")]),
        ([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")]),
        ([("id", "HASH"), ("ts", "RANGE")], [("id", "B"), ("ts", "S")]),
        ([("n", "HASH")], [("n", "N")]),
    ],
)
def test_create_table_reports_creating_then_active_with_the_schema(
    cluster: Cluster, key_schema: list[tuple[str, str]], definitions: list[tuple[str, str]]
) -> None:
    ddb = cluster.client()
    name = _name("life")
    started = time.monotonic()
    created = ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": a, "KeyType": k} for a, k in key_schema],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in definitions],
        BillingMode="PAY_PER_REQUEST",
    )["TableDescription"]
    assert created["TableStatus"] == "CREATING"
    table = wait_active(ddb, name)
    assert time.monotonic() - started < 5  # "about a second"; generous for a loaded CI box
    assert table["KeySchema"] == [{"AttributeName": a, "KeyType": k} for a, k in key_schema]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["TableArn"].endswith(f":table/{name}")


def test_provisioned_table_gets_dynamodb_partition_count(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("prov")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 6000, "WriteCapacityUnits": 1500},
    )
    wait_active(ddb, name)
    import asyncio

    from partita.cli.main import _status  # the same JSON `partita status` prints

    status = asyncio.run(_status(cluster.data_dir))
    table = next(t for t in status["tables"] if t["name"] == name)
    # ceil(6000/3000 + 1500/1000) = ceil(3.5) = 4 partitions over the 3 nodes
    assert len(table["partitions"]) == 4
    assert {r["node"] for p in table["partitions"] for r in p["replicas"]} == {
        "storage-a",
        "storage-b",
        "storage-c",
    }


def test_create_existing_table_is_resource_in_use(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("dup")
    spec = {
        "TableName": name,
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    ddb.create_table(**spec)
    with pytest.raises(ClientError) as err:
        ddb.create_table(**spec)
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    assert err.value.response["Error"]["Message"] == f"Table already exists: {name}"


def test_list_tables_pages_in_name_order(cluster: Cluster) -> None:
    ddb = cluster.client()
    prefix = _name("list")
    names = [f"{prefix}-{i}" for i in range(5)]
    for n in names:
        ddb.create_table(
            TableName=n,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    seen: list[str] = []
    kwargs: dict[str, object] = {"Limit": 2}
    pages = 0
    while True:
        page = ddb.list_tables(**kwargs)
        pages += 1
        assert len(page["TableNames"]) <= 2
        seen.extend(page["TableNames"])
        if "LastEvaluatedTableName" not in page:
            break
        kwargs["ExclusiveStartTableName"] = page["LastEvaluatedTableName"]
    assert seen == sorted(seen)
    assert [n for n in seen if n.startswith(prefix)] == names
    assert pages >= 3
    paginated = [n for p in ddb.get_paginator("list_tables").paginate() for n in p["TableNames"]]
    assert paginated == seen


def test_delete_table_removes_it_and_its_items(cluster: Cluster) -> None:
    ddb = cluster.client()
    name = _name("del")
    spec = {
        "TableName": name,
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    ddb.create_table(**spec)
    wait_active(ddb, name)
    ddb.put_item(TableName=name, Item={"pk": {"S": "x"}})
    deleted = ddb.delete_table(TableName=name)["TableDescription"]
    assert deleted["TableStatus"] == "DELETING"
    wait_gone(ddb, name)
    assert name not in ddb.list_tables(Limit=100)["TableNames"]
    with pytest.raises(ClientError) as err:
        ddb.get_item(TableName=name, Key={"pk": {"S": "x"}})
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    # A new incarnation under the same name starts empty.
    ddb.create_table(**spec)
    wait_active(ddb, name)
    assert "Item" not in ddb.get_item(TableName=name, Key={"pk": {"S": "x"}})


def test_describe_and_delete_of_missing_table_are_resource_not_found(cluster: Cluster) -> None:
    ddb = cluster.client()
    for call in (ddb.describe_table, ddb.delete_table):
        with pytest.raises(ClientError) as err:
            call(TableName="no-such-table")
        assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
        assert err.value.response["Error"]["Message"] == (
            "Requested resource not found: Table: no-such-table not found"
        )


def test_health_check_answers_like_dynamodb(cluster: Cluster) -> None:
    assert cluster.health().startswith("healthy: 127.0.0.1")
