"""`--ttl-sweep-interval`: accepted by `partita up` and `partita storage`, and passed by
the supervisor to every storage node it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from partita.cli.main import build_parser
from partita.cli.supervisor import ClusterLayout
from partita.common import config


def test_up_passes_the_sweep_interval_to_every_storage_node(tmp_path: Path) -> None:
    args = build_parser().parse_args(["up", "--ttl-sweep-interval", "1.5"])
    layout = ClusterLayout(data_dir=tmp_path, ttl_sweep_interval=args.ttl_sweep_interval)
    storage = [c for c in layout.children() if c.name.startswith("storage-")]
    assert len(storage) == len(config.DEFAULT_ZONES)
    for child in storage:
        i = child.argv.index("--ttl-sweep-interval")
        assert child.argv[i + 1] == "1.5"


def test_the_storage_node_takes_the_flag_and_defaults_to_the_documented_interval() -> None:
    base = ["storage", "--node-id", "s", "--zone", "a", "--port", "1", "--data-port", "2", "--data-dir", "d"]
    assert build_parser().parse_args(base).ttl_sweep_interval == config.DEFAULT_TTL_SWEEP_INTERVAL_SECONDS
    assert build_parser().parse_args([*base, "--ttl-sweep-interval", "0.25"]).ttl_sweep_interval == 0.25


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_an_interval_that_is_not_a_positive_number_is_refused(value: str) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--ttl-sweep-interval", value])
