"""DynamoDB Streams' formats (api/streams.py): a write's record, sequence numbers,
labels and ARNs, shard ids (split parents included) and shard iterators."""

from __future__ import annotations

import re

import orjson
import pytest

from partita.api import streams
from partita.common.errors import DynamoError
from partita.common.partition_map import Partition
from partita.control.model import STREAM_RETENTION_SECONDS, KeyElement, StreamSpec, TableRecord

STREAM = {"view": "NEW_AND_OLD_IMAGES", "keys": ["pk"], "at": 1700000000.5, "ms": 1700000000500}
OLD = {"pk": {"S": "k"}, "a": {"N": "1"}}
NEW = {"pk": {"S": "k"}, "a": {"N": "2"}}


def _record(
    old: object, new: object, view: str = "NEW_AND_OLD_IMAGES", **kw: bool
) -> dict[str, object] | None:
    stored = streams.stored_record({**STREAM, "view": view}, old, new, **kw)  # type: ignore[arg-type]
    return None if stored is None else orjson.loads(stored)


def test_a_write_that_changes_nothing_has_no_record() -> None:
    assert _record(OLD, dict(OLD)) is None
    assert _record(None, None) is None


@pytest.mark.parametrize(
    ("old", "new", "event"), [(None, NEW, "INSERT"), (OLD, NEW, "MODIFY"), (OLD, None, "REMOVE")]
)
def test_the_event_name_follows_what_the_item_was_and_became(old: object, new: object, event: str) -> None:
    record = _record(old, new)
    assert record is not None and record["e"] == event and record["k"] == {"pk": {"S": "k"}}


@pytest.mark.parametrize(
    ("view", "images"),
    [("KEYS_ONLY", set()), ("NEW_IMAGE", {"n"}), ("OLD_IMAGE", {"o"}), ("NEW_AND_OLD_IMAGES", {"n", "o"})],
)
def test_a_record_keeps_the_images_its_view_type_asks_for(view: str, images: set[str]) -> None:
    record = _record(OLD, NEW, view)
    assert record is not None and {"n", "o"} & set(record) == images


def test_a_service_delete_is_rendered_with_the_services_identity() -> None:
    stored = _record(OLD, None, service=True)
    assert stored is not None
    rendered = streams.rendered(stored, 7, 1, "shard", "eu-west-1")
    assert rendered["userIdentity"] == {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    assert rendered["eventName"] == "REMOVE" and rendered["awsRegion"] == "eu-west-1"
    assert rendered["dynamodb"]["OldImage"] == OLD and "NewImage" not in rendered["dynamodb"]
    assert rendered["dynamodb"]["ApproximateCreationDateTime"] == 1700000000
    plain = _record(OLD, None)
    assert plain is not None and "userIdentity" not in streams.rendered(plain, 7, 1, "shard", "eu-west-1")


def test_sequence_numbers_are_21_digits_ordered_as_log_positions() -> None:
    positions = [(1, 1), (1, 2), (2, 1), (10**12, 99)]
    numbers = [streams.sequence_number(i, p) for i, p in positions]
    assert all(len(n) == 21 and n.isdecimal() for n in numbers)
    assert [int(n) for n in numbers] == sorted(int(n) for n in numbers)
    assert [streams.parse_sequence_number(n) for n in numbers] == positions
    for malformed in ("12ab", "1" * 26):  # the second longer than any log position
        with pytest.raises(DynamoError) as err:
            streams.parse_sequence_number(malformed)
        assert err.value.code == "ValidationException"


def test_label_arn_and_shard_id_are_dynamodbs_forms() -> None:
    spec = StreamSpec(enabled=True, view_type="KEYS_ONLY", created_at=1700000000.275)
    assert streams.stream_label(spec) == "2023-11-14T22:13:20.275"
    arn = streams.stream_arn("arn:aws:dynamodb:us-east-1:0:table/t", spec)
    assert arn == "arn:aws:dynamodb:us-east-1:0:table/t/stream/2023-11-14T22:13:20.275"
    assert streams.parse_stream_arn(arn) == ("t", "2023-11-14T22:13:20.275")
    assert streams.SHARD_ID.fullmatch(streams.shard_id(spec, "p0"))
    with pytest.raises(DynamoError):
        streams.parse_stream_arn("not-an-arn")


def _table(partitions: tuple[Partition, ...], spec: StreamSpec) -> TableRecord:
    return TableRecord(
        name="t", table_id=9, status="ACTIVE", partition_key=KeyElement("pk", "S"), sort_key=None,
        attribute_definitions=(("pk", "S"),), billing_mode="PAY_PER_REQUEST", read_capacity=0,
        write_capacity=0, created_at=0.0, partitions=partitions, stream=spec,
    )  # fmt: skip


def test_a_split_parent_stays_a_closed_shard_at_its_lower_childs_first_hash() -> None:
    spec = StreamSpec(enabled=True, view_type="KEYS_ONLY", created_at=1.0)
    children = (
        Partition("p0-0", 0, 100, parent="p0", parent_index=5),
        Partition("p0-1", 100, 2**64, parent="p0", parent_index=5),
    )
    shards = {s.partition_id: s for s in streams.shards(_table(children, spec))}
    assert shards["p0"].closed and shards["p0"].start == 0 and shards["p0"].parent_shard_id is None
    assert shards["p0-1"].parent_shard_id == streams.shard_id(spec, "p0") and not shards["p0-1"].closed
    disabled = StreamSpec(enabled=False, view_type="KEYS_ONLY", created_at=1.0, disabled_at=2.0)
    assert all(s.closed for s in streams.shards(_table(children, disabled)))
    assert streams.shards(_table(children, StreamSpec())) == []


def test_an_iterator_round_trips_expires_and_refuses_garbage() -> None:
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/1970-01-01T00:00:01.000"
    iterator = streams.Iterator("t", 9, 1000, "p0", 2**64 - 1, 12, 3, made_at=100.0, stream_arn=arn)
    assert re.fullmatch(re.escape(arn) + r"\|\d\|.+", iterator.encode())  # DynamoDB's shape
    assert streams.parse_iterator(iterator.encode(), 100.0 + streams.ITERATOR_SECONDS) == iterator
    with pytest.raises(DynamoError) as expired:
        streams.parse_iterator(iterator.encode(), 101.0 + streams.ITERATOR_SECONDS)
    assert expired.value.code == "ExpiredIteratorException"
    forged = [
        streams.Iterator("t", 9, 1000, "p" * 300, 0, 1, 1, 100.0),
        streams.Iterator("t", 9, 1000, "p0", 2**64, 1, 1, 100.0),
        streams.Iterator("t", 9, 1000, "p0", 0, -1, 1, 100.0),
        streams.Iterator("t", 9, 1000, "p0", 0, 1, 2**32, 100.0),
    ]
    for garbage in (
        "",
        "abc",
        f"{arn}|1|!!!",
        f"{arn}|1|e30=",
        f"{arn}|2|" + iterator.encode().rsplit("|", 1)[1],
        *(f.encode() for f in forged),
    ):
        with pytest.raises(DynamoError) as err:
            streams.parse_iterator(garbage, 0.0)
        assert err.value.code == "ValidationException"
    assert streams.iterator_table(iterator.encode()) == "t" and streams.iterator_table("abc") is None


def test_a_disabled_stream_stays_readable_for_24_hours() -> None:
    spec = StreamSpec(enabled=False, view_type="KEYS_ONLY", created_at=0.0, disabled_at=10.0)
    assert streams.readable(spec, 10.0 + STREAM_RETENTION_SECONDS - 1)
    assert not streams.readable(spec, 10.0 + STREAM_RETENTION_SECONDS)
    assert not streams.readable(StreamSpec(), 0.0)
