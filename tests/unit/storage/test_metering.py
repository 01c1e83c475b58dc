"""Always-on metering: every storage response carries the capacity units it consumed,
exactly as DynamoDB charges them, whether or not the client asked, and the node adds
them up per partition for its metrics."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.api import capacity
from partita.api.values import Item, item_size
from partita.common import keys
from partita.storage import metrics as storage_metrics
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.operations import plan_delete, plan_get, plan_put, plan_range, plan_update
from tests.unit import records

TABLE_ID = 0x5151_5151
HASH = 12345


def key(name: str) -> bytes:
    return keys.item_key(TABLE_ID, HASH, name.encode(), None)


def item_of(name: str, payload_bytes: int) -> Item:
    return {"pk": {"S": name}, "data": {"S": "x" * payload_bytes}}


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    for name, size in (("small", 100), ("large", 9000), ("kb", 3000)):
        await e.commit([Effect(Kind.PUT, key(name), orjson.dumps(item_of(name, size)))])
    yield e
    await e.close()


def get(name: str, consistent: bool = False, body: bytes = b"") -> pb.Request:
    return pb.Request(op=pb.GET, key=key(name), key_hash=HASH, consistent=consistent, body=body)


@pytest.mark.parametrize(
    ("name", "consistent", "units"),
    [
        ("small", False, 0.5),
        ("small", True, 1.0),
        ("large", True, 3.0),  # 9000+ bytes: three started 4 KB units
        ("large", False, 1.5),
        ("missing", True, 1.0),  # a read of nothing still costs the minimum
        ("missing", False, 0.5),
    ],
)
async def test_a_plain_get_carries_its_read_units(
    engine: Engine, name: str, consistent: bool, units: float
) -> None:
    response = plan_get(engine, get(name, consistent)).response
    assert response.capacity_units == units


async def test_metered_units_equal_those_computed_from_the_exact_item_size(engine: Engine) -> None:
    for name, size in (("small", 100), ("large", 9000), ("kb", 3000)):
        exact = item_size(item_of(name, size))
        for consistent in (False, True):
            plain = plan_get(engine, get(name, consistent)).response.capacity_units
            asked = plan_get(engine, get(name, consistent, orjson.dumps({"capacity": True}))).response
            assert plain == asked.capacity_units == capacity.read_units(exact, consistent)
            assert asked.capacity_bytes == exact


async def test_stored_json_is_never_smaller_than_the_dynamodb_size() -> None:
    # The bound the metering's fast path relies on, over every attribute type.
    items: list[Item] = [
        {"a": {"N": "12345678901234567890"}, "b": {"BOOL": True}, "c": {"NULL": True}},
        {"é": {"S": "ünïcødé"}, "m": {"M": {"k": {"L": [{"N": "1"}, {"S": ""}]}}}},
        {"b": {"B": base64.b64encode(b"\x00" * 50).decode()}, "ss": {"SS": ["a", "b"]}},
        {"ns": {"NS": ["1", "-2.5"]}, "bs": {"BS": [base64.b64encode(b"xy").decode()]}},
        {"s": {"S": 'line\nbreak\t"quoted"'}},
    ]
    for item in items:
        assert len(orjson.dumps(item)) >= item_size(item)


async def test_puts_charge_the_larger_of_the_old_and_new_item_per_kb(engine: Engine) -> None:
    def put(name: str, size: int) -> float:
        item = item_of(name, size)
        request = pb.Request(
            op=pb.PUT, key=key(name), key_hash=HASH, value=orjson.dumps(item), item_size=item_size(item)
        )
        return plan_put(engine, request).response.capacity_units

    assert put("new", 10) == 1.0
    assert put("new2", 2500) == 3.0
    assert put("large", 10) == 9.0  # the old item (9000+ bytes) decides
    assert put("small", 10) == 1.0


async def test_deletes_and_updates_charge_write_units(engine: Engine) -> None:
    assert plan_delete(engine, pb.Request(op=pb.DELETE, key=key("large"))).response.capacity_units == 9.0
    assert plan_delete(engine, pb.Request(op=pb.DELETE, key=key("gone"))).response.capacity_units == 1.0
    body = orjson.dumps({"update": "SET extra = :v", "values": {":v": {"S": "y" * 1500}}})
    update = plan_update(engine, pb.Request(op=pb.UPDATE, key=key("small"), body=body)).response
    assert update.capacity_units == 2.0  # the new item: 1500+ bytes


async def test_a_range_read_charges_its_summed_size_rounded_once(engine: Engine) -> None:
    lo, hi = keys.table_bounds(TABLE_ID)
    body = orjson.dumps({"lo": base64.b64encode(lo).decode(), "hi": base64.b64encode(hi).decode()})
    response = plan_range(engine, pb.Request(op=pb.SCAN, body=body, consistent=True)).response
    assert response.capacity_units == capacity.range_read_units(response.capacity_bytes, True)
    # 12,130 bytes in all: 3 units, where rounding each item would charge 1 + 3 + 1.
    assert response.capacity_units == 3.0


async def test_the_data_plane_adds_units_up_per_partition_including_failed_conditions(engine: Engine) -> None:
    record = records.table_record(name="metered", table_id=TABLE_ID)
    state = NodeState(node_id="a", zone="a", engine=engine, hosted=desired_hosting([record], "a"))
    plane = DataPlane(state)
    read_before = storage_metrics.CONSUMED_READ.value("metered", "p0")
    write_before = storage_metrics.CONSUMED_WRITE.value("metered", "p0")

    def routed(request: pb.Request) -> pb.Request:
        request.table_id, request.partition_id = TABLE_ID, "p0"
        return request

    plane.plan(routed(get("large", consistent=True)))  # 3 RCU
    plane.plan(routed(get("small")))  # 0.5 RCU
    failed = routed(
        pb.Request(
            op=pb.PUT,
            key=key("small"),
            key_hash=HASH,
            value=b"{}",
            body=orjson.dumps({"condition": "attribute_not_exists(pk)"}),
        )
    )
    response = plane.plan(failed).response
    assert response.error_code == "ConditionalCheckFailedException"
    assert response.capacity_units == 1.0
    assert storage_metrics.CONSUMED_READ.value("metered", "p0") - read_before == 3.5
    assert storage_metrics.CONSUMED_WRITE.value("metered", "p0") - write_before == 1.0
    # A request for a partition the node does not host is refused and not metered.
    stray = pb.Request(op=pb.GET, key=key("small"), key_hash=HASH, table_id=999, partition_id="p0")
    assert plane.plan(stray).response.status == pb.WRONG_PARTITION


def test_a_dropped_table_leaves_the_consumption_families_and_starts_afresh() -> None:
    meter = storage_metrics.meter_of(4242, "dropped", "p0")
    meter.read.value += 5
    assert storage_metrics.CONSUMED_READ.value("dropped", "p0") == 5
    storage_metrics.forget_table(4242, "dropped")
    assert storage_metrics.CONSUMED_READ.value("dropped", "p0") == 0
    again = storage_metrics.meter_of(4242, "dropped", "p0")
    assert again is not meter
    again.read.value += 1
    assert storage_metrics.CONSUMED_READ.value("dropped", "p0") == 1
