"""The TTL sweeper on a storage node: a real engine (RocksDB + WAL in tmp_path) and the
node's own DataPlane; wall clock, monotonic clock and sleep are injected, so every
test is deterministic and no test waits."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita.common import keys
from partita.common.partition_map import Partition
from partita.control.model import TableRecord, TimeToLive
from partita.storage import engine as engine_module
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind, decode_effects
from partita.storage.engine import Engine
from partita.storage.group_log import EntryRecord, decode_record, group_of
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.ttl_sweep import CHUNK_ITEMS, DEFAULT_SHARE, SweepPacer
from partita.storage.ttl_sweeper import TtlSweeper
from tests.unit import records

NODE = "n1"
TABLE_ID = 0x5151
HALF = 2**63
NOW = 1_763_900_000.0
PAST = str(int(NOW) - 60)
FUTURE = str(int(NOW) + 3600)


def _record(ttl: TimeToLive) -> TableRecord:
    """Two partitions: p0 led by this node, p1 hosted here but led by another node."""
    record = records.table_record(
        Partition("p0", 0, HALF, (NODE, "n2"), NODE),
        Partition("p1", HALF, 2**64, (NODE, "n2"), "n2"),
        table_id=TABLE_ID,
    )
    return dataclasses.replace(record, time_to_live=ttl)


ON = TimeToLive("ENABLED", "expires", NOW - 10)


class Clocks:
    """A monotonic clock that advances 1 ms per reading, and a sleep that only records."""

    def __init__(self) -> None:
        self.ticks = itertools.count()
        self.rests: list[float] = []

    def monotonic(self) -> float:
        return next(self.ticks) * 0.001

    async def sleep(self, seconds: float) -> None:
        self.rests.append(seconds)


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


def _node(engine: Engine, ttl: TimeToLive = ON) -> NodeState:
    state = NodeState(node_id=NODE, zone="a", engine=engine)
    state.hosted = desired_hosting([_record(ttl)], NODE)
    return state


def _sweeper(state: NodeState, clocks: Clocks, *, share: float = DEFAULT_SHARE) -> TtlSweeper:
    return TtlSweeper(
        state,
        DataPlane(state),
        SweepPacer(interval=1.0, share=share),
        clock=lambda: NOW,
        monotonic=clocks.monotonic,
        sleep=clocks.sleep,
    )


def _key(pk: str) -> tuple[int, bytes]:
    h = keys.key_hash("S", pk.encode())
    return h, keys.item_key(TABLE_ID, h, pk.encode(), None)


def _item(pk: str, ttl: dict[str, Any] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"pk": {"S": pk}, "payload": {"S": "x"}}
    if ttl is not None:
        item["expires"] = ttl
    return item


async def _put(engine: Engine, pk: str, ttl: dict[str, Any] | None) -> None:
    await engine.commit([Effect(Kind.PUT, _key(pk)[1], orjson.dumps(_item(pk, ttl)))])


def _present(engine: Engine, pk: str) -> bool:
    return engine.get(_key(pk)[1]) is not None


def _led_keys(prefix: str, count: int, *, led: bool = True) -> list[str]:
    """`count` partition keys whose hash falls in p0 (led here) or in p1 (led elsewhere)."""
    out = []
    for i in itertools.count():
        pk = f"{prefix}-{i}"
        if (_key(pk)[0] < HALF) is led:
            out.append(pk)
            if len(out) == count:
                return out
    raise AssertionError("unreachable")


async def test_a_pass_deletes_expired_items_and_keeps_every_other_kind(engine: Engine) -> None:
    expired = _led_keys("old", 5)
    kept = dict(
        zip(
            _led_keys("keep", 5),
            [None, {"N": FUTURE}, {"S": PAST}, {"NS": [PAST]}, {"N": str(int(NOW) - 6 * 365 * 86400)}],
            strict=True,
        )
    )
    for pk in expired:
        await _put(engine, pk, {"N": PAST})
    for pk, ttl in kept.items():
        await _put(engine, pk, ttl)
    sweeper = _sweeper(_node(engine), Clocks())
    await sweeper.sweep_once()
    assert [pk for pk in expired if _present(engine, pk)] == []
    assert [pk for pk in kept if not _present(engine, pk)] == []
    assert (sweeper.deleted, sweeper.skipped, sweeper.passes) == (5, 0, 1)


async def test_only_the_partitions_this_node_leads_are_swept(engine: Engine) -> None:
    (here,) = _led_keys("here", 1)
    (elsewhere,) = _led_keys("elsewhere", 1, led=False)
    await _put(engine, here, {"N": PAST})
    await _put(engine, elsewhere, {"N": PAST})
    await _sweeper(_node(engine), Clocks()).sweep_once()
    assert (_present(engine, here), _present(engine, elsewhere)) == (False, True)


@pytest.mark.parametrize("ttl", [TimeToLive(), TimeToLive("DISABLED", None, NOW - 10)])
async def test_nothing_is_deleted_while_ttl_is_off(engine: Engine, ttl: TimeToLive) -> None:
    (pk,) = _led_keys("off", 1)
    await _put(engine, pk, {"N": PAST})
    sweeper = _sweeper(_node(engine, ttl), Clocks())
    await sweeper.sweep_once()
    assert _present(engine, pk) and sweeper.deleted == 0


async def test_a_concurrent_write_extending_the_ttl_wins_over_the_sweeper(engine: Engine) -> None:
    """The client's write is planned and staged (waiting for its fsync) when the sweeper
    runs: the scan still sees the expired committed item, the conditional delete sees
    the extension and does nothing."""
    (pk,) = _led_keys("extended", 1)
    (gone,) = _led_keys("deleted-by-client", 1)
    await _put(engine, pk, {"N": PAST})
    await _put(engine, gone, {"N": PAST})
    extension = [Effect(Kind.PUT, _key(pk)[1], orjson.dumps(_item(pk, {"N": FUTURE})))]
    client_delete = [Effect(Kind.DELETE, _key(gone)[1])]
    engine.stage(extension)
    engine.stage(client_delete)
    sweeper = _sweeper(_node(engine), Clocks())
    await sweeper.sweep_once()
    await engine.commit_staged([extension, client_delete])
    stored = engine.get(_key(pk)[1])
    assert stored is not None and orjson.loads(stored)["expires"] == {"N": FUTURE}
    assert (sweeper.deleted, sweeper.skipped) == (0, 2)


async def test_expiry_deletes_are_logged_as_service_deletes(engine: Engine) -> None:
    (pk,) = _led_keys("logged", 1)
    await _put(engine, pk, {"N": PAST})
    first_sweep_lsn = engine.applied_lsn + 1
    await _sweeper(_node(engine), Clocks()).sweep_once()
    records = [decode_record(payload) for _, payload in engine._wal.replay(first_sweep_lsn - 1)]
    assert all(isinstance(r, EntryRecord) and r.group == group_of(TABLE_ID, "p0") for r in records)
    logged = [e for r in records if isinstance(r, EntryRecord) for e in decode_effects(r.entry.data)]
    assert logged == [Effect(Kind.SERVICE_DELETE, _key(pk)[1])]


async def test_a_partition_is_swept_in_chunks_with_rests_that_bound_the_share_of_time(engine: Engine) -> None:
    pks = _led_keys("many", 3 * CHUNK_ITEMS + 10)
    for i, pk in enumerate(pks):
        await _put(engine, pk, {"N": PAST if i % 2 else FUTURE})
    clocks = Clocks()
    sweeper = _sweeper(_node(engine), clocks, share=0.1)
    await sweeper.sweep_once()
    assert sweeper.deleted == len(pks) // 2
    assert len(clocks.rests) == 4  # four chunks of at most CHUNK_ITEMS items, a rest after each
    assert sweeper.pacer.work_seconds > 0
    assert sum(clocks.rests) == pytest.approx(sweeper.pacer.work_seconds * 9)  # 10% share: rest 9x the work


async def test_a_sweep_stops_when_ttl_is_turned_off_between_chunks(engine: Engine) -> None:
    pks = _led_keys("stop", 2 * CHUNK_ITEMS + 1)
    for pk in pks:
        await _put(engine, pk, {"N": PAST})
    state = _node(engine)
    clocks = Clocks()

    async def turn_off_after_first_chunk(seconds: float) -> None:
        clocks.rests.append(seconds)
        state.hosted = desired_hosting([_record(TimeToLive("DISABLED", None, NOW))], NODE)

    sweeper = _sweeper(state, clocks)
    sweeper.sleep = turn_off_after_first_chunk
    await sweeper.sweep_once()
    assert len(clocks.rests) == 1
    assert 0 < sweeper.deleted <= CHUNK_ITEMS
    assert sum(_present(engine, pk) for pk in pks) == len(pks) - sweeper.deleted


async def test_a_service_delete_is_replayed_from_the_wal_after_a_crash(tmp_path: Path) -> None:
    """The sweeper's delete is acknowledged once in the WAL: if RocksDB lost it, the
    replay at start-up deletes the item again."""
    directory = tmp_path / "node"
    engine = Engine.open(directory, sync=False)
    (pk,) = _led_keys("crash", 1)
    await _put(engine, pk, {"N": PAST})
    stored = engine.get(_key(pk)[1])
    put_lsn = engine.applied_lsn
    sweeper = _sweeper(_node(engine), Clocks())
    await sweeper.sweep_once()
    assert sweeper.deleted == 1
    await engine._wal.close()
    # Undo in RocksDB what the delete did, as a crash before RocksDB persisted it would.
    engine._db.put(engine_module.APPLIED_LSN_KEY, engine_module._LSN.pack(put_lsn))
    engine._db.delete(engine_module.APPLIED_INDEX_PREFIX + group_of(TABLE_ID, "p0").encode())
    engine._db.put(_key(pk)[1], stored)
    engine._db.close()
    engine = Engine.open(directory, sync=False)
    try:
        assert engine.get(_key(pk)[1]) is None
        assert engine.applied_lsn == put_lsn + 1
    finally:
        await engine.close()
