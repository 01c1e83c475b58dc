"""Partition and node admission at a storage node, in virtual time: a partition is held
to its share of the table's rate, bursts from its savings only while the node has spare
capacity, and the node's own bucket refuses first when the node is saturated; through
the real data plane a refused request answers ProvisionedThroughputExceededException
with a key-range reason, without touching the engine."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common import keys
from partita.common.partition_map import Partition
from partita.storage import metrics as storage_metrics
from partita.storage.admission import PARTITION_MAX_UNITS, Refusal, StorageAdmission, partition_rate
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from tests.unit import records

TWO = (Partition("p0", 0, 2**63, ("a",), "a"), Partition("p1", 2**63, 2**64, ("a",), "a"))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def provisioned(wcu: int, rcu: int = 10, name: str = "hot", table_id: int = 9) -> records.TableRecord:
    return records.table_record(
        *TWO, name=name, table_id=table_id, billing_mode="PROVISIONED", read_capacity=rcu, write_capacity=wcu
    )


@pytest.mark.parametrize(
    ("billing", "wcu", "partitions", "expected"),
    [
        ("PROVISIONED", 100, 2, 50.0),  # the table's rate over its partitions
        ("PROVISIONED", 5000, 2, 1000.0),  # never above DynamoDB's per-partition ceiling
        ("PAY_PER_REQUEST", 0, 2, PARTITION_MAX_UNITS["write"]),
    ],
)
def test_partition_rate(billing: str, wcu: int, partitions: int, expected: float) -> None:
    record = records.table_record(*TWO[:partitions], billing_mode=billing, write_capacity=wcu)  # type: ignore[arg-type]
    assert partition_rate(record, "write") == expected


def offer(
    admission: StorageAdmission,
    record: records.TableRecord,
    partition: str,
    *,
    seconds: float,
    per_second: int,
    start: float,
) -> tuple[int, dict[Refusal, int]]:
    admitted, refused = 0, {Refusal.NODE: 0, Refusal.PARTITION: 0}
    now = start
    for _ in range(int(seconds * per_second)):
        now += 1.0 / per_second
        refusal = admission.check(record, partition, "write", now)
        if refusal is None:
            admission.charge(record, partition, "write", 1.0, now)
            admitted += 1
        else:
            refused[refusal] += 1
    return admitted, refused


def test_a_hot_partition_is_held_to_its_share_without_savings() -> None:
    # Bursting alone: adaptive capacity (which would boost this partition, its table
    # being under its rate) is off here and tested below.
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 20.0}, adaptive_capacity=False)
    record = provisioned(wcu=20)  # 10 WCU per partition
    # The node's spare capacity is used up by the partition itself once it runs hot:
    admitted, refused = offer(admission, record, "p0", seconds=30, per_second=100, start=0.0)
    assert admitted <= 10 * 30 + 10 + 2 + 20  # its rate, one second, and what the node's spare let through
    assert refused[Refusal.PARTITION] > 0


def test_a_hot_partition_bursts_while_its_node_has_spare_capacity() -> None:
    # Bursting alone (adaptive capacity off: it is tested below).
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 1000.0}, adaptive_capacity=False)
    record = provisioned(wcu=20)  # 10 WCU per partition
    admission.check(record, "p0", "write", 0.0)
    # Idle for 100 s: 1,000 units saved. Then 50/s for 30 s: 1,500 offered, 300 within
    # the rate, the rest (1,200) more than the savings: bursting covers most of it.
    admitted, refused = offer(admission, record, "p0", seconds=30, per_second=50, start=100.0)
    assert admitted >= 300 + 1000 - 5
    assert admitted <= 300 + 1000 + 10 + 5
    assert refused[Refusal.NODE] == 0


def test_a_partition_does_not_burst_when_its_node_has_no_spare_capacity() -> None:
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 60.0})
    hot, busy = provisioned(wcu=20), provisioned(wcu=2000, name="busy", table_id=10)
    admission.check(hot, "p0", "write", 0.0)
    now = 100.0  # the hot partition saved 1,000 units meanwhile
    admitted = 0
    for _ in range(30 * 100):  # 30 s: another table keeps the node at its capacity
        now += 0.01
        if admission.check(busy, "p0", "write", now) is None:
            admission.charge(busy, "p0", "write", 0.6, now)
        if admission.check(hot, "p0", "write", now) is None:
            admission.charge(hot, "p0", "write", 1.0, now)
            admitted += 1
    # Its allocated rate only (10/s), although 1,000 units of savings were there.
    assert admitted <= 10 * 30 + 10 + 5


def test_the_node_refuses_first_when_it_is_saturated() -> None:
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 5.0})
    record = provisioned(wcu=2000)
    admission.charge(record, "p0", "write", 50.0, 0.0)
    assert admission.check(record, "p1", "write", 1.0) is Refusal.NODE


def test_a_node_absorbs_a_one_second_spike_beyond_its_capacity_per_second() -> None:
    # Alternator's DynamoDB-verified test_transact.py on a new on-demand table, as the
    # node leading two of its four partitions sees it within a fifth of a second: half
    # of a 5 MB batch (98 WCU an item), of a 5 MB transactional delete (196 an item to
    # prepare, 98 to resolve, never refused) and of a 3 MB transactional put: about
    # 12,700 WCU on a node of 10,000 WCU/s. DynamoDB takes them all.
    admission = StorageAdmission(0.0, node_units={"read": 30000.0, "write": 10000.0}, start_full=True)
    record = records.table_record(*TWO, name="txn", table_id=12, billing_mode="PAY_PER_REQUEST")
    now, refused = 0.0, 0
    phases = [(98.0, 25, True), (196.0, 25, True), (98.0, 25, False), (196.0, 15, True)]
    for units, count, checked in phases:
        for i in range(count):
            now += 0.002
            partition = ("p0", "p1")[i % 2]
            if checked and admission.check(record, partition, "write", now) is not None:
                refused += 1
                continue
            admission.charge(record, partition, "write", units, now)
    assert refused == 0


def test_update_table_moves_the_partition_share() -> None:
    admission = StorageAdmission(0.0)
    admission.check(provisioned(wcu=20), "p0", "write", 0.0)
    admission.check(provisioned(wcu=200), "p0", "write", 1.0)
    assert admission.partitions[(9, "p0", "write")].allocated.rate == 100.0


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


ONE = (Partition("p0", 0, 2**64, ("a",), "a"),)


@pytest.mark.parametrize(
    ("partitions", "wcu", "reason"),
    [
        # Half the table's rate: a key range's limit, more provisioning would not lift it.
        (TWO, 2, "TableWriteKeyRangeThroughputExceeded"),
        # The table's only partition holds its whole rate: the table's limit.
        (ONE, 1, "TableWriteProvisionedThroughputExceeded"),
    ],
)
async def test_the_data_plane_refuses_a_partition_over_its_rate(
    engine: Engine, partitions: tuple[Partition, ...], wcu: int, reason: str
) -> None:
    record = records.table_record(
        *partitions,
        name="planehot",
        table_id=0x77,
        billing_mode="PROVISIONED",
        read_capacity=10,
        write_capacity=wcu,
    )
    state = NodeState(node_id="a", zone="a", engine=engine, hosted=desired_hosting([record], "a"))
    clock = Clock()
    plane = DataPlane(state, StorageAdmission(clock.now), clock)
    throttled_before = storage_metrics.THROTTLED.cell("partition", "planehot", "write").value
    answers = []
    for i in range(5):  # one second's worth (1 WCU) is there; the rest is refused
        key = keys.item_key(record.table_id, 5, f"k{i}".encode(), None)
        value = orjson.dumps({"pk": {"S": f"k{i}"}})
        request = pb.Request(
            id=i, op=pb.PUT, key=key, key_hash=5, value=value, table_id=record.table_id, partition_id="p0"
        )
        plan = plane.plan(request)
        if plan.effects:
            await plane.commit([plan])
        answers.append(plan.response)
    refused = [a for a in answers if a.status == pb.ERROR]
    assert 1 <= len(answers) - len(refused) <= 2
    assert refused and all(a.error_code == "ProvisionedThroughputExceededException" for a in refused)
    assert orjson.loads(refused[0].error_body) == {
        "ThrottlingReasons": [{"reason": reason, "resource": "planehot"}]
    }
    throttled = storage_metrics.THROTTLED.cell("partition", "planehot", "write").value - throttled_before
    assert throttled == len(refused)
    assert engine.get(keys.item_key(record.table_id, 5, b"k4", None)) is None  # nothing written


def test_a_partitions_savings_start_full_so_a_new_table_takes_a_short_load() -> None:
    record = provisioned(wcu=20)  # 10 WCU per partition, created a moment ago
    admission = StorageAdmission(
        0.0, node_units={"read": 1000.0, "write": 10000.0}, start_full=True, adaptive_capacity=False
    )
    admitted, _ = offer(admission, record, "p0", seconds=1, per_second=5000, start=0.0)
    assert 3000 <= admitted <= 3000 + 10 + 2  # 300 s x 10 WCU, plus the second's refill
    # Without start_full: one second's worth.
    fresh = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 1000.0}, adaptive_capacity=False)
    admitted, _ = offer(fresh, record, "p0", seconds=1, per_second=1000, start=0.0)
    assert admitted <= 10 + 10 + 2


def test_a_hot_partition_under_its_tables_rate_is_boosted_until_it_is_not_throttled() -> None:
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 1000.0})
    record = provisioned(wcu=40)  # 20 WCU per partition; p1 stays idle
    # 30 WCU/s on p0 alone: over its share, under the table's 40.
    _, refused_first = offer(admission, record, "p0", seconds=5, per_second=30, start=0.0)
    assert refused_first[Refusal.PARTITION] > 0  # throttled before the boost
    later, refused_later = offer(admission, record, "p0", seconds=20, per_second=30, start=5.0)
    assert refused_later[Refusal.PARTITION] == 0 and later == 600
    assert admission.partitions[(9, "p0", "write")].allocated.rate >= 30.0
    assert admission.partitions[(9, "p0", "write")].allocated.rate <= 40.0  # never above the table
    assert admission.boosts[("hot", "write")] >= 1


def test_a_boost_survives_the_node_rereading_the_same_table() -> None:
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 1000.0})
    offer(admission, provisioned(wcu=40), "p0", seconds=5, per_second=30, start=0.0)
    boosted = admission.partitions[(9, "p0", "write")].allocated.rate
    assert boosted > 20.0
    admission.check(provisioned(wcu=40), "p0", "write", 5.1)  # an equal copy (the control loop's re-read)
    assert admission.partitions[(9, "p0", "write")].allocated.rate == boosted
    admission.check(provisioned(wcu=80), "p0", "write", 5.2)  # UpdateTable: back to the new share
    assert admission.partitions[(9, "p0", "write")].allocated.rate == 40.0


def test_a_partition_idle_since_an_update_table_does_not_hold_the_table_to_its_old_rate() -> None:
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 1000.0})
    admission.check(provisioned(wcu=2), "p1", "write", 0.0)  # p1 last saw the table at 2 WCU
    offer(admission, provisioned(wcu=40), "p0", seconds=5, per_second=30, start=0.0)
    assert admission.partitions[(9, "p0", "write")].allocated.rate > 20.0  # boosted against 40, not 2


def test_a_table_over_its_rate_is_still_throttled_and_loses_its_boost() -> None:
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 1000.0})
    record = provisioned(wcu=40)  # 20 WCU per partition
    offer(admission, record, "p0", seconds=5, per_second=30, start=0.0)  # p0 boosted
    assert admission.partitions[(9, "p0", "write")].allocated.rate > 20.0
    # Both partitions at 40/s: the table is offered twice its rate.
    now, admitted = 5.0, 0
    for _ in range(20 * 40):
        now += 1 / 40
        for pid in ("p0", "p1"):
            if admission.check(record, pid, "write", now) is None:
                admission.charge(record, pid, "write", 1.0, now)
                admitted += 1
    assert admitted <= 40 * 20 * 1.2  # about the table's rate, not the 1,600 offered
    assert admission.partitions[(9, "p0", "write")].allocated.rate <= 40.0


def test_a_boosted_partition_of_large_items_keeps_its_boost_through_one_heavy_period() -> None:
    # 98 WCU items at 9 a second (882 WCU/s) on a 1,200 WCU table's partition: charged
    # after the fact (and bursting on the node's spare capacity), one period can count
    # 14 of them (1,372 WCU, past the table's rate and its 10% tolerance) while the
    # partition keeps to its boosted rate on average. Judged over two periods, the
    # boost stays, and the partition is not throttled again for one heavy second.
    admission = StorageAdmission(0.0, node_units={"read": 1000.0, "write": 3000.0})
    record = provisioned(wcu=1200)  # 600 WCU per partition
    now = 0.0
    for _ in range(6 * 9):  # boosted past 882
        now += 1 / 9
        if admission.check(record, "p0", "write", now) is None:
            admission.charge(record, "p0", "write", 98.0, now)
    buckets = admission.partitions[(9, "p0", "write")]
    boosted = buckets.allocated.rate
    assert boosted > 882.0
    admission.adapt(now + 1.0)  # a steady period closes
    buckets.used = 14 * 98.0  # then a heavy one
    admission.adapt(now + 2.0)
    assert buckets.allocated.rate > 882.0, buckets.allocated.rate


async def test_a_transactions_resolution_is_never_refused(engine: Engine) -> None:
    """Its prepare was admitted; refusing the commit would leave a committed transaction
    unreadable until a sweeper finished it."""
    record = records.table_record(
        *ONE, name="txhot", table_id=0x78, billing_mode="PROVISIONED", read_capacity=10, write_capacity=1
    )
    state = NodeState(node_id="a", zone="a", engine=engine, hosted=desired_hosting([record], "a"))
    clock = Clock()
    plane = DataPlane(state, StorageAdmission(clock.now), clock)
    key = keys.item_key(record.table_id, 5, b"k", None)
    lock = orjson.dumps({"tx": "t", "at": 0.0, "put": '{"pk":{"S":"k"}}'})
    await engine.commit([Effect(Kind.PUT, keys.lock_key(key), lock)])
    for i in range(5):  # spend the partition's second of writes
        other = keys.item_key(record.table_id, 5, f"o{i}".encode(), None)
        plan = plane.plan(pb.Request(id=i, op=pb.PUT, key=other, key_hash=5, value=b"{}", table_id=0x78,
                                     partition_id="p0"))  # fmt: skip
        if plan.effects:
            await plane.commit([plan])
    resolve = {"tx": "t", "commit": True, "keys": [base64.b64encode(key).decode()]}
    plan = plane.plan(
        pb.Request(
            id=9, op=pb.TX_RESOLVE, key_hash=5, body=orjson.dumps(resolve), table_id=0x78, partition_id="p0"
        )
    )
    assert plan.response.status == pb.OK and plan.effects
    await plane.commit([plan])
    assert engine.get(key) == b'{"pk":{"S":"k"}}' and engine.get(keys.lock_key(key)) is None


async def test_the_services_own_copies_are_neither_refused_nor_charged(engine: Engine) -> None:
    """Backups and restores consume none of a table's throughput, as on DynamoDB."""
    record = records.table_record(
        *ONE, name="copyhot", table_id=0x79, billing_mode="PROVISIONED", read_capacity=10, write_capacity=1
    )
    state = NodeState(node_id="a", zone="a", engine=engine, hosted=desired_hosting([record], "a"))
    clock = Clock()
    plane = DataPlane(state, StorageAdmission(clock.now), clock)

    def put(i: int, *, unmetered: bool) -> pb.Response:
        key = keys.item_key(record.table_id, 5, f"c{i}".encode(), None)
        return plane.plan(
            pb.Request(
                id=i,
                op=pb.PUT,
                key=key,
                key_hash=5,
                value=b'{"pk":{"S":"c"}}',
                table_id=0x79,
                partition_id="p0",
                unmetered=unmetered,
            )
        ).response

    copies = [put(i, unmetered=True) for i in range(20)]  # twenty seconds' worth of the rate
    assert all(a.status == pb.OK for a in copies)
    assert put(100, unmetered=False).status == pb.OK  # the client's savings are untouched
