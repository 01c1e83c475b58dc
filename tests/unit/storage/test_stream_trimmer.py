"""The stream trimmer on a storage node, and the TTL sweeper's history records: a real
engine and the node's own DataPlane, clocks injected."""

from __future__ import annotations

import base64
import dataclasses
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.api import point_in_time
from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import SECONDS_PER_DAY, PointInTimeRecovery, TableRecord, TimeToLive
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.stream_reads import plan_stream_read
from partita.storage.stream_trimmer import StreamTrimmer
from partita.storage.ttl_sweep import SweepPacer
from partita.storage.ttl_sweeper import TtlSweeper
from tests.unit import records

NODE = "n1"
TABLE_ID = 0x5252
HALF = 2**63
NOW = 1_763_900_000.0
DAY = SECONDS_PER_DAY
RECOVERY = PointInTimeRecovery(True, NOW - 30 * DAY, 2)
HISTORY_MS = point_in_time.history_ms(RECOVERY)


def _record(**changes: Any) -> TableRecord:
    """No stream. Two partitions: p0 led by this node, p1 hosted here but led by n2."""
    record = records.table_record(
        Partition("p0", 0, HALF, (NODE, "n2"), NODE),
        Partition("p1", HALF, 2**64, (NODE, "n2"), "n2"),
        table_id=TABLE_ID,
    )
    return dataclasses.replace(record, point_in_time=RECOVERY, **changes)


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


def _node(engine: Engine, record: TableRecord) -> NodeState:
    state = NodeState(node_id=NODE, zone="a", engine=engine)
    state.hosted = desired_hosting([record], NODE)
    return state


async def _history(engine: Engine, start: int, partition: str, at: float) -> None:
    prefix = keys.stream_shard_prefix(TABLE_ID, start, HISTORY_MS, partition)
    record = {"e": "INSERT", "t": at, "k": {"pk": {"S": "x"}}, "v": "OLD_IMAGE", "s": 1, "r": 2}
    await engine.commit([Effect(Kind.STREAM_RECORD, prefix, orjson.dumps(record))], f"g-{partition}")


def _times(engine: Engine, start: int) -> list[float]:
    body = {"history": {"ms": HISTORY_MS, "since": 0.0, "after": None}}
    request = pb.Request(id=1, op=pb.STREAM_READ, table_id=TABLE_ID, key_hash=start, body=orjson.dumps(body))
    page = orjson.loads(plan_stream_read(engine, request).response.value)
    return sorted(r["t"] for _, _, r in page["changes"])


async def test_a_tables_history_is_trimmed_after_its_period_without_a_stream_and_only_where_led(
    engine: Engine,
) -> None:
    for at in (NOW - 3 * DAY, NOW - 1.5 * DAY, NOW - 0.5 * DAY):
        await _history(engine, 0, "p0", at)
        await _history(engine, HALF, "p1", at)
    trimmer = StreamTrimmer(_node(engine, _record()), DataPlane(_node(engine, _record())), clock=lambda: NOW)
    await trimmer.trim_once()
    assert _times(engine, 0) == [NOW - 1.5 * DAY, NOW - 0.5 * DAY]  # two days kept, not the stream's one
    assert len(_times(engine, HALF)) == 3  # p1's leader trims p1
    assert trimmer.trims == 1


async def test_a_ttl_deletion_is_kept_in_the_history_as_the_services_removal(engine: Engine) -> None:
    record = _record(time_to_live=TimeToLive("ENABLED", "expires", NOW - 10))
    state = _node(engine, record)
    for i in itertools.count():
        pk = f"k{i}".encode()
        h = keys.key_hash("S", pk)
        if h < HALF:  # in p0, led here
            break
    item = {"pk": {"S": pk.decode()}, "expires": {"N": str(int(NOW) - 60)}}
    await engine.commit([Effect(Kind.PUT, keys.item_key(TABLE_ID, h, pk, None), orjson.dumps(item))])
    sweeper = TtlSweeper(state, DataPlane(state), SweepPacer(interval=1.0), clock=lambda: NOW)
    await sweeper.sweep_once()
    assert sweeper.deleted == 1
    prefix = keys.stream_shard_prefix(TABLE_ID, 0, HISTORY_MS, "p0")
    body = {"prefix": base64.b64encode(prefix).decode(), "after": [0, 0], "limit": 10}
    read = orjson.loads(
        plan_stream_read(engine, pb.Request(id=1, op=pb.STREAM_READ, body=orjson.dumps(body))).response.value
    )
    assert [(r[2]["e"], r[2]["o"], r[2].get("u")) for r in read] == [("REMOVE", item, 1)]
