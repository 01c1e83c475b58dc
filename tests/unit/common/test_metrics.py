"""partita.common.metrics: naming rules, plain-number families, snapshots, /metrics serving."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from partita.common import metrics
from partita.common.metrics import (
    CounterCells,
    HistogramCells,
    MetricNameError,
    Snapshot,
    check_name,
    cumulative_buckets,
    exposition,
    family_names,
    metrics_http_answer,
    serve_metrics,
)


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = exposition(registry)[0].decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("router_requests_total", "counter"),  # no partita_ prefix
        ("partita_requests", "counter"),  # a counter without _total
        ("partita_in_flight_total", "gauge"),  # _total on a gauge
        ("partita_fsync_milliseconds", "histogram"),  # not a base unit
        ("partita_Requests_total", "counter"),  # upper case
    ],
)
def test_names_breaking_the_conventions_are_refused(name: str, kind: str) -> None:
    with pytest.raises(MetricNameError):
        check_name(name, kind)


def test_conventional_names_pass() -> None:
    check_name("partita_router_requests_total", "counter")
    check_name("partita_storage_wal_sync_duration_seconds", "histogram")
    check_name("partita_storage_rocksdb_sst_bytes", "gauge")


def test_counter_cells_are_exported_with_their_labels_and_cached_per_label_set() -> None:
    registry = CollectorRegistry()
    family = CounterCells("partita_test_requests_total", "doc", ("operation", "table"), registry)
    cell = family.cell("GetItem", "Orders")
    assert family.cell("GetItem", "Orders") is cell
    cell.value += 1
    cell.value += 2
    family.inc(("PutItem", "Orders"))
    got = samples(registry)
    assert got[("partita_test_requests_total", (("operation", "GetItem"), ("table", "Orders")))] == 3
    assert got[("partita_test_requests_total", (("operation", "PutItem"), ("table", "Orders")))] == 1


def test_a_cell_with_the_wrong_number_of_labels_is_refused() -> None:
    family = CounterCells("partita_test_x_total", "doc", ("a", "b"), registry=None)
    with pytest.raises(ValueError, match="takes labels"):
        family.cell("only-one")


def test_forgotten_label_sets_leave_the_exposition() -> None:
    registry = CollectorRegistry()
    family = CounterCells("partita_test_units_total", "doc", ("table",), registry)
    family.cell("Gone").value = 5
    family.cell("Kept").value = 1
    family.forget(lambda labels: labels[0] == "Gone")
    names = {dict(labels).get("table") for (_, labels) in samples(registry)}
    assert names == {"Kept"}


def test_histogram_cells_export_cumulative_buckets_sum_and_count() -> None:
    registry = CollectorRegistry()
    family = HistogramCells(
        "partita_test_duration_seconds", "doc", ("op",), buckets=(0.001, 0.01), registry=registry
    )
    cell = family.cell("GetItem")
    for value in (0.0005, 0.001, 0.005, 0.5):
        cell.observe(value)
    got = samples(registry)
    bucket = "partita_test_duration_seconds_bucket"
    assert got[(bucket, (("le", "0.001"), ("op", "GetItem")))] == 2  # 0.001 is inside le=0.001
    assert got[(bucket, (("le", "0.01"), ("op", "GetItem")))] == 3
    assert got[(bucket, (("le", "+Inf"), ("op", "GetItem")))] == 4
    assert got[("partita_test_duration_seconds_count", (("op", "GetItem"),))] == 4
    assert got[("partita_test_duration_seconds_sum", (("op", "GetItem"),))] == pytest.approx(0.5065)
    assert cell.count == 4


def test_cumulative_buckets_add_the_overflow_slot_to_inf() -> None:
    assert cumulative_buckets((1, 2), [3, 0, 4]) == [("1.0", 3.0), ("2.0", 3.0), ("+Inf", 7.0)]


def test_a_snapshot_reads_live_state_when_scraped_and_survives_a_failing_reader() -> None:
    registry = CollectorRegistry()
    state = {"a": 1.0}
    gauge = Snapshot("partita_test_partitions", "doc", ("node",), registry=registry)
    assert samples(registry) == {}  # no source yet: no samples, but no error
    gauge.read = lambda: [((k,), v) for k, v in state.items()]
    state["a"] = 7.0
    assert samples(registry) == {("partita_test_partitions", (("node", "a"),)): 7.0}

    def broken() -> list[tuple[tuple[str], float]]:
        raise RuntimeError("boom")

    gauge.read = broken
    assert samples(registry) == {}


def test_family_names_lists_declared_families_before_they_have_samples() -> None:
    registry = CollectorRegistry()
    CounterCells("partita_test_a_total", "doc", ("x",), registry)
    HistogramCells("partita_test_b_seconds", "doc", (), registry=registry)
    Snapshot("partita_test_c_bytes", "doc", (), registry=registry)
    names = family_names(registry)
    assert {"partita_test_a_total", "partita_test_b_seconds_bucket", "partita_test_c_bytes"} <= names


def test_the_http_answer_serves_metrics_health_and_refuses_the_rest() -> None:
    registry = CollectorRegistry()
    CounterCells("partita_test_hits_total", "doc", (), registry).cell().value = 4
    status, content_type, body = metrics_http_answer(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", registry)
    assert status == b"200 OK" and content_type.startswith("text/plain; version=0.0.4")
    assert b"partita_test_hits_total 4.0" in body
    assert metrics_http_answer(b"GET / HTTP/1.1\r\n\r\n", registry)[0] == b"200 OK"
    assert metrics_http_answer(b"GET /other HTTP/1.1\r\n\r\n", registry)[0] == b"404 Not Found"
    assert metrics_http_answer(b"POST /metrics HTTP/1.1\r\n\r\n", registry)[0] == b"405 Method Not Allowed"
    assert metrics_http_answer(b"garbage\r\n\r\n", registry)[0] == b"405 Method Not Allowed"


async def test_serve_metrics_answers_a_real_scrape_on_loopback() -> None:
    registry = CollectorRegistry()
    CounterCells("partita_test_scraped_total", "doc", (), registry).cell().value = 2
    server = await serve_metrics("127.0.0.1", 0, registry)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK")
        assert b"partita_test_scraped_total 2.0" in body
        # A client that sends nothing and hangs up costs nothing and breaks nothing.
        _, idle = await asyncio.open_connection("127.0.0.1", port)
        idle.close()
    finally:
        server.close()
        await server.wait_closed()


def test_the_process_registry_has_the_process_collector() -> None:
    assert "process_cpu_seconds_total" in metrics.sample_names()
