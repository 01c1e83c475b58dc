"""PutItem / GetItem / DeleteItem through boto3 and the AWS CLI on a real cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, wait_active

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-items")]


def _table(cluster: Cluster, schema: list[tuple[str, str, str]]) -> str:
    ddb = cluster.client()
    name = f"items-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": a, "KeyType": k} for a, k, _ in schema],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, _, t in schema],
        BillingMode="PAY_PER_REQUEST",
    )
    wait_active(ddb, name)
    return name


@pytest.fixture(scope="module")
def table_s(cluster: Cluster) -> str:
    return _table(cluster, [("pk", "HASH", "S")])


@pytest.fixture(scope="module")
def table_sn(cluster: Cluster) -> str:
    return _table(cluster, [("pk", "HASH", "S"), ("sk", "RANGE", "N")])


@pytest.fixture(scope="module")
def table_b(cluster: Cluster) -> str:
    return _table(cluster, [("pk", "HASH", "B")])


EVERY_TYPE: dict[str, Any] = {
    "s": {"S": "héllo ✓"},
    "n": {"N": "-12.5"},
    "b": {"B": b"\x00\xffbin"},
    "bool": {"BOOL": False},
    "null": {"NULL": True},
    "m": {"M": {"inner": {"L": [{"N": "1"}, {"S": "two"}, {"M": {}}]}}},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"x", b"y"]},
    "empty": {"S": ""},
}


def test_put_then_get_returns_the_item_with_every_type(cluster: Cluster, table_s: str) -> None:
    ddb = cluster.client()
    item = {"pk": {"S": "all-types"}, **EVERY_TYPE}
    ddb.put_item(TableName=table_s, Item=item)
    got = ddb.get_item(TableName=table_s, Key={"pk": {"S": "all-types"}}, ConsistentRead=True)["Item"]
    assert got["m"] == {"M": {"inner": {"L": [{"N": "1"}, {"S": "two"}, {"M": {}}]}}}
    assert got["b"] == {"B": b"\x00\xffbin"}
    assert sorted(got["ss"]["SS"]) == ["a", "b"]
    assert sorted(got["bs"]["BS"]) == [b"x", b"y"]
    assert {k: v for k, v in got.items() if k not in ("b", "ss", "bs", "ns")} == {
        k: v for k, v in item.items() if k not in ("b", "ss", "bs", "ns")
    }


def test_numbers_come_back_canonical(cluster: Cluster, table_s: str) -> None:
    ddb = cluster.client()
    ddb.put_item(TableName=table_s, Item={"pk": {"S": "num"}, "a": {"N": "1.50"}, "b": {"N": "1E+3"}})
    got = ddb.get_item(TableName=table_s, Key={"pk": {"S": "num"}})["Item"]
    assert got["a"] == {"N": "1.5"}
    assert got["b"] == {"N": "1000"}


def test_put_overwrites_and_return_values_all_old(cluster: Cluster, table_sn: str) -> None:
    ddb = cluster.client()
    key = {"pk": {"S": "k"}, "sk": {"N": "7"}}
    first = ddb.put_item(TableName=table_sn, Item={**key, "v": {"S": "one"}}, ReturnValues="ALL_OLD")
    assert "Attributes" not in first
    second = ddb.put_item(TableName=table_sn, Item={**key, "v": {"S": "two"}}, ReturnValues="ALL_OLD")
    assert second["Attributes"]["v"] == {"S": "one"}
    # The same number written differently is the same sort key.
    got = ddb.get_item(TableName=table_sn, Key={"pk": {"S": "k"}, "sk": {"N": "7.0"}})["Item"]
    assert got["v"] == {"S": "two"}


def test_sort_keys_distinguish_items(cluster: Cluster, table_sn: str) -> None:
    ddb = cluster.client()
    for i in range(5):
        ddb.put_item(TableName=table_sn, Item={"pk": {"S": "multi"}, "sk": {"N": str(i)}, "i": {"N": str(i)}})
    for i in range(5):
        got = ddb.get_item(TableName=table_sn, Key={"pk": {"S": "multi"}, "sk": {"N": str(i)}})["Item"]
        assert got["i"] == {"N": str(i)}


def test_binary_keys(cluster: Cluster, table_b: str) -> None:
    ddb = cluster.client()
    ddb.put_item(TableName=table_b, Item={"pk": {"B": b"\x00\x01"}, "v": {"S": "bin"}})
    assert ddb.get_item(TableName=table_b, Key={"pk": {"B": b"\x00\x01"}})["Item"]["v"] == {"S": "bin"}
    assert "Item" not in ddb.get_item(TableName=table_b, Key={"pk": {"B": b"\x00\x02"}})


def test_delete_item_removes_and_returns_old(cluster: Cluster, table_s: str) -> None:
    ddb = cluster.client()
    ddb.put_item(TableName=table_s, Item={"pk": {"S": "gone"}, "v": {"N": "1"}})
    out = ddb.delete_item(TableName=table_s, Key={"pk": {"S": "gone"}}, ReturnValues="ALL_OLD")
    assert out["Attributes"] == {"pk": {"S": "gone"}, "v": {"N": "1"}}
    assert "Item" not in ddb.get_item(TableName=table_s, Key={"pk": {"S": "gone"}})
    # Deleting a missing item succeeds and returns nothing.
    assert "Attributes" not in ddb.delete_item(
        TableName=table_s, Key={"pk": {"S": "gone"}}, ReturnValues="ALL_OLD"
    )


def test_items_spread_over_all_partitions(cluster: Cluster, table_s: str) -> None:
    ddb = cluster.client()
    for i in range(60):
        ddb.put_item(TableName=table_s, Item={"pk": {"S": f"spread-{i}"}, "i": {"N": str(i)}})
    for i in range(60):
        assert ddb.get_item(TableName=table_s, Key={"pk": {"S": f"spread-{i}"}})["Item"]["i"] == {"N": str(i)}
    # Each storage node's log shows it hosts part of the table: the WAL of every node
    # holds records (its segments are preallocated: what was never written reads as zeros).
    sizes = [
        sum(
            len(f.read_bytes().rstrip(b"\0"))
            for f in (cluster.data_dir / f"storage-{z}" / "wal").glob("*.log")
        )
        for z in "abc"
    ]
    assert all(s > 0 for s in sizes), sizes


def _error(call: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as err:
        call(**kwargs)
    return err.value.response["Error"]["Code"], err.value.response["Error"]["Message"]


def test_bad_items_get_dynamodb_errors(cluster: Cluster, table_sn: str) -> None:
    ddb = cluster.client()
    put = ddb.put_item
    assert _error(put, TableName=table_sn, Item={"pk": {"S": "x"}}) == (
        "ValidationException",
        "One or more parameter values were invalid: Missing the key sk in the item",
    )
    assert _error(put, TableName=table_sn, Item={"pk": {"S": "x"}, "sk": {"S": "1"}}) == (
        "ValidationException",
        "One or more parameter values were invalid: Type mismatch for key sk expected: N actual: S",
    )
    code, message = _error(put, TableName=table_sn, Item={"pk": {"S": "x" * 2049}, "sk": {"N": "1"}})
    assert code == "ValidationException" and "2048" in message
    code, message = _error(
        put, TableName=table_sn, Item={"pk": {"S": "x"}, "sk": {"N": "1"}, "big": {"S": "x" * 410_000}}
    )
    assert (code, message) == ("ValidationException", "Item size has exceeded the maximum allowed size")
    code, _ = _error(put, TableName=table_sn, Item={"pk": {"S": ""}, "sk": {"N": "1"}})
    assert code == "ValidationException"
    code, message = _error(put, TableName=table_sn, Item={"pk": {"S": "x"}, "sk": {"N": "1e200"}})
    assert code == "ValidationException" and "overflow" in message
    assert _error(ddb.get_item, TableName=table_sn, Key={"pk": {"S": "x"}}) == (
        "ValidationException",
        "The provided key element does not match the schema",
    )
    assert (
        _error(ddb.get_item, TableName="missing-table", Key={"pk": {"S": "x"}})[0]
        == "ResourceNotFoundException"
    )
    # Nothing was written by any refused request.
    assert "Item" not in ddb.get_item(TableName=table_sn, Key={"pk": {"S": "x"}, "sk": {"N": "1"}})


def test_sort_key_over_1024_bytes_is_refused(cluster: Cluster, table_sn: str) -> None:
    ddb = cluster.client()
    name = table_sn
    code, message = (
        _error(ddb.put_item, TableName=name, Item={"pk": {"S": "x"}, "sk": {"N": "1"}, "pad": {"S": "y"}})
        if False
        else ("", "")
    )
    schema = [("pk", "HASH", "S"), ("sk", "RANGE", "S")]
    table_ss = _table(cluster, schema)
    code, message = _error(ddb.put_item, TableName=table_ss, Item={"pk": {"S": "x"}, "sk": {"S": "y" * 1025}})
    assert code == "ValidationException" and "1024" in message
    ddb.put_item(TableName=table_ss, Item={"pk": {"S": "x"}, "sk": {"S": "y" * 1024}})


def _aws(cluster: Cluster, *args: str) -> Any:
    cred = cluster.credentials()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": cred["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": cred["secret_access_key"],
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    aws = Path(sys.executable).parent / "aws"
    out = subprocess.run(
        [str(aws), "dynamodb", *args, "--endpoint-url", cluster.endpoint, "--output", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout) if out.stdout.strip() else {}


def test_aws_cli_does_every_operation(cluster: Cluster) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    created = _aws(
        cluster,
        "create-table",
        "--table-name", name,
        "--attribute-definitions", "AttributeName=Artist,AttributeType=S", "AttributeName=Song,AttributeType=S",
        "--key-schema", "AttributeName=Artist,KeyType=HASH", "AttributeName=Song,KeyType=RANGE",
        "--billing-mode", "PAY_PER_REQUEST",
    )  # fmt: skip
    assert created["TableDescription"]["TableStatus"] == "CREATING"
    _aws(cluster, "wait", "table-exists", "--table-name", name)
    assert _aws(cluster, "describe-table", "--table-name", name)["Table"]["TableStatus"] == "ACTIVE"
    assert name in _aws(cluster, "list-tables")["TableNames"]
    key = json.dumps({"Artist": {"S": "Bach"}, "Song": {"S": "Partita No. 2"}})
    item = json.dumps({"Artist": {"S": "Bach"}, "Song": {"S": "Partita No. 2"}, "Key": {"S": "D minor"}})
    _aws(cluster, "put-item", "--table-name", name, "--item", item)
    assert _aws(cluster, "get-item", "--table-name", name, "--key", key)["Item"]["Key"] == {"S": "D minor"}
    _aws(cluster, "delete-item", "--table-name", name, "--key", key)
    assert "Item" not in _aws(cluster, "get-item", "--table-name", name, "--key", key)
    _aws(cluster, "delete-table", "--table-name", name)
    _aws(cluster, "wait", "table-not-exists", "--table-name", name)
