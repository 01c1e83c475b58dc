"""`make bench`'s report (tables and PNG plots into docs) and the offered-load sweep's
pacing, on synthetic results and a tiny local HTTP server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

_REPO = Path(__file__).resolve().parents[3]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from bench import report, sweep, ycsb  # noqa: E402
from tests.unit.bench.test_bench_harness import _client, _Server, server  # noqa: E402, F401

pytestmark = pytest.mark.timeout(60)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def workload(ops_per_s: float, p50: float, p99: float) -> dict[str, Any]:
    return {
        "ops": 1000,
        "ops_per_s": ops_per_s,
        "latency": {"p50_ms": p50, "p99_ms": p99, "p99_9_ms": p99 * 2},
        "server_cpu_by_process": {
            "python router": 0.08,
            "python storage storage-a": 0.02,
            "python storage storage-b": 0.02,
            "etcd partita-local": 0.00001,
        },
    }


def ycsb_doc() -> dict[str, Any]:
    results = {
        "partita": {"workloads": {"b": workload(9000, 3.0, 7.0), "c": workload(10000, 2.9, 6.0)}},
        "dynalite": {"workloads": {"b": workload(7800, 3.5, 8.0), "c": workload(8100, 3.4, 7.5)}},
        "broken": {"error": "RuntimeError: no node"},
    }
    return {
        "started": "2026-11-23T17:00:00+00:00",
        "config": {
            "workloads": ["b", "c"],
            "concurrency": 32,
            "records": 10000,
            "item_bytes": 900,
            "duration_s": 8.0,
            "rounds": 3,
        },
        "machine": {"cpus": 2},
        "results": results,
        "table_markdown": "| workload | target |\n|---|---|\n| B | partita |",
    }


def sweep_doc() -> dict[str, Any]:
    def point(offered: float, achieved: float, p50: float) -> dict[str, Any]:
        return {
            "offered_ops_per_s": offered,
            "ops_per_s": achieved,
            "ops": 100,
            "latency": {"p50_ms": p50, "p99_ms": p50 * 3, "p99_9_ms": p50 * 4},
            "errors": {},
            "server_cpu_us_per_op": 120.0,
        }

    return {
        "workload": "b",
        "rates": [1000, 4000],
        "seconds": 5.0,
        "results": {
            "partita": {"points": [point(1000, 998, 1.2), point(4000, 3990, 1.4)]},
            "dynalite": {"error": "PeerUnavailable: npm"},
        },
    }


def test_cpu_by_process_adds_storage_nodes_up_and_drops_noise() -> None:
    cpu = report.cpu_by_process(workload(1, 1, 1))
    assert cpu == pytest.approx({"python router": 80.0, "storage nodes": 40.0})


def test_the_sweep_table_has_a_row_per_rate_and_names_targets_that_did_not_run() -> None:
    table = report.sweep_table(sweep_doc())
    lines = table.splitlines()
    assert lines[2] == "| partita | 1000 | 998 | 1.20 | 3.60 | 4.80 | 0 | 120 |"
    assert lines[3].startswith("| partita | 4000 | 3990 |")
    assert "| dynalite | not run: PeerUnavailable: npm |" in table


def test_the_report_writes_plots_and_replaces_only_its_own_section(tmp_path: Path) -> None:
    ycsb_path, sweep_path = tmp_path / "ycsb.json", tmp_path / "sweep.json"
    ycsb_path.write_bytes(orjson.dumps(ycsb_doc()))
    sweep_path.write_bytes(orjson.dumps(sweep_doc()))
    doc = tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# Benchmarks\n\nHand-written history.\n")
    images = tmp_path / "docs" / "img"
    report.write_report(ycsb_path, sweep_path, doc, images)
    for name in ("bench-ycsb.png", "bench-cpu.png", "bench-sweep.png"):
        assert (images / name).read_bytes().startswith(PNG_MAGIC)
    first = doc.read_text()
    assert first.startswith("# Benchmarks\n\nHand-written history.\n")
    assert "](img/bench-sweep.png)" in first and "| partita | B | " in first
    # A second run replaces the section instead of adding another.
    report.write_report(ycsb_path, None, doc, images)
    second = doc.read_text()
    assert second.count(report.BEGIN) == 1 and second.count(report.END) == 1
    assert "Latency against offered load" not in second
    assert second.startswith("# Benchmarks\n\nHand-written history.\n")


def test_a_peak_run_says_so_and_shows_each_targets_curve() -> None:
    doc = ycsb_doc()
    doc["config"]["concurrency_levels"] = [16, 128]
    doc["curves_markdown"] = "| workload | target | 16 in flight | 128 in flight | peak / dynalite's peak |"
    text = report.section(doc, None, "img")
    assert "each target's peak over 16, 128 requests in flight" in text
    assert "| workload | target | 16 in flight | 128 in flight |" in text
    plain = report.section(ycsb_doc(), None, "img")
    assert "32 requests in flight" in plain and "in flight, ops/s" not in plain


def test_replace_section_keeps_what_follows_the_section() -> None:
    old = f"head\n{report.BEGIN}\nold\n{report.END}\ntail\n"
    assert (
        report.replace_section(old, f"{report.BEGIN}\nnew\n{report.END}")
        == f"head\n{report.BEGIN}\nnew\n{report.END}\ntail\n"
    )


async def test_a_paced_phase_never_offers_more_than_the_rate(server: _Server) -> None:  # noqa: F811
    client = _client(server.port, connections=2)
    await client.start()
    try:
        cfg = ycsb.Config(targets=[], workloads=["b"], records=100, concurrency=4, table="t")
        result = await sweep.paced_phase(
            client, cfg, ycsb.WORKLOADS["b"], rate=200, seconds=1.0, root_pid=0, seed=1, warmup=0.2
        )
    finally:
        await client.close()
    # 200 requests are scheduled in the measured second, 40 in the warm-up; the pacing
    # can fall behind a busy machine but never get ahead of its schedule.
    assert result["offered_ops_per_s"] == 200
    assert 50 <= result["ops"] <= 200 + cfg.concurrency
    assert len(server.requests) <= 240 + 2 * cfg.concurrency
    assert result["latency"]["count"] == result["ops"]
    assert result["errors"] == {}


@pytest.mark.parametrize("what", ["router", "storage"])
def test_the_in_process_getitem_driver_runs_and_checks_its_answers(what: str) -> None:
    from bench import inproc_getitem

    assert inproc_getitem.main(["3", what]) == 0
    assert inproc_getitem.main(["x", what]) == 2
