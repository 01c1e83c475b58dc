"""Planning of data requests over a real engine: answers now, or effects to commit."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common import errors
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import PLANNERS, error_response, plan_delete, plan_get, plan_put

RETURN_OLD = orjson.dumps({"return_old": True})


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    await e.commit([Effect(Kind.PUT, b"present", b"old-value")])
    yield e
    await e.close()


def test_get_put_and_delete_have_their_planners() -> None:
    assert (PLANNERS[pb.GET], PLANNERS[pb.PUT], PLANNERS[pb.DELETE]) == (plan_get, plan_put, plan_delete)
    assert pb.OP_UNSPECIFIED not in PLANNERS


async def test_get_of_a_present_key_answers_ok_with_the_value(engine: Engine) -> None:
    plan = plan_get(engine, pb.Request(id=7, op=pb.GET, key=b"present"))
    assert plan.effects is None
    assert plan.response == pb.Response(id=7, status=pb.OK, value=b"old-value", capacity_units=0.5)


async def test_get_of_a_missing_key_answers_not_found(engine: Engine) -> None:
    plan = plan_get(engine, pb.Request(id=8, op=pb.GET, key=b"absent"))
    assert plan.effects is None
    assert plan.response == pb.Response(id=8, status=pb.NOT_FOUND, capacity_units=0.5)


async def test_put_plans_one_put_effect_and_an_empty_ok(engine: Engine) -> None:
    plan = plan_put(engine, pb.Request(id=1, op=pb.PUT, key=b"present", value=b"new"))
    assert plan.effects == [Effect(Kind.PUT, b"present", b"new")]
    assert plan.response == pb.Response(id=1, status=pb.OK, capacity_units=1.0)


async def test_put_with_return_old_answers_the_previous_value(engine: Engine) -> None:
    plan = plan_put(engine, pb.Request(id=2, op=pb.PUT, key=b"present", value=b"new", body=RETURN_OLD))
    assert plan.response.value == b"old-value"
    plan = plan_put(engine, pb.Request(id=3, op=pb.PUT, key=b"absent", value=b"new", body=RETURN_OLD))
    assert plan.response.value == b""
    assert plan.effects == [Effect(Kind.PUT, b"absent", b"new")]


async def test_delete_of_a_present_key_plans_a_delete(engine: Engine) -> None:
    plan = plan_delete(engine, pb.Request(id=4, op=pb.DELETE, key=b"present"))
    assert plan.effects == [Effect(Kind.DELETE, b"present")]
    assert plan.response == pb.Response(id=4, status=pb.OK, capacity_units=1.0)


async def test_delete_with_return_old_answers_the_deleted_value(engine: Engine) -> None:
    plan = plan_delete(engine, pb.Request(id=4, op=pb.DELETE, key=b"present", body=RETURN_OLD))
    assert plan.response.value == b"old-value"


async def test_delete_of_a_missing_key_answers_at_once_without_a_wal_record(engine: Engine) -> None:
    plan = plan_delete(engine, pb.Request(id=5, op=pb.DELETE, key=b"absent", body=RETURN_OLD))
    assert plan.effects is None
    assert plan.response == pb.Response(id=5, status=pb.OK, capacity_units=1.0)


async def test_read_modify_write_plans_see_a_write_still_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e = Engine.open(tmp_path / "node", sync=True)
    entered, go = threading.Event(), threading.Event()
    real = os.fdatasync

    def held(fd: int) -> None:
        entered.set()
        go.wait(10)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", held)
    task = asyncio.create_task(e.commit([Effect(Kind.PUT, b"k", b"pending")]))
    try:
        await asyncio.to_thread(entered.wait, 10)
        delete = plan_delete(e, pb.Request(id=1, op=pb.DELETE, key=b"k", body=RETURN_OLD))
        assert delete.effects == [Effect(Kind.DELETE, b"k")]
        assert delete.response.value == b"pending"
        put = plan_put(e, pb.Request(id=2, op=pb.PUT, key=b"k", value=b"x", body=RETURN_OLD))
        assert put.response.value == b"pending"
        # A plain read reports only what is durable.
        assert plan_get(e, pb.Request(id=3, op=pb.GET, key=b"k")).response.status == pb.NOT_FOUND
    finally:
        go.set()
        await task
    monkeypatch.undo()
    await e.close()


def test_error_response_carries_code_message_and_extra_fields() -> None:
    error = errors.conditional_check_failed({"pk": {"S": "a"}})
    response = error_response(9, error)
    assert response.id == 9
    assert response.status == pb.ERROR
    assert response.error_code == "ConditionalCheckFailedException"
    assert response.error_message == "The conditional request failed"
    assert orjson.loads(response.error_body) == {"Item": {"pk": {"S": "a"}}}


def test_error_response_without_extra_fields_has_an_empty_body() -> None:
    response = error_response(1, errors.validation("bad"))
    assert response.error_code == "ValidationException"
    assert response.error_body == b""
