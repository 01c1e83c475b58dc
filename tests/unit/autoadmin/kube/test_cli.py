"""`partita operator` is reachable from the one console script and maps flags to the fleet."""

from __future__ import annotations

import pytest

from partita.autoadmin.kube.cli import config_from_args
from partita.cli.main import build_parser


def test_operator_subcommand_flags_become_the_fleet() -> None:
    args = build_parser().parse_args(
        [
            "operator",
            "--namespace=db",
            "--release=pt",
            "--image=partita:1",
            "--zones=x, y",
            "--replicas-per-zone=2",
            "--storage-class=ssd",
            "--no-pin-zones",
            "--on-demand-partitions=8",
        ]
    )
    config = config_from_args(args)
    fleet = config.fleet
    assert (fleet.namespace, fleet.release, fleet.image, fleet.zones) == ("db", "pt", "partita:1", ("x", "y"))
    assert (fleet.replicas_per_zone, fleet.storage_class, fleet.pin_zones, fleet.separate_hosts) == (
        2,
        "ssd",
        False,
        True,
    )
    assert config.on_demand_partitions == 8


def test_operator_defaults_match_the_fleet_defaults() -> None:
    config = config_from_args(
        build_parser().parse_args(["operator", "--namespace=n", "--release=r", "--image=i"])
    )
    assert config.fleet.zones == ("a", "b", "c") and config.fleet.pin_zones and config.fleet.separate_hosts


def test_operator_refuses_an_empty_zone_list() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["operator", "--release=r", "--image=i", "--zones=,"])
