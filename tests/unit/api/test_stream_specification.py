"""What CreateTable's and UpdateTable's StreamSpecification make of a table's stream."""

from __future__ import annotations

import pytest

from partita.api.operations import stream_specification
from partita.common.errors import DynamoError
from partita.control.model import STREAM_RETENTION_SECONDS, StreamSpec

ON = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
OFF = {"StreamEnabled": False}


def test_a_created_stream_is_named_by_its_creation_time() -> None:
    assert stream_specification.on_create(ON, 5.0) == StreamSpec(True, "NEW_IMAGE", 5.0)
    assert stream_specification.on_create(OFF, 5.0) == StreamSpec()
    assert stream_specification.on_create(None, 5.0) == StreamSpec()


def test_enabling_again_keeps_the_disabled_streams_for_their_24_hours() -> None:
    first = stream_specification.on_update(StreamSpec(), ON, "t", 10.0)
    off = stream_specification.on_update(first, OFF, "t", 20.0)
    assert (off.enabled, off.created_at, off.disabled_at) == (False, 10.0, 20.0)
    second = stream_specification.on_update(off, ON, "t", 30.0)
    assert second.created_at == 30.0 and second.earlier == (StreamSpec(False, "NEW_IMAGE", 10.0, 20.0),)
    third = stream_specification.on_update(
        stream_specification.on_update(second, OFF, "t", 40.0), ON, "t", 20.0 + STREAM_RETENTION_SECONDS
    )
    assert [s.created_at for s in third.earlier] == [30.0]  # the first is past its 24 hours


@pytest.mark.parametrize(
    ("current", "spec", "message"),
    [
        (StreamSpec(True, "NEW_IMAGE", 1.0), ON, "Table already has an enabled stream: TableName: t"),
        (StreamSpec(), OFF, "Table has no stream to disable: TableName: t"),
        (StreamSpec(False, "NEW_IMAGE", 1.0, 2.0), OFF, "Table has no stream to disable: TableName: t"),
    ],
)
def test_update_refuses_what_dynamodb_refuses(
    current: StreamSpec, spec: dict[str, object], message: str
) -> None:
    with pytest.raises(DynamoError) as err:
        stream_specification.on_update(current, spec, "t", 3.0)
    assert (err.value.code, err.value.message) == ("ValidationException", message)
