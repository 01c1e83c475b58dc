"""The P2 planners over a real engine: conditions, updates, projections, range pages."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.api.values import item_size, sizes
from partita.common import keys
from partita.common.framing import encode_frame
from partita.common.partition_map import Partition
from partita.control.model import KeyElement, TableRecord
from partita.storage.data_server import DataPlane, DataProtocol
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.operations import (
    PLANNERS,
    Plan,
    plan_delete,
    plan_get,
    plan_put,
    plan_range,
    plan_update,
)

TABLE_ID = 0x51
PK = b"pk-1"
H = keys.key_hash("S", PK)


def skey(sk: int) -> bytes:
    return keys.item_key(TABLE_ID, H, PK, keys.encode_sort_key({"N": str(sk)}, "N"))


def item(sk: int, **attrs: Any) -> dict[str, Any]:
    return {"pk": {"S": "pk-1"}, "sk": {"N": str(sk)}, **attrs}


def request(op: int, key: bytes = b"", body: dict[str, Any] | None = None, value: bytes = b"") -> pb.Request:
    return pb.Request(id=1, op=op, key=key, value=value, body=orjson.dumps(body) if body else b"")  # type: ignore[arg-type]


def error_of(plan: Plan) -> tuple[str, str, dict[str, Any]]:
    r = plan.response
    assert r.status == pb.ERROR
    return r.error_code, r.error_message, orjson.loads(r.error_body) if r.error_body else {}


async def apply(engine: Engine, plan: Plan) -> None:
    assert plan.effects
    await engine.commit(plan.effects)


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    await e.commit(
        [Effect(Kind.PUT, skey(i), orjson.dumps(item(i, v={"N": str(i * 10)}))) for i in range(10)]
    )
    yield e
    await e.close()


def planned(planner: Any, engine: Engine, req: pb.Request) -> Plan:
    """Run a planner the way the data plane does: a DynamoError becomes an ERROR answer."""
    from partita.common.errors import DynamoError
    from partita.storage.operations import error_response

    try:
        result: Plan = planner(engine, req)
        return result
    except DynamoError as exc:
        return Plan(error_response(req.id, exc))


def test_every_p2_operation_has_a_planner() -> None:
    assert (PLANNERS[pb.UPDATE], PLANNERS[pb.QUERY], PLANNERS[pb.SCAN]) == (
        plan_update,
        plan_range,
        plan_range,
    )


# --- conditions on point writes ----------------------------------------------------------


async def test_a_put_whose_condition_fails_plans_no_effect_and_can_return_the_old_item(
    engine: Engine,
) -> None:
    body = {"condition": "attribute_not_exists(pk)", "return_old_on_failure": True}
    plan = planned(plan_put, engine, request(pb.PUT, skey(1), body, orjson.dumps(item(1))))
    assert plan.effects is None
    code, message, extra = error_of(plan)
    assert (code, message) == ("ConditionalCheckFailedException", "The conditional request failed")
    assert extra == {"Item": item(1, v={"N": "10"})}


async def test_a_put_whose_condition_holds_plans_the_write(engine: Engine) -> None:
    body = {"condition": "v = :ten", "values": {":ten": {"N": "10"}}}
    plan = planned(plan_put, engine, request(pb.PUT, skey(1), body, b"new"))
    assert plan.effects == [Effect(Kind.PUT, skey(1), b"new")]


async def test_put_capacity_bytes_are_the_larger_of_old_and_new(engine: Engine) -> None:
    old_size = len("pk") + 4 + len("sk") + 2 + len("v") + 2  # "pk-1", 1 -> 2 bytes, 10 -> 2 bytes
    plan = planned(plan_put, engine, request(pb.PUT, skey(1), {"capacity": True, "size": 3}, b"x"))
    assert plan.response.capacity_bytes == old_size
    plan = planned(plan_put, engine, request(pb.PUT, skey(1), {"capacity": True, "size": 5000}, b"x"))
    assert plan.response.capacity_bytes == 5000


async def test_a_conditional_delete_of_a_missing_item_evaluates_against_no_item(engine: Engine) -> None:
    plan = planned(
        plan_delete, engine, request(pb.DELETE, skey(99), {"condition": "attribute_not_exists(pk)"})
    )
    assert plan.response.status == pb.OK and plan.effects is None
    plan = planned(plan_delete, engine, request(pb.DELETE, skey(99), {"condition": "attribute_exists(pk)"}))
    assert error_of(plan)[0] == "ConditionalCheckFailedException"


# --- GET with projection and capacity --------------------------------------------------------


async def test_get_projects_on_the_node_and_charges_the_whole_item(engine: Engine) -> None:
    plan = planned(plan_get, engine, request(pb.GET, skey(2), {"projection": "v", "capacity": True}))
    assert orjson.loads(plan.response.value) == {"v": {"N": "20"}}
    assert plan.response.capacity_bytes == 2 + 4 + 2 + 2 + 1 + 2


# --- UPDATE -----------------------------------------------------------------------------------


async def test_an_update_is_applied_to_the_latest_item_and_returns_updated_new(engine: Engine) -> None:
    body = {
        "update": "SET v = v + :one",
        "values": {":one": {"N": "1"}},
        "return": "UPDATED_NEW",
        "key": item(3),
    }
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(3), body))
    assert orjson.loads(plan.response.value) == {"v": {"N": "31"}}
    await apply(engine, plan)
    assert orjson.loads(engine.get(skey(3)) or b"") == item(3, v={"N": "31"})


async def test_an_update_of_a_missing_item_starts_from_its_key(engine: Engine) -> None:
    body = {"update": "SET a = :a", "values": {":a": {"S": "x"}}, "return": "ALL_NEW", "key": item(50)}
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(50), body))
    assert orjson.loads(plan.response.value) == item(50, a={"S": "x"})


@pytest.mark.parametrize(
    "body",
    [
        {"update": "REMOVE a"},
        {"update": "DELETE s :s", "values": {":s": {"SS": ["x"]}}},
        {"update": "REMOVE a DELETE s :s", "values": {":s": {"SS": ["x"]}}},
    ],
)
async def test_a_remove_only_update_of_a_missing_item_writes_nothing(
    engine: Engine, body: dict[str, Any]
) -> None:
    full = {**body, "return": "ALL_NEW", "key": item(51), "capacity": True}
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(51), full))
    assert plan.response.status == pb.OK
    assert plan.effects is None  # no write at all: the item stays missing
    assert plan.response.value == b""  # ALL_NEW of no item: no Attributes
    assert engine.get(skey(51)) is None


async def test_a_remove_only_update_of_an_existing_item_is_written(engine: Engine) -> None:
    body = {"update": "REMOVE v", "return": "ALL_NEW", "key": item(3)}
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(3), body))
    assert plan.effects and orjson.loads(plan.response.value) == item(3)


async def test_updated_old_of_a_new_attribute_returns_nothing(engine: Engine) -> None:
    body = {"update": "SET fresh = :a", "values": {":a": {"S": "x"}}, "return": "UPDATED_OLD", "key": item(4)}
    assert planned(plan_update, engine, request(pb.UPDATE, skey(4), body)).response.value == b""


async def test_a_failed_update_condition_writes_nothing(engine: Engine) -> None:
    body = {"update": "SET v = :x", "condition": "v = :x", "values": {":x": {"N": "7"}}, "key": item(5)}
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(5), body))
    assert plan.effects is None and error_of(plan)[0] == "ConditionalCheckFailedException"


async def test_an_update_growing_the_item_past_400_kb_is_refused(engine: Engine) -> None:
    body = {"update": "SET big = :b", "values": {":b": {"S": "x" * 410_000}}, "key": item(6)}
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(6), body))
    assert error_of(plan)[:2] == (
        "ValidationException",
        "Item size to update has exceeded the maximum allowed size",
    )


async def test_a_legacy_add_of_the_wrong_type_keeps_the_legacy_message(engine: Engine) -> None:
    body = {
        "update": "ADD #a :n",
        "names": {"#a": "pk"},
        "values": {":n": {"N": "1"}},
        "key": item(7),
        "legacy": True,
    }
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(7), body))
    assert error_of(plan)[:2] == ("ValidationException", "Type mismatch for attribute to update")
    del body["legacy"]
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(7), body))
    assert error_of(plan)[1] == "An operand in the update expression has an incorrect data type"


async def test_update_sees_a_write_that_is_still_being_made_durable(engine: Engine) -> None:
    first = planned(
        plan_update,
        engine,
        request(pb.UPDATE, skey(8), {"update": "ADD n :one", "values": {":one": {"N": "1"}}, "key": item(8)}),
    )
    commit = asyncio.get_running_loop().create_task(engine.commit(first.effects or []))
    await asyncio.sleep(0)  # the commit marked its write pending and awaits the WAL
    second = planned(
        plan_update,
        engine,
        request(
            pb.UPDATE,
            skey(8),
            {"update": "ADD n :one", "values": {":one": {"N": "1"}}, "key": item(8), "return": "ALL_NEW"},
        ),
    )
    await commit
    assert orjson.loads(second.response.value)["n"] == {"N": "2"}


async def test_update_capacity_bytes_are_the_larger_of_old_and_new(engine: Engine) -> None:
    body = {"update": "REMOVE v", "key": item(9), "capacity": True}
    plan = planned(plan_update, engine, request(pb.UPDATE, skey(9), body))
    assert plan.response.capacity_bytes == 2 + 4 + 2 + 2 + 1 + 2


# --- range pages ------------------------------------------------------------------------------


def range_body(lo: bytes, hi: bytes, **options: Any) -> dict[str, Any]:
    return {
        "lo": base64.b64encode(lo).decode(),
        "hi": base64.b64encode(hi).decode(),
        "key_names": ["pk", "sk"],
        **options,
    }


def page(plan: Plan) -> tuple[list[int], dict[str, Any]]:
    items = orjson.loads(plan.response.value)
    return [int(i["sk"]["N"]) for i in items if "sk" in i], orjson.loads(plan.response.body)


async def test_a_range_page_reads_in_key_order_and_reverse(engine: Engine) -> None:
    lo, hi = keys.item_collection_bounds(TABLE_ID, H, PK)
    sks, summary = page(plan_range(engine, request(pb.QUERY, body=range_body(lo, hi))))
    assert sks == list(range(10)) and summary == {
        "count": 10,
        "scanned": 10,
        "last": None,
        "page_bytes": sum(sizes(item(i, v={"N": str(i * 10)}), "sk")[1] for i in range(10)),
    }
    sks, _ = page(plan_range(engine, request(pb.QUERY, body=range_body(lo, hi, reverse=True))))
    assert sks == list(range(9, -1, -1))


async def test_the_limit_counts_items_before_the_filter_and_sets_the_last_key(engine: Engine) -> None:
    lo, hi = keys.item_collection_bounds(TABLE_ID, H, PK)
    body = range_body(lo, hi, limit=4, filter="v > :x", values={":x": {"N": "15"}})
    sks, summary = page(plan_range(engine, request(pb.QUERY, body=body)))
    assert sks == [2, 3]
    assert summary["count"] == 2 and summary["scanned"] == 4
    assert summary["last"] == {"pk": {"S": "pk-1"}, "sk": {"N": "3"}}


async def test_the_budget_stops_the_page_after_the_item_that_crosses_it(engine: Engine) -> None:
    lo, hi = keys.item_collection_bounds(TABLE_ID, H, PK)
    stored = [item(i, v={"N": str(i * 10)}) for i in range(4)]
    # The budget counts each item's page size, not its size: 0..2 stay under it, 3 crosses.
    budget = sum(sizes(i, "sk")[1] for i in stored) - 1
    plan = plan_range(engine, request(pb.QUERY, body=range_body(lo, hi, budget=budget)))
    sks, summary = page(plan)
    assert sks == [0, 1, 2, 3]
    assert summary["last"] == {"pk": {"S": "pk-1"}, "sk": {"N": "3"}}
    assert summary["page_bytes"] == budget + 1
    assert plan.response.capacity_bytes == sum(item_size(i) for i in stored)


async def test_count_only_returns_no_items_and_projection_shapes_them(engine: Engine) -> None:
    lo, hi = keys.item_collection_bounds(TABLE_ID, H, PK)
    plan = plan_range(engine, request(pb.QUERY, body=range_body(lo, hi, count_only=True)))
    assert plan.response.value == b"[]" and orjson.loads(plan.response.body)["count"] == 10
    plan = plan_range(engine, request(pb.QUERY, body=range_body(lo, hi, projection="v", limit=2)))
    assert orjson.loads(plan.response.value) == [{"v": {"N": "0"}}, {"v": {"N": "10"}}]


async def test_a_scan_range_covers_a_hash_slice(engine: Engine) -> None:
    lo, hi = keys.hash_range_bounds(TABLE_ID, 0, keys.HASH_SPACE)
    sks, _ = page(plan_range(engine, request(pb.SCAN, body=range_body(lo, hi))))
    assert sks == list(range(10))
    # Every test item has hash H: the slice [0, H) holds none of them, [H, H+1) all.
    lo, hi = keys.hash_range_bounds(TABLE_ID, 0, H)
    assert page(plan_range(engine, request(pb.SCAN, body=range_body(lo, hi))))[0] == []
    lo, hi = keys.hash_range_bounds(TABLE_ID, H, H + 1)
    assert page(plan_range(engine, request(pb.SCAN, body=range_body(lo, hi))))[0] == list(range(10))


# --- the data path: two read-modify-writes in one request batch ----------------------------------


def _record() -> TableRecord:
    return TableRecord(
        name="counters", table_id=TABLE_ID, status="ACTIVE", partition_key=KeyElement("pk", "S"),
        sort_key=KeyElement("sk", "N"), attribute_definitions=(("pk", "S"), ("sk", "N")),
        billing_mode="PAY_PER_REQUEST", read_capacity=0, write_capacity=0, created_at=0.0,
        partitions=(Partition("p0", 0, keys.HASH_SPACE, ("n1",), "n1"),),
    )  # fmt: skip


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        pass


# Each plan stages its effects before the next request of the same frame is planned.
async def test_two_increments_in_one_request_batch_both_count(engine: Engine) -> None:
    state = NodeState("n1", "a", engine, hosted=desired_hosting([_record()], "n1"))
    protocol = DataProtocol(DataPlane(state))
    protocol.connection_made(_Transport())  # type: ignore[arg-type]
    body = orjson.dumps({"update": "ADD n :one", "values": {":one": {"N": "1"}}, "key": item(20)})
    bump = [
        pb.Request(
            id=i, op=pb.UPDATE, table_id=TABLE_ID, partition_id="p0", key_hash=H, key=skey(20), body=body
        )
        for i in (1, 2)
    ]
    protocol.data_received(encode_frame(pb.RequestBatch(requests=bump).SerializeToString()))
    for _ in range(50):
        await asyncio.sleep(0.01)
        if engine.get(skey(20)) is not None and not engine._pending:
            break
    assert orjson.loads(engine.get(skey(20)) or b"{}")["n"] == {"N": "2"}
