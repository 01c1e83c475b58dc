"""`partita top`'s figures from two scrapes, and its rendering, without a terminal."""

from __future__ import annotations

import pytest

from partita.cli.top import Scrape, _quantile, render, view

ROUTER = "http://127.0.0.1:8000/metrics"
NODE_A = "http://127.0.0.1:7301/metrics"


def router_text(get_ok: float, put_ok: float, throttled: float, fast: float, slow: float) -> str:
    """A router exposition: GetItem latencies are `fast` under 1 ms and `slow` under 10 ms."""
    return f"""
# TYPE partita_router_requests_total counter
partita_router_requests_total{{operation="GetItem",table="Orders",outcome="ok"}} {get_ok}
partita_router_requests_total{{operation="PutItem",table="Orders",outcome="ok"}} {put_ok}
partita_router_requests_total{{operation="PutItem",table="Orders",outcome="ThrottlingException"}} {throttled}
partita_router_requests_total{{operation="DescribeTable",table="",outcome="ResourceNotFoundException"}} 1
# TYPE partita_router_request_duration_seconds histogram
partita_router_request_duration_seconds_bucket{{operation="GetItem",le="0.001"}} {fast}
partita_router_request_duration_seconds_bucket{{operation="GetItem",le="0.01"}} {fast + slow}
partita_router_request_duration_seconds_bucket{{operation="GetItem",le="+Inf"}} {fast + slow}
partita_router_request_duration_seconds_count{{operation="GetItem"}} {fast + slow}
partita_router_request_duration_seconds_sum{{operation="GetItem"}} 0.0
"""


def node_text(reads: float, writes: float) -> str:
    return f"""
# TYPE partita_storage_hosted_partitions gauge
partita_storage_hosted_partitions{{node="storage-a",role="leader"}} 4
# TYPE partita_storage_consumed_read_capacity_units_total counter
partita_storage_consumed_read_capacity_units_total{{table="Orders",partition="p0"}} {reads}
partita_storage_consumed_read_capacity_units_total{{table="Orders",partition="p1"}} {reads}
# TYPE partita_storage_consumed_write_capacity_units_total counter
partita_storage_consumed_write_capacity_units_total{{table="Orders",partition="p0"}} {writes}
"""


def scrape_at(at: float, router: str, node: str) -> Scrape:
    s = Scrape(at)
    s.add(ROUTER, router)
    s.add(NODE_A, node)
    return s


def test_rates_per_table_operation_and_node_over_the_interval() -> None:
    before = scrape_at(100.0, router_text(1000, 100, 0, 900, 100), node_text(500, 100))
    after = scrape_at(102.0, router_text(1200, 140, 10, 1080, 120), node_text(600, 180))
    frame = view(before, after)
    assert frame.seconds == 2.0
    orders = next(t for t in frame.tables if t.table == "Orders")
    assert (orders.requests, orders.errors, orders.throttles) == (125.0, 5.0, 5.0)  # (200 + 40 + 10) / 2 s
    assert frame.tables[0].table == "Orders"  # busiest first
    get = next(o for o in frame.operations if o.operation == "GetItem")
    assert get.requests == 100.0
    # 180 fast and 20 slow: p50 inside the first bucket, p99 inside the second.
    assert get.p50 == pytest.approx(0.001 * 100 / 180)
    assert get.p99 == pytest.approx(0.001 + 0.009 * (198 - 180) / 20)
    assert [(n.node, n.partitions, n.read_units, n.write_units) for n in frame.nodes] == [
        ("storage-a", 4, 100.0, 40.0)
    ]


def test_a_counter_that_went_back_counts_from_zero_as_a_restart() -> None:
    before = scrape_at(0.0, router_text(5000, 0, 0, 0, 0), node_text(0, 0))
    after = scrape_at(1.0, router_text(30, 0, 0, 0, 0), node_text(0, 0))
    orders = next(t for t in view(before, after).tables if t.table == "Orders")
    assert orders.requests == 30.0


def test_quantile_follows_prometheus_interpolation() -> None:
    assert _quantile(0.5, {0.1: 50.0, 1.0: 100.0, float("inf"): 100.0}) == pytest.approx(0.1)
    assert _quantile(0.75, {0.1: 50.0, 1.0: 100.0, float("inf"): 100.0}) == pytest.approx(0.55)
    assert _quantile(0.99, {0.1: 0.0, float("inf"): 10.0}) == 0.1  # in +Inf: the highest finite bound
    assert _quantile(0.5, {0.1: 0.0, float("inf"): 0.0}) is None  # nothing observed


def test_render_shows_every_section_within_the_width_and_names_unreachable_endpoints() -> None:
    before = scrape_at(0.0, router_text(0, 0, 0, 0, 0), node_text(0, 0))
    after = scrape_at(1.0, router_text(10, 5, 1, 10, 0), node_text(3, 2))
    after.failed.append("http://127.0.0.1:7302/metrics")
    lines = render(view(before, after), width=70, title="test")
    text = "\n".join(lines)
    assert all(len(line) <= 70 for line in lines)
    for heading in ("TABLE", "OPERATION", "NODE", "unreachable: http://127.0.0.1:7302/metrics"):
        assert heading in text
    orders = next(line for line in lines if line.startswith("Orders"))
    assert orders.split() == ["Orders", "16.0", "1.0", "1.0"]
    node = next(line for line in lines if line.startswith("storage-a"))
    assert node.split()[:4] == ["storage-a", "4", "6.0", "2.0"]


def test_render_without_traffic_says_so() -> None:
    empty = Scrape(0.0)
    assert "(no requests)" in render(view(empty, Scrape(1.0)))
