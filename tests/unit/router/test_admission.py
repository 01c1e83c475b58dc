"""Table-level admission at the router, in virtual time: a table's bucket is refilled at
its rate (provisioned, or the on-demand allowance), charged what metering counted, and a
request meeting an empty bucket gets ProvisionedThroughputExceededException with
DynamoDB's ThrottlingReasons; the throttle is counted by layer."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import orjson
import pytest

from partita.common.errors import DynamoError
from partita.control.model import NodeRecord, TableRecord
from partita.control.store import MemoryControlStore
from partita.router import metrics
from partita.router.admission import ON_DEMAND_BURST_SECONDS, Admission, ProvisionedRate, resource_id
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import CredentialStore, save
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from tests.unit.records import put_record, table_record
from tests.unit.router.test_app import ADMIN, signed


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def unique_table(**kw: object) -> TableRecord:
    return table_record(name=f"t-{uuid.uuid4().hex[:8]}", **kw)  # type: ignore[arg-type]


def consume(record: TableRecord, kind: str, units: float) -> None:
    """What the data path's metering does for an answered request."""
    read, write = metrics.consumed_cells(record.name)
    (read if kind == "read" else write).value += units


def drive(
    admission: Admission,
    clock: Clock,
    record: TableRecord,
    kind: str,
    *,
    seconds: float,
    per_second: int,
    units: float,
) -> int:
    """Offers `per_second` requests of `units` each for `seconds`; returns those admitted."""
    admitted = 0
    step = 1.0 / per_second
    for _ in range(int(seconds * per_second)):
        clock.now += step
        try:
            admission.admit(record, kind)  # type: ignore[arg-type]
        except DynamoError:
            continue
        consume(record, kind, units)
        admitted += 1
    return admitted


def test_a_provisioned_table_is_held_to_its_rate_plus_one_second() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PROVISIONED", read_capacity=50, write_capacity=10)
    admission = Admission(ProvisionedRate(), clock=clock)
    # 10x the write rate for 60 s: 10 WCU/s plus the first second's tokens (no saved burst).
    admitted = drive(admission, clock, record, "write", seconds=60, per_second=100, units=1.0)
    assert 600 <= admitted <= 612


def test_unused_throughput_is_saved_for_a_burst_of_up_to_300_seconds() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PROVISIONED", read_capacity=5, write_capacity=5)
    admission = Admission(ProvisionedRate(), clock=clock)
    admission.admit(record, "read")
    clock.now += 1000.0  # idle far longer than 300 s: 1,500 units saved, not 5,000
    admitted = drive(admission, clock, record, "read", seconds=10, per_second=1000, units=1.0)
    assert 1500 + 50 <= admitted <= 1500 + 50 + 6


def test_a_table_created_again_under_its_name_starts_with_full_savings() -> None:
    # Test suites drop and create their tables under the same names: the new table must
    # not inherit the savings the old one spent (dynalite's suite, scan tests throttled).
    clock = Clock()
    old = unique_table(billing_mode="PROVISIONED", read_capacity=5, write_capacity=5)
    admission = Admission(ProvisionedRate(), clock=clock, start_full=True)
    spent = drive(admission, clock, old, "write", seconds=2, per_second=1000, units=1.0)
    assert 1500 <= spent <= 1500 + 12
    with pytest.raises(DynamoError):
        admission.admit(old, "write")
    again = dataclasses.replace(old, table_id=old.table_id + 1)
    assert drive(admission, clock, again, "write", seconds=2, per_second=1000, units=1.0) >= 1500


def test_reads_and_writes_have_separate_buckets() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=100)
    admission = Admission(ProvisionedRate(), clock=clock)
    admission.admit(record, "read")
    consume(record, "read", 10.0)
    with pytest.raises(DynamoError):
        admission.admit(record, "read")
    admission.admit(record, "write")  # the write bucket is untouched


def test_the_throttle_says_which_table_limit_and_is_counted_by_layer() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=1)
    admission = Admission(
        ProvisionedRate(), clock=clock, table_arn=lambda n: f"arn:aws:dynamodb:r:1:table/{n}"
    )
    admission.admit(record, "write")
    consume(record, "write", 5.0)
    with pytest.raises(DynamoError) as caught:
        admission.admit(record, "write")
    error = caught.value
    assert error.code == "ProvisionedThroughputExceededException" and error.retriable
    assert error.body()["ThrottlingReasons"] == [
        {
            "reason": "TableWriteProvisionedThroughputExceeded",
            "resource": f"arn:aws:dynamodb:r:1:table/{record.name}",
        }
    ]
    assert metrics.THROTTLED.cell("table", record.name, "write").value == 1


def test_update_table_changes_the_rate_at_the_next_request() -> None:
    clock = Clock()
    slow = unique_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=1)
    admission = Admission(ProvisionedRate(), clock=clock)
    before = drive(admission, clock, slow, "write", seconds=10, per_second=100, units=1.0)
    fast = table_record(name=slow.name, billing_mode="PROVISIONED", read_capacity=1, write_capacity=50)
    after = drive(admission, clock, fast, "write", seconds=10, per_second=100, units=1.0)
    assert before <= 12
    assert 480 <= after <= 520


def test_on_demand_absorbs_a_jump_to_twice_its_previous_peak() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PAY_PER_REQUEST")
    admission = Admission(ProvisionedRate(), clock=clock)
    # A steady 5,000 WCU/s (within a new table's 4,000 plus its first second's tokens),
    # then a jump to 10,000/s, twice the previous peak: nothing is throttled.
    steady = drive(admission, clock, record, "write", seconds=5, per_second=500, units=10.0)
    assert steady == 2500
    doubled = drive(admission, clock, record, "write", seconds=5, per_second=1000, units=10.0)
    assert doubled == 5000
    assert metrics.THROTTLED.cell("table", record.name, "write").value == 0


def test_on_demand_throttles_beyond_twice_the_previous_peak() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PAY_PER_REQUEST")
    admission = Admission(ProvisionedRate(), clock=clock)
    # From nothing straight to 20,000 WCU/s: five times the 4,000 a new table admits.
    admitted = drive(admission, clock, record, "write", seconds=1, per_second=2000, units=10.0)
    assert admitted < 2000
    with pytest.raises(DynamoError) as caught:
        for _ in range(100):
            admission.admit(record, "write")
            consume(record, "write", 10.0)
    assert caught.value.body()["ThrottlingReasons"][0]["reason"] == "TableWriteAccountLimitExceeded"


def test_an_on_demand_tables_warm_throughput_is_admitted_from_its_first_second() -> None:
    # The 20,000 WCU/s a plain new table throttles (above) is its warm throughput here.
    clock = Clock()
    record = dataclasses.replace(unique_table(billing_mode="PAY_PER_REQUEST"), warm_throughput=(0, 20000))
    admission = Admission(ProvisionedRate(), clock=clock)
    assert drive(admission, clock, record, "write", seconds=3, per_second=2000, units=10.0) == 6000
    assert metrics.THROTTLED.cell("table", record.name, "write").value == 0


def test_an_on_demand_tables_maximum_holds_it_and_names_itself_when_it_throttles() -> None:
    clock = Clock()
    record = dataclasses.replace(unique_table(billing_mode="PAY_PER_REQUEST"), on_demand_max=(0, 100))
    admission = Admission(ProvisionedRate(), clock=clock)
    admitted = drive(admission, clock, record, "write", seconds=3, per_second=100, units=10.0)
    assert admitted <= 40  # 100 WCU/s for 3 s, and a second's tokens at the start
    with pytest.raises(DynamoError) as caught:
        for _ in range(100):
            admission.admit(record, "write")
            consume(record, "write", 10.0)
    assert caught.value.body()["ThrottlingReasons"][0]["reason"] == "TableWriteMaxOnDemandThroughputExceeded"
    # Under its maximum, a table held back by its allowance says so, as before.
    roomy = dataclasses.replace(unique_table(billing_mode="PAY_PER_REQUEST"), on_demand_max=(0, 1_000_000))
    with pytest.raises(DynamoError) as held:
        for _ in range(10_000):
            admission.admit(roomy, "write")
            consume(roomy, "write", 10.0)
    assert held.value.body()["ThrottlingReasons"][0]["reason"] == "TableWriteAccountLimitExceeded"


def test_resource_ids() -> None:
    assert resource_id("Music", "read") == "table/Music/rcu"
    assert resource_id("Music", "write") == "table/Music/wcu"


async def test_the_front_door_refuses_before_any_work(tmp_path: Path) -> None:
    """Wired into DynamoApp: a PutItem on a table in debt is refused with DynamoDB's
    error and body, without reaching a storage node (there is none listening)."""
    path = tmp_path / "credentials.json"
    save(path, [ADMIN])
    store = MemoryControlStore()
    await store.register_node(NodeRecord("a", "a", "127.0.0.1:1", "127.0.0.1:2"), ttl=10)
    record = unique_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=1)
    await put_record(store, record)
    tables = TableCache(store)
    await tables.refresh()
    ctx = RouterContext(tables, store, StorageClient(), RouterSettings(account_id="123456789012"))
    clock = Clock()
    app = DynamoApp(
        ctx, CredentialStore(path), Admission(ProvisionedRate(), clock=clock, table_arn=ctx.table_arn)
    )
    app.admission.admit(tables.tables[record.name].record, "write")  # type: ignore[union-attr]
    consume(record, "write", 100.0)
    response = await app(signed("PutItem", {"TableName": record.name, "Item": {"pk": {"S": "k"}}}))
    body = orjson.loads(response.body)
    assert response.status == 400
    assert body["__type"] == "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
    assert body["message"].startswith(
        "The level of configured provisioned throughput for the table was exceeded."
    )
    assert body["ThrottlingReasons"] == [
        {
            "reason": "TableWriteProvisionedThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{record.name}",
        }
    ]


async def test_a_storage_throttle_reaches_the_client_with_the_tables_arn(tmp_path: Path) -> None:
    """A storage node names a throttled table by name (it knows no region or account);
    the router answers DynamoDB's ThrottlingReasons with the table's ARN."""
    from partita._proto import storage_pb2 as pb
    from partita.common import errors as errs

    class Throttling:
        async def call(self, request: pb.Request) -> pb.Response:
            error = errs.provisioned_throughput_exceeded([("TableWriteKeyRangeThroughputExceeded", "Hot")])
            return pb.Response(
                id=request.id,
                status=pb.ERROR,
                error_code=error.code,
                error_message=error.message,
                error_body=orjson.dumps(error.extra),
            )

    class DataPath:
        def channel(self, address: str) -> Throttling:
            return Throttling()

    path = tmp_path / "credentials.json"
    save(path, [ADMIN])
    store = MemoryControlStore()
    await store.register_node(NodeRecord("a", "a", "127.0.0.1:1", "127.0.0.1:2"), ttl=10)
    await put_record(
        store, table_record(name="Hot", billing_mode="PROVISIONED", read_capacity=5, write_capacity=5)
    )
    tables = TableCache(store)
    await tables.refresh()
    ctx = RouterContext(tables, store, DataPath(), RouterSettings(account_id="123456789012"))  # type: ignore[arg-type]
    response = await DynamoApp(ctx, CredentialStore(path))(
        signed("PutItem", {"TableName": "Hot", "Item": {"pk": {"S": "k"}}})
    )
    body = orjson.loads(response.body)
    assert body["__type"].endswith("#ProvisionedThroughputExceededException")
    assert body["ThrottlingReasons"] == [
        {
            "reason": "TableWriteKeyRangeThroughputExceeded",
            "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/Hot",
        }
    ]


def test_control_plane_calls_beyond_their_rate_get_throttling_exception() -> None:
    clock = Clock()
    admission = Admission(ProvisionedRate(), clock=clock, control_plane_rate=5.0)
    for _ in range(5):  # a second's worth at once
        admission.admit_control()
    with pytest.raises(DynamoError) as caught:
        admission.admit_control()
    assert caught.value.code == "ThrottlingException" and caught.value.retriable
    assert caught.value.message == "Rate of requests exceeds the allowed throughput."
    assert caught.value.type_name == "com.amazon.coral.availability#ThrottlingException"
    clock.now += 0.2  # one call's worth later
    admission.admit_control()
    assert metrics.THROTTLED.cell("control", "", "control").value >= 1


def test_a_new_tables_first_bucket_holds_its_whole_300_second_burst() -> None:
    clock = Clock()
    record = unique_table(billing_mode="PROVISIONED", read_capacity=5, write_capacity=10)
    admission = Admission(ProvisionedRate(), clock=clock, start_full=True)
    # Created a moment ago, yet 300 s x 10 WCU are there at once (DynamoDB admits a
    # short load on a new table): 3,000 plus the one second the drive lasts.
    admitted = drive(admission, clock, record, "write", seconds=1, per_second=10000, units=1.0)
    assert 3000 <= admitted <= 3000 + 10 + 1


def test_a_25_item_batch_at_1_wcu_and_200_puts_at_5_wcu_are_admitted_on_a_new_table() -> None:
    clock = Clock()
    one = unique_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=1)
    five = unique_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=5)
    admission = Admission(ProvisionedRate(), clock=clock, start_full=True)
    admission.admit(one, "write")
    consume(one, "write", 25.0)  # BatchWriteItem of 25 one-unit items
    admission.admit(one, "write")  # 275 of the 300 saved are left
    assert drive(admission, clock, five, "write", seconds=2, per_second=100, units=1.0) == 200
    assert metrics.THROTTLED.cell("table", five.name, "write").value == 0


class Leased:
    """A Doorman share that the test moves."""

    def __init__(self, lease: float) -> None:
        self.lease = lease

    def rate(self, record: TableRecord, kind: str) -> float:
        return self.lease

    def used(self, record: TableRecord, kind: str, units: float, throttled: bool) -> None:
        return None


def test_a_zero_lease_stops_the_refill_but_keeps_the_savings() -> None:
    # A new Doorman master's learning mode leases a router nothing for a few seconds:
    # the table's savings carry it meanwhile (capped by the table's rate, not by the
    # router's share).
    clock = Clock()
    source = Leased(10.0)
    record = unique_table(billing_mode="PROVISIONED", read_capacity=5, write_capacity=10)
    admission = Admission(source, clock=clock, start_full=True)  # type: ignore[arg-type]
    admission.admit(record, "write")
    source.lease = 0.0
    admitted = drive(admission, clock, record, "write", seconds=1, per_second=5000, units=1.0)
    assert 2990 <= admitted <= 3000
    clock.now += 10.0
    with pytest.raises(DynamoError):  # savings spent, nothing refills
        admission.admit(record, "write")


def test_an_on_demand_tables_first_bucket_is_thirty_seconds_of_its_allowance_not_300() -> None:
    # DynamoDB takes 8,000 WCU within half a second on a new on-demand table (Alternator's
    # test_scan_paging_missing_limit): the bucket holds ON_DEMAND_BURST_SECONDS of the
    # initial 4,000 WCU allowance, so half a second of a flood admits that plus half a
    # second's refill, and not the 300 s a provisioned table saves.
    assert ON_DEMAND_BURST_SECONDS == 30.0
    clock = Clock()
    record = unique_table(billing_mode="PAY_PER_REQUEST")
    admission = Admission(ProvisionedRate(), clock=clock, start_full=True)
    admitted = drive(admission, clock, record, "write", seconds=0.5, per_second=100000, units=1.0)
    assert 8000 <= admitted <= 4000 * (ON_DEMAND_BURST_SECONDS + 0.5) + 10


class Recording(Leased):
    """A lease that records the demand the router reports to it."""

    def __init__(self, lease: float) -> None:
        super().__init__(lease)
        self.demand: list[tuple[float, bool]] = []

    def used(self, record: TableRecord, kind: str, units: float, throttled: bool) -> None:
        self.demand.append((units, throttled))


def test_a_refused_request_counts_as_the_tables_average_cost_in_the_demand() -> None:
    # A table of 98 WCU items held back by its lease: Doorman must hear of ~98 WCU per
    # refused request, not 1, or the router's wants would hide most of its demand.
    clock = Clock()
    source = Recording(100.0)
    record = unique_table(billing_mode="PROVISIONED", read_capacity=5, write_capacity=1200)
    admission = Admission(source, clock=clock)  # type: ignore[arg-type]
    drive(admission, clock, record, "write", seconds=3, per_second=9, units=98.0)
    refused = [units for units, throttled in source.demand if throttled]
    assert refused, "the lease held the table back"
    assert all(units >= 90.0 for units in refused[1:]), refused
    counted = sum(units for units, _ in source.demand)
    offered = 3 * 9 * 98.0
    assert 0.9 * offered <= counted <= 1.1 * offered, (counted, offered)


class OnDemandLeased(Leased):
    def on_demand_rate(self, record: TableRecord, kind: str, allowance: float) -> float:
        return self.lease


def test_a_new_on_demand_table_takes_a_burst_beyond_this_routers_share_at_once() -> None:
    # DynamoDB admits 8,000 WCU at once on a new on-demand table; a router whose Doorman
    # lease is its floor share (1,000 WCU/s) still takes 82 items of 98 WCU written back
    # to back (32 BatchWriteItems of 25 items of 10 KB, as Alternator's paging test does).
    clock = Clock()
    record = unique_table(billing_mode="PAY_PER_REQUEST")
    admission = Admission(OnDemandLeased(1000.0), clock=clock, start_full=True)  # type: ignore[arg-type]
    admitted = drive(admission, clock, record, "write", seconds=0.41, per_second=200, units=98.0)
    assert admitted == 82
    # Still thirty seconds' worth, not a 300 s burst: a long load meets the lease.
    admitted = drive(admission, clock, record, "write", seconds=120, per_second=100, units=98.0)
    assert admitted <= (1000 * 120 + 4000 * ON_DEMAND_BURST_SECONDS) / 98 + 2, admitted
    assert admitted < 120 * 100


def test_a_new_on_demand_table_takes_a_test_suites_5_mb_transactions_and_answers_after_them() -> None:
    # Alternator's DynamoDB-verified test_transact.py, in one second on a fresh on-demand
    # table while the router's lease is its floor share: 50 items of 100 KB written in
    # two BatchWriteItems (about 4,900 WCU), deleted in one transaction (each item twice:
    # about 9,800), 30 more put in one (about 5,900); then small requests, back to back.
    # DynamoDB answers them all; five seconds of savings (20,000) left the table in debt.
    clock = Clock()
    record = unique_table(billing_mode="PAY_PER_REQUEST")
    admission = Admission(OnDemandLeased(1000.0), clock=clock, start_full=True)  # type: ignore[arg-type]
    for units in (2450.0, 2450.0, 9800.0, 5880.0):
        clock.now += 0.1
        admission.admit(record, "write")
        consume(record, "write", units)
    assert drive(admission, clock, record, "write", seconds=0.5, per_second=60, units=2.0) == 30
    assert metrics.THROTTLED.cell("table", record.name, "write").value == 0
