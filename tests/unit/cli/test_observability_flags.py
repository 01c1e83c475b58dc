"""Every process takes --log-level; `partita up` gives storage nodes a metrics port,
passes the log level on, lists every /metrics endpoint and writes a Prometheus config."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from partita.cli.main import build_parser
from partita.cli.supervisor import RULES_FILE, ClusterLayout, Supervisor, prometheus_config


@pytest.mark.parametrize(
    "argv",
    [
        ["up", "--log-level", "debug"],
        ["router", "--log-level", "debug"],
        [
            "storage",
            "--node-id",
            "s",
            "--zone",
            "a",
            "--port",
            "1",
            "--data-port",
            "2",
            "--data-dir",
            "d",
            "--log-level",
            "debug",
        ],
    ],
)
def test_every_process_takes_a_log_level(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert args.log_level == "debug"


def test_an_unknown_log_level_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["router", "--log-level", "chatty"])
    assert "invalid choice" in capsys.readouterr().err


def test_storage_nodes_get_metrics_ports_and_every_child_the_log_level(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path, storage_base_port=9101, log_level="warning")
    children = {c.name: c for c in layout.children()}
    for i, zone in enumerate("abc"):
        node = children[f"storage-{zone}"]
        assert node.ports["metrics"] == 9301 + i
        assert node.argv[node.argv.index("--metrics-port") + 1] == str(9301 + i)
        assert node.argv[node.argv.index("--log-level") + 1] == "warning"
    router = children["router"]
    assert router.argv[router.argv.index("--log-level") + 1] == "warning"


def test_the_supervisor_lists_every_metrics_endpoint(tmp_path: Path) -> None:
    supervisor = Supervisor(ClusterLayout(tmp_path, router_port=9000, etcd_port=9379, storage_base_port=9101))
    assert dict(supervisor.metrics_endpoints()) == {
        "etcd": "http://127.0.0.1:9379/metrics",
        "storage-a": "http://127.0.0.1:9301/metrics",
        "storage-b": "http://127.0.0.1:9302/metrics",
        "storage-c": "http://127.0.0.1:9303/metrics",
        "doorman-0": "http://127.0.0.1:5201/metrics",
        "doorman-1": "http://127.0.0.1:5202/metrics",
        "router": "http://127.0.0.1:9000/metrics",
        "autoadmin": "http://127.0.0.1:9400/metrics",  # storage base + 299
    }


def test_the_prometheus_config_scrapes_one_job_per_role_and_loads_the_rules(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path, router_port=9000, etcd_port=9379, storage_base_port=9101)
    text = prometheus_config(layout.children(), "127.0.0.1", RULES_FILE)
    config = json.loads(text)
    jobs = {c["job_name"]: c["static_configs"][0]["targets"] for c in config["scrape_configs"]}
    assert jobs == {
        "partita-etcd": ["127.0.0.1:9379"],
        "partita-storage": ["127.0.0.1:9301", "127.0.0.1:9302", "127.0.0.1:9303"],
        "partita-doorman": ["127.0.0.1:5201", "127.0.0.1:5202"],
        "partita-router": ["127.0.0.1:9000"],
        "partita-autoadmin": ["127.0.0.1:9400"],
    }
    assert config["rule_files"] == [str(RULES_FILE)]
    assert "rule_files" not in json.loads(
        prometheus_config(layout.children(), "127.0.0.1", tmp_path / "none.yml")
    )
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip(
            "promtool not found: `make test` installs it (Debian package prometheus) where apt-get can"
        )
    path = tmp_path / "prometheus.yml"
    path.write_text(text)
    result = subprocess.run(
        [promtool, "check", "config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
