"""What the dashboards and alert rules query, for the tests that hold them to the code.

Every PromQL expression in charts/partita/dashboards/*.json and deploy/prometheus's
rules file is parsed with a real PromQL parser (promql-parser, the Rust parser's Python
binding) and the metric names it selects are collected. Grafana's own variables are
substituted first, as Grafana would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import yaml

ROOT = Path(__file__).resolve().parent.parent
DASHBOARDS = ROOT / "charts" / "partita" / "dashboards"
RULES = ROOT / "deploy" / "prometheus" / "partita-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "partita-rules.test.yml"
# Series Prometheus makes itself, not the code: the scrape's health.
SYNTHETIC = {"up"}


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs(dashboard: dict[str, Any]) -> Iterator[str]:
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            match = re.fullmatch(r"label_values\((\w+),\s*\w+\)", query["query"])
            assert match, f"unexpected variable query {query['query']}"
            yield match[1]


def rule_exprs() -> Iterator[str]:
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            yield rule["expr"]


def grafana_to_promql(expr: str) -> str:
    """Substitute Grafana's interval variables; `$var` in label matchers are strings."""
    return expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")


def metric_names(expr: str) -> set[str]:
    """Names of every metric the expression selects (parsed, not pattern-matched)."""
    tree = promql_parser.parse(grafana_to_promql(expr))
    names: set[str] = set()
    _walk(tree, names)
    return names


def _walk(node: Any, names: set[str]) -> None:
    if isinstance(node, promql_parser.VectorSelector):
        if node.name:
            names.add(node.name)
        return
    for attribute in ("lhs", "rhs", "expr", "param", "vector_selector"):
        child = getattr(node, attribute, None)
        if child is not None:
            _walk(child, names)
    for arg in getattr(node, "args", None) or []:
        _walk(arg, names)


def used_metrics() -> dict[str, set[str]]:
    """Metric name -> where it is used (dashboard file names, the rules file)."""
    used: dict[str, set[str]] = {}
    for path in dashboard_files():
        for expr in dashboard_exprs(json.loads(path.read_text())):
            for name in metric_names(expr):
                used.setdefault(name, set()).add(path.name)
    for expr in rule_exprs():
        for name in metric_names(expr):
            used.setdefault(name, set()).add(RULES.name)
    return used
