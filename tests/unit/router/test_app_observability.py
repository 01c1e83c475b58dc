"""The front door's observability: GET routing (/ health, /metrics, others refused),
request metrics by operation, table and outcome, and one log line per rejected request
carrying the x-amzn-RequestId the client saw."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from partita.common.partition_map import Partition
from partita.control.model import NodeRecord
from partita.control.store import MemoryControlStore
from partita.router import metrics as router_metrics
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import CredentialStore, save
from partita.router.http_server import HttpRequest
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from tests.unit.router.test_app import ADMIN, CREATE_ORDERS, error_of, header, signed, unsigned


@pytest.fixture
async def app(tmp_path: Path) -> DynamoApp:
    path = tmp_path / "credentials.json"
    save(path, [ADMIN])
    store = MemoryControlStore()
    await store.register_node(NodeRecord("n1", "a", "127.0.0.1:1", "127.0.0.1:2"), ttl=10)
    ctx = RouterContext(TableCache(store), store, StorageClient(), RouterSettings(account_id="123456789012"))
    return DynamoApp(ctx, CredentialStore(path))


def get(path: str) -> HttpRequest:
    return HttpRequest("GET", path, "", {"host": "localhost:8000"}, b"")


def scrape_value(body: bytes, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


async def test_get_slash_is_the_health_check(app: DynamoApp) -> None:
    response = await app(get("/"))
    assert response.status == 200 and response.body == b"healthy: localhost:8000 "


async def test_get_metrics_serves_the_prometheus_exposition(app: DynamoApp) -> None:
    response = await app(get("/metrics"))
    assert response.status == 200
    assert b"text/plain; version=0.0.4" in response.headers
    names = {f.name for f in text_string_to_metric_families(response.body.decode())}
    assert {
        "partita_router_requests",
        "partita_router_request_duration_seconds",
        "process_cpu_seconds",
    } <= names


async def test_any_other_get_path_is_a_dynamodb_client_error(app: DynamoApp) -> None:
    response = await app(get("/admin"))
    assert response.status == 404
    assert orjson.loads(response.body)["__type"].endswith("#UnknownOperationException")


async def test_requests_are_counted_by_operation_table_and_outcome(app: DynamoApp) -> None:
    before = (await app(get("/metrics"))).body
    assert (await app(signed("CreateTable", CREATE_ORDERS))).status == 200
    await app.ctx.tables.refresh()
    # Orders is still CREATING (no storage node here): DynamoDB's answer is not found.
    read = {"TableName": "Orders", "Key": {"pk": {"S": "x"}}}
    assert error_of(await app(signed("GetItem", read)))[0] == "ResourceNotFoundException"
    assert (
        error_of(await app(signed("DescribeTable", {"TableName": "Nowhere"})))[0]
        == "ResourceNotFoundException"
    )
    after = (await app(get("/metrics"))).body

    def delta(**labels: str) -> float:
        name = "partita_router_requests_total"
        return scrape_value(after, name, **labels) - scrape_value(before, name, **labels)

    assert delta(operation="CreateTable", table="", outcome="ok") == 1  # not in the cache yet
    assert delta(operation="GetItem", table="Orders", outcome="ResourceNotFoundException") == 1
    # A table the cluster does not have is not a label value: floods cannot grow the series.
    assert delta(operation="DescribeTable", table="", outcome="ResourceNotFoundException") == 1
    assert scrape_value(after, "partita_router_requests_total", table="Nowhere") == 0
    count = "partita_router_request_duration_seconds_count"
    assert (
        scrape_value(after, count, operation="GetItem") - scrape_value(before, count, operation="GetItem")
        == 1
    )
    assert scrape_value(after, "partita_router_requests_in_flight") == 0


async def test_unknown_operations_count_under_operation_unknown(app: DynamoApp) -> None:
    def count() -> float:
        return router_metrics.REQUESTS.value("unknown", "", "UnknownOperationException")

    before = count()
    await app(signed("FlyToTheMoon", {}))  # signed: DynamoDB authenticates first
    assert count() == before + 1


async def test_a_rejected_request_is_logged_once_with_the_request_id_the_client_saw(
    app: DynamoApp, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="partita.router.rejected"):
        response = await app(signed("DescribeTable", {"TableName": "Nowhere"}))
    request_id = header(response, b"x-amzn-RequestId")
    assert request_id is not None and len(request_id) == 52
    lines = [r for r in caplog.records if r.name == "partita.router.rejected"]
    assert len(lines) == 1
    record = lines[0]
    assert record.levelno == logging.INFO
    assert record.request_id == request_id.decode()
    assert record.operation == "DescribeTable"
    assert record.error_type == "ResourceNotFoundException"
    assert record.error_message == error_of(response)[1]


async def test_every_answer_gets_a_distinct_request_id(app: DynamoApp) -> None:
    ids = {header(await app(unsigned("ListTables")), b"x-amzn-RequestId") for _ in range(5)}
    assert len(ids) == 5


async def test_a_crash_in_an_operation_is_logged_at_error_with_its_traceback(
    app: DynamoApp, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from partita.router import app as app_module

    async def crash(ctx: object, payload: object) -> bytes:
        raise RuntimeError("bug in an action")

    monkeypatch.setitem(app_module.OPERATIONS, "ListTables", crash)
    with caplog.at_level(logging.INFO):
        response = await app(signed("ListTables", {}))
    assert response.status == 500
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is not None and "bug in an action" in str(errors[0].exc_info[1])
    assert errors[0].request_id == header(response, b"x-amzn-RequestId").decode()  # type: ignore[union-attr]


async def test_table_gauges_follow_the_routers_cache(app: DynamoApp) -> None:
    from partita.router.main import watch_tables

    watch_tables(app.ctx.tables)
    provisioned = dict(CREATE_ORDERS, TableName="Provisioned", BillingMode="PROVISIONED")
    provisioned["ProvisionedThroughput"] = {"ReadCapacityUnits": 5000, "WriteCapacityUnits": 10}
    assert (await app(signed("CreateTable", provisioned))).status == 200
    await app.ctx.tables.refresh()
    body = (await app(get("/metrics"))).body
    assert scrape_value(body, "partita_router_tables", status="CREATING") >= 1
    assert (
        scrape_value(body, "partita_table_provisioned_capacity_units", table="Provisioned", kind="read")
        == 5000
    )
    assert (
        scrape_value(body, "partita_table_provisioned_capacity_units", table="Provisioned", kind="write")
        == 10
    )
    # No autoadmin runs here: no partition is placed yet, and the gauge says so.
    assert scrape_value(body, "partita_table_partition_replicas", table="Provisioned") == 0
    # Placed as the autoadmin would (5000 RCU: two partitions), the gauge follows the cache.
    store = app.ctx.catalog
    assert isinstance(store, MemoryControlStore)
    table_id = app.ctx.tables.require("Provisioned").record.table_id
    halves = [Partition("p0", 0, 2**63, ("n1",), None), Partition("p1", 2**63, 2**64, ("n1",), None)]
    await store.change_partitions(table_id, halves, [])
    await app.ctx.tables.refresh()
    body = (await app(get("/metrics"))).body
    assert scrape_value(body, "partita_table_partition_replicas", table="Provisioned") == 2


async def test_a_request_abandoned_by_its_client_leaves_the_in_flight_count(
    app: DynamoApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from partita.router import app as app_module

    entered = asyncio.Event()

    async def forever(ctx: object, payload: object) -> bytes:
        entered.set()
        await asyncio.Event().wait()
        return b"{}"

    monkeypatch.setitem(app_module.OPERATIONS, "ListTables", forever)

    async def in_flight() -> float:
        return scrape_value((await app(get("/metrics"))).body, "partita_router_requests_in_flight")

    before = await in_flight()
    task = asyncio.create_task(app(signed("ListTables", {})))
    await asyncio.wait_for(entered.wait(), 5)
    assert await in_flight() == before + 1
    task.cancel()  # what the HTTP server does when the connection closes
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await in_flight() == before
