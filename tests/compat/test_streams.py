"""DynamoDB Streams against a real cluster: a table's stream settings, the records its
writes leave (and the writes that leave none), shards, iterators and their errors, as
boto3's `dynamodb` and `dynamodbstreams` clients see them.

Written to pass against DynamoDB too: records are awaited by bounded polls, and a test
reads every shard of its own table. Messages are DynamoDB's where a recording exists
(`api/operations/stream_specification.py`, `router/actions/streams.py`).
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from botocore.config import Config

from tests.compat.helpers import PYTESTMARK, create_table, error, key, validation

pytestmark = PYTESTMARK

VIEW_TYPES = ["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"]


@pytest.fixture(scope="module")
def streams(cluster: Any) -> Any:
    return cluster.client(
        "dynamodbstreams", config=Config(retries={"total_max_attempts": 1}, read_timeout=30)
    )


def _streamed_table(
    ddb: Any, view: str = "NEW_AND_OLD_IMAGES", schema: list[tuple[str, str]] | None = None
) -> str:
    return create_table(
        ddb,
        schema or [("pk", "S")],
        prefix="streams",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": view},
    )


def _arn(ddb: Any, table: str) -> str:
    arn: str = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    return arn


def _shards(streams: Any, arn: str) -> list[dict[str, Any]]:
    shards: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"StreamArn": arn}
    for _ in range(100):
        described = streams.describe_stream(**kwargs)["StreamDescription"]
        shards.extend(described["Shards"])
        if "LastEvaluatedShardId" not in described:
            return shards
        kwargs["ExclusiveStartShardId"] = described["LastEvaluatedShardId"]
    raise AssertionError("DescribeStream did not finish paging")


def _iterators(streams: Any, arn: str, kind: str = "TRIM_HORIZON") -> list[str]:
    iterators = [
        streams.get_shard_iterator(StreamArn=arn, ShardId=s["ShardId"], ShardIteratorType=kind)[
            "ShardIterator"
        ]
        for s in _shards(streams, arn)
    ]
    # DynamoDB's iterators start with the stream's ARN (LocalStack's recordings test it).
    assert all(re.fullmatch(re.escape(arn) + r"\|\d\|.+", it) for it in iterators), iterators
    return iterators


def _read_all(streams: Any, iterators: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every record the iterators reach now, and the iterators to go on from."""
    records: list[dict[str, Any]] = []
    following = []
    for iterator in iterators:
        for _ in range(50):
            page = streams.get_records(ShardIterator=iterator)
            records.extend(page["Records"])
            nxt = page.get("NextShardIterator")
            if nxt is None:
                break
            iterator = nxt
            if not page["Records"]:
                following.append(nxt)
                break
    return records, following


def _events(streams: Any, arn: str, expected: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The stream's records from the start, once at least `expected` are there (polled)."""
    deadline = time.monotonic() + timeout
    while True:
        records, _ = _read_all(streams, _iterators(streams, arn))
        if len(records) >= expected or time.monotonic() > deadline:
            return records
        time.sleep(0.2)


def _shard_of(streams: Any, arn: str, pk: str) -> str:
    """The shard holding the records of partition key `pk`."""
    for shard in _shards(streams, arn):
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )
        if _of_key(_read_all(streams, [iterator["ShardIterator"]])[0], pk):
            return str(shard["ShardId"])
    raise AssertionError(f"no shard has records of {pk}")


def _of_key(records: list[dict[str, Any]], pk: str) -> list[dict[str, Any]]:
    return [r for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == pk]


# --- the table's stream settings --------------------------------------------------------


def test_a_table_created_with_a_stream_names_it_in_every_description(ddb: Any, streams: Any) -> None:
    name = _streamed_table(ddb, "KEYS_ONLY")
    table = ddb.describe_table(TableName=name)["Table"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    label = table["LatestStreamLabel"]
    assert time.strptime(label, "%Y-%m-%dT%H:%M:%S.%f") and len(label) == 23
    assert table["LatestStreamArn"] == f"{table['TableArn']}/stream/{label}"
    listed = streams.list_streams(TableName=name)["Streams"]
    assert listed == [{"StreamArn": table["LatestStreamArn"], "TableName": name, "StreamLabel": label}]
    described = streams.describe_stream(StreamArn=table["LatestStreamArn"])["StreamDescription"]
    assert (described["StreamStatus"], described["StreamViewType"], described["TableName"]) == (
        "ENABLED",
        "KEYS_ONLY",
        name,
    )
    assert described["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert described["Shards"] and all(s["SequenceNumberRange"]["StartingSequenceNumber"].isdecimal()
                                       for s in described["Shards"])  # fmt: skip
    ids = [s["ShardId"] for s in described["Shards"]]
    assert ids == sorted(ids)


def test_a_table_without_a_stream_has_none_listed_or_described(ddb: Any, streams: Any, table_s: str) -> None:
    table = ddb.describe_table(TableName=table_s)["Table"]
    assert "StreamSpecification" not in table and "LatestStreamArn" not in table
    assert streams.list_streams(TableName=table_s)["Streams"] == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"StreamEnabled": True},
            "One or more parameter values were invalid: Table is being created with a stream enabled, "
            "UpdateViewType is required",
        ),
        (
            {"StreamEnabled": False, "StreamViewType": "NEW_IMAGE"},
            "One or more parameter values were invalid: Table is being created with a stream disabled, "
            "UpdateViewType should not be specified",
        ),
    ],
)
def test_create_table_checks_the_stream_specification(ddb: Any, spec: dict[str, Any], message: str) -> None:
    assert (
        validation(
            ddb.create_table,
            TableName=f"streams-bad-{key()[:8]}",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification=spec,
        )
        == message
    )


def test_update_table_enables_and_disables_a_stream_with_dynamodbs_refusals(ddb: Any, streams: Any) -> None:
    name = create_table(ddb, [("pk", "S")], prefix="streams")
    assert validation(ddb.update_table, TableName=name, StreamSpecification={"StreamEnabled": False}) == (
        f"Table has no stream to disable: TableName: {name}"
    )
    answer = ddb.update_table(
        TableName=name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    )["TableDescription"]
    arn = answer["LatestStreamArn"]
    assert answer["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    for view in ("NEW_IMAGE", "KEYS_ONLY"):  # a stream's view type cannot change in place
        assert validation(
            ddb.update_table,
            TableName=name,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": view},
        ) == (f"Table already has an enabled stream: TableName: {name}")
    assert validation(
        ddb.update_table,
        TableName=name,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    ) == (
        "One or more parameter values were invalid: You cannot modify stream status while updating table IOPS"
    )
    pk = key()
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}})
    ddb.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    table = ddb.describe_table(TableName=name)["Table"]
    # A disabled stream: no StreamSpecification, still named, DISABLED, its shards closed.
    assert "StreamSpecification" not in table and table["LatestStreamArn"] == arn
    described = streams.describe_stream(StreamArn=arn)["StreamDescription"]
    assert described["StreamStatus"] == "DISABLED"
    assert all(s["SequenceNumberRange"]["EndingSequenceNumber"].isdecimal() for s in described["Shards"])
    records, following = _read_all(streams, _iterators(streams, arn))
    assert [r["eventName"] for r in _of_key(records, pk)] == ["INSERT"]
    assert following == []  # read to the end: a closed shard gives no NextShardIterator
    assert arn in [s["StreamArn"] for s in streams.list_streams(TableName=name)["Streams"]]


def test_update_table_refuses_a_stream_change_without_a_view_type(ddb: Any, table_s: str) -> None:
    assert validation(ddb.update_table, TableName=table_s, StreamSpecification={"StreamEnabled": True}) == (
        "One or more parameter values were invalid: If stream is being enabled then UpdateViewType is required"
    )
    assert validation(
        ddb.update_table,
        TableName=table_s,
        StreamSpecification={"StreamEnabled": False, "StreamViewType": "NEW_IMAGE"},
    ) == (
        "One or more parameter values were invalid: If stream is being disabled, then UpdateViewType must not be specified"
    )


# --- records ----------------------------------------------------------------------------


@pytest.mark.parametrize("view", VIEW_TYPES)
def test_insert_modify_and_remove_carry_the_images_the_view_type_asks_for(
    ddb: Any, streams: Any, view: str
) -> None:
    name = _streamed_table(ddb, view)
    pk = key()
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "a": {"N": "1"}})
    ddb.update_item(
        TableName=name,
        Key={"pk": {"S": pk}},
        UpdateExpression="SET a = :v",
        ExpressionAttributeValues={":v": {"N": "2"}},
    )
    ddb.delete_item(TableName=name, Key={"pk": {"S": pk}})
    records = _of_key(_events(streams, _arn(ddb, name), 3), pk)
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "REMOVE"]
    first, second, third = (r["dynamodb"] for r in records)
    v1, v2 = {"pk": {"S": pk}, "a": {"N": "1"}}, {"pk": {"S": pk}, "a": {"N": "2"}}
    new = view in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")
    old = view in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES")
    assert (first.get("NewImage"), first.get("OldImage")) == ((v1 if new else None), None)
    assert (second.get("NewImage"), second.get("OldImage")) == ((v2 if new else None), (v1 if old else None))
    assert (third.get("NewImage"), third.get("OldImage")) == (None, (v2 if old else None))
    for r in records:
        assert r["eventSource"] == "aws:dynamodb" and r["awsRegion"] == ddb.meta.region_name
        assert r["dynamodb"]["Keys"] == {"pk": {"S": pk}} and r["dynamodb"]["StreamViewType"] == view
        assert r["dynamodb"]["SizeBytes"] > 0 and "ApproximateCreationDateTime" in r["dynamodb"]
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3


def test_writes_that_change_nothing_leave_no_record(ddb: Any, streams: Any) -> None:
    name = _streamed_table(ddb, schema=[("pk", "S"), ("sk", "N")])
    pk = key()
    item = {"pk": {"S": pk}, "sk": {"N": "1"}, "a": {"S": "x"}}
    ddb.put_item(TableName=name, Item=item)
    ddb.put_item(TableName=name, Item=item)  # identical
    ddb.update_item(
        TableName=name, Key={"pk": {"S": pk}, "sk": {"N": "1"}}, UpdateExpression="SET a = :same",
        ExpressionAttributeValues={":same": {"S": "x"}},
    )  # fmt: skip
    ddb.update_item(TableName=name, Key={"pk": {"S": pk}, "sk": {"N": "1"}}, UpdateExpression="REMOVE absent")
    ddb.update_item(TableName=name, Key={"pk": {"S": pk}, "sk": {"N": "2"}}, UpdateExpression="REMOVE g")
    ddb.delete_item(TableName=name, Key={"pk": {"S": pk}, "sk": {"N": "3"}})
    ddb.batch_write_item(
        RequestItems={name: [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"N": "4"}}}}]}
    )
    ddb.put_item(TableName=name, Item={**item, "a": {"S": "changed"}})  # the one change after the insert
    records = _of_key(_events(streams, _arn(ddb, name), 2), pk)
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY"]
    assert records[1]["dynamodb"]["NewImage"]["a"] == {"S": "changed"}


def test_batch_writes_and_transactions_leave_one_record_per_item(ddb: Any, streams: Any) -> None:
    name = _streamed_table(ddb)
    pks = [key() for _ in range(6)]
    ddb.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": {"pk": {"S": pk}}}} for pk in pks[:3]]})
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": pks[3]}, "v": {"N": "1"}}}},
            {"Update": {"TableName": name, "Key": {"pk": {"S": pks[0]}}, "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"N": "2"}}}},
            {"Delete": {"TableName": name, "Key": {"pk": {"S": pks[1]}}}},
            {"ConditionCheck": {"TableName": name, "Key": {"pk": {"S": pks[2]}},
                                "ConditionExpression": "attribute_exists(pk)"}},
        ]
    )  # fmt: skip
    records = _events(streams, _arn(ddb, name), 6)
    events = {(r["dynamodb"]["Keys"]["pk"]["S"], r["eventName"]) for r in records}
    assert events == {
        (pks[0], "INSERT"), (pks[1], "INSERT"), (pks[2], "INSERT"),
        (pks[3], "INSERT"), (pks[0], "MODIFY"), (pks[1], "REMOVE"),
    }  # fmt: skip
    assert len(records) == 6


# --- iterators --------------------------------------------------------------------------


def test_latest_sees_only_later_writes_and_sequence_numbers_position_iterators(
    ddb: Any, streams: Any
) -> None:
    name = _streamed_table(ddb)
    arn = _arn(ddb, name)
    pk = key()
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "n": {"N": "1"}})
    latest = _iterators(streams, arn, "LATEST")
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "n": {"N": "2"}})
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "n": {"N": "3"}})
    deadline = time.monotonic() + 20
    later: list[dict[str, Any]] = []
    while len(later) < 2 and time.monotonic() < deadline:
        found, latest = _read_all(streams, latest)
        later.extend(found)
    assert [r["dynamodb"]["NewImage"]["n"]["N"] for r in later] == ["2", "3"]
    first, second = (r["dynamodb"]["SequenceNumber"] for r in later)
    assert int(first) < int(second)
    shard = _shard_of(streams, arn, pk)
    at = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="AT_SEQUENCE_NUMBER", SequenceNumber=first
    )["ShardIterator"]
    assert [
        r["dynamodb"]["SequenceNumber"] for r in streams.get_records(ShardIterator=at, Limit=1)["Records"]
    ] == [first]
    after = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=first
    )["ShardIterator"]
    page = streams.get_records(ShardIterator=after)
    assert [r["dynamodb"]["SequenceNumber"] for r in page["Records"]] == [second]
    assert streams.get_records(ShardIterator=page["NextShardIterator"])["Records"] == []


def test_iterator_and_shard_errors_are_dynamodbs(ddb: Any, streams: Any) -> None:
    name = _streamed_table(ddb)
    arn = _arn(ddb, name)
    shard = _shards(streams, arn)[0]["ShardId"]
    code, message = error(streams.describe_stream, StreamArn=arn.replace(name, "nosuchtable1"))
    assert (code, message) == (
        "ResourceNotFoundException",
        f"Requested resource not found: Stream: {arn.replace(name, 'nosuchtable1')} not found",
    )
    assert error(streams.describe_stream, StreamArn="x" * 40)[0] == "ValidationException"
    code, message = error(
        streams.get_shard_iterator, StreamArn=arn, ShardId="shardId-00000000000000000000-00000000",
        ShardIteratorType="TRIM_HORIZON",
    )  # fmt: skip
    assert code == "ResourceNotFoundException" and message.startswith(
        "Requested resource not found: Shard does not exist"
    )
    for kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
        assert error(streams.get_shard_iterator, StreamArn=arn, ShardId=shard, ShardIteratorType=kind)[0] == (
            "ValidationException"
        )
    assert error(
        streams.get_shard_iterator, StreamArn=arn, ShardId=shard, ShardIteratorType="LATEST",
        SequenceNumber="1" * 21,
    )[0] == "ValidationException"  # fmt: skip
    assert error(streams.get_records, ShardIterator="not an iterator")[0] == "ValidationException"
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    assert "imit" in validation(streams.get_records, ShardIterator=iterator, Limit=1001)
    described = streams.describe_stream(
        StreamArn=arn, ExclusiveStartShardId="shardId-99999999999999999999-ffffffff"
    )
    assert described["StreamDescription"]["Shards"] == []


def test_list_streams_pages_by_stream_arn(ddb: Any, streams: Any) -> None:
    names = {_streamed_table(ddb, "KEYS_ONLY") for _ in range(2)}
    seen: list[str] = []
    kwargs: dict[str, Any] = {"Limit": 1}
    for _ in range(1000):
        page = streams.list_streams(**kwargs)
        assert len(page["Streams"]) <= 1
        seen.extend(s["TableName"] for s in page["Streams"])
        if "LastEvaluatedStreamArn" not in page:
            break
        assert page["LastEvaluatedStreamArn"] == page["Streams"][-1]["StreamArn"]
        kwargs["ExclusiveStartStreamArn"] = page["LastEvaluatedStreamArn"]
    assert names <= set(seen) and len(seen) == len(set(seen))
    assert "imit" in validation(streams.list_streams, Limit=101)


def test_a_stream_enabled_again_is_a_new_stream_and_the_old_one_stays_readable(
    ddb: Any, streams: Any
) -> None:
    name = _streamed_table(ddb, "KEYS_ONLY")
    old_arn = _arn(ddb, name)
    pk = key()
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}})
    ddb.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    time.sleep(0.01)  # a new stream's label is its creation time, to the millisecond
    ddb.update_table(
        TableName=name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    )
    new_arn = _arn(ddb, name)
    assert new_arn != old_arn
    listed = {s["StreamArn"] for s in streams.list_streams(TableName=name)["Streams"]}
    assert listed == {old_arn, new_arn}
    old = streams.describe_stream(StreamArn=old_arn)["StreamDescription"]
    assert (old["StreamStatus"], old["StreamViewType"]) == ("DISABLED", "KEYS_ONLY")
    assert [r["eventName"] for r in _of_key(_read_all(streams, _iterators(streams, old_arn))[0], pk)] == [
        "INSERT"
    ]
    assert _read_all(streams, _iterators(streams, new_arn))[0] == []


def test_an_at_timestamp_iterator_starts_at_the_first_record_written_since(ddb: Any, streams: Any) -> None:
    name = _streamed_table(ddb)
    arn = _arn(ddb, name)
    pk = key()
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "n": {"N": "1"}})
    time.sleep(1.1)
    since = time.time()
    ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "n": {"N": "2"}})
    _events(streams, arn, 2)
    shard = _shard_of(streams, arn, pk)
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="AT_TIMESTAMP", Timestamp=since
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    assert [r["dynamodb"]["NewImage"]["n"]["N"] for r in records] == ["2"]
    assert error(streams.get_shard_iterator, StreamArn=arn, ShardId=shard, ShardIteratorType="AT_TIMESTAMP")[
        0
    ] == ("ValidationException")
