"""Dashboards and alert rules are held to the code: generated files are current, valid
Grafana 11 dashboards, every metric they query is one the services register, and the
alert rules pass `promtool check rules` and `promtool test rules`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

import partita.autoadmin.metrics
import partita.router.metrics
import partita.storage.metrics  # noqa: F401 - registers the storage families
from partita.common import metrics
from tests import observability_queries as q

GENERATOR = q.DASHBOARDS / "generate.py"


def load_generator() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("partita_dashboards", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in q.dashboard_files()}


def test_the_committed_dashboards_are_what_the_generator_writes() -> None:
    generator = load_generator()
    assert set(generator.DASHBOARDS) == {p.name for p in q.dashboard_files()}
    for name, build in generator.DASHBOARDS.items():
        assert (q.DASHBOARDS / name).read_text() == generator.render(build), (
            f"{name} is stale: run .venv/bin/python {GENERATOR.relative_to(q.ROOT)}"
        )


def test_dashboards_are_valid_grafana_11_dashboards() -> None:
    uids = set()
    for name, board in dashboards().items():
        assert board["schemaVersion"] == 39, name
        assert board["uid"] not in uids and re.fullmatch(r"[a-z0-9-]{1,40}", board["uid"])
        uids.add(board["uid"])
        assert board["title"].startswith("Partita / ")
        variables = {v["name"] for v in board["templating"]["list"]}
        assert {"datasource", "namespace"} <= variables
        ids = [p["id"] for p in q.panels(board)]
        assert len(ids) == len(set(ids)), f"{name}: duplicate panel ids"
        occupied: set[tuple[int, int]] = set()
        for panel in q.panels(board):
            assert panel["type"] in {"row", "timeseries", "stat", "table"}
            grid = panel["gridPos"]
            assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
            cells = {
                (x, y)
                for x in range(grid["x"], grid["x"] + grid["w"])
                for y in range(grid["y"], grid["y"] + grid["h"])
            }
            assert not cells & occupied, f"{name}: {panel['title']} overlaps another panel"
            occupied |= cells
            if panel["type"] == "row":
                continue
            assert panel["targets"], panel["title"]
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            refs = [t["refId"] for t in panel["targets"]]
            assert len(refs) == len(set(refs))
            for target in panel["targets"]:
                used = set(re.findall(r"\$(\w+)", target["expr"])) - {"__rate_interval", "__interval"}
                assert used <= variables, f"{name}: {panel['title']} uses undefined {used - variables}"


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, f"{path}/{key}")
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _leaves(child, f"{path}/{i}")
    else:
        yield path, value


def test_dashboards_round_trip_through_grafana_11_6s_dashboard_model_unchanged() -> None:
    # The model (grafana-foundation-sdk, generated from Grafana's schema) keeps only the
    # fields the schema knows (and adds its defaults): a misspelt or unknown field of
    # ours would be lost on the way.
    from grafana_foundation_sdk.models.dashboard import Dashboard

    for name, board in dashboards().items():
        model = Dashboard.from_json(board)
        again = json.loads(json.dumps(model.to_json(), default=lambda o: o.to_json()))
        kept = dict(_leaves(again))
        lost = {path: value for path, value in _leaves(board) if kept.get(path, object()) != value}
        assert not lost, f"{name}: not in Grafana 11.6's dashboard schema: {lost}"


def test_every_dashboard_and_rule_expression_parses_as_promql() -> None:
    exprs = [e for board in dashboards().values() for e in q.dashboard_exprs(board)] + list(q.rule_exprs())
    assert len(exprs) > 30
    for expr in exprs:
        assert q.metric_names(expr), f"selects no metric: {expr}"


def test_the_parser_finds_names_inside_functions_aggregations_and_binary_operations() -> None:
    expr = 'histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="$y"}[$__rate_interval]))) / on() group_left b > 0 or -c'
    assert q.metric_names(expr) == {"a_bucket", "b", "c"}


def doorman_family_names() -> set[str]:
    """A Doorman server's families live in its own registry (one per server)."""
    from partita.doorman.core import ServerStatus
    from partita.doorman.metrics import DoormanMetrics

    return metrics.family_names(DoormanMetrics(lambda: ServerStatus("s", True, None, [])).registry)


def test_every_metric_a_dashboard_or_alert_uses_is_registered_by_the_code() -> None:
    exported = metrics.family_names() | q.SYNTHETIC | doorman_family_names()
    missing = {name: where for name, where in q.used_metrics().items() if name not in exported}
    assert not missing, f"queried but not exported: {missing}"


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section() -> None:
    operations = (q.ROOT / "docs" / "operations.md").read_text()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", operations, re.MULTILINE)}
    tested = {
        case["alertname"]
        for test in yaml.safe_load(q.RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    for group in yaml.safe_load(q.RULES.read_text())["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}
            assert rule["annotations"]["summary"]
            path, _, anchor = rule["annotations"]["runbook"].partition("#")
            assert path == "docs/operations.md" and anchor in anchors, rule["alert"]
            assert rule["alert"] in tested, f"{rule['alert']} has no firing case in the rule tests"


def _anchor(heading: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip(
            "promtool not found: `make test` installs it (Debian package prometheus) where apt-get can"
        )
    return found


def test_promtool_checks_the_rules_file() -> None:
    result = subprocess.run(
        [promtool(), "check", "rules", str(q.RULES)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_runs_the_rule_unit_tests_on_synthetic_series() -> None:
    result = subprocess.run(
        [promtool(), "test", "rules", q.RULE_TESTS.name],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=q.RULE_TESTS.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
