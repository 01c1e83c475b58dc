"""`partita doorman` flags, and the two Doorman servers `partita up` supervises."""

from __future__ import annotations

from pathlib import Path

from partita.cli.main import build_parser, cmd_doorman, cmd_up
from partita.cli.supervisor import ClusterLayout
from partita.doorman.repository import DEFAULT_CONFIG, ResourceRepository, write_default_config


def test_doorman_subcommand_defaults() -> None:
    args = build_parser().parse_args(["doorman", "--config", "d.yaml"])
    assert args.func is cmd_doorman
    assert (args.port, args.etcd, args.election_name, args.election_ttl) == (
        5101,
        "127.0.0.1:2379",
        "root",
        5,
    )
    leaf = build_parser().parse_args(
        ["doorman", "--parent", "a:1,b:2", "--election-name", "leaf", "--etcd", "none"]
    )
    assert (leaf.parent, leaf.config, leaf.etcd) == ("a:1,b:2", None, "none")


def test_up_runs_a_master_and_a_standby_on_consecutive_ports(tmp_path: Path) -> None:
    args = build_parser().parse_args(["up", "--doorman-base-port", "6200"])
    assert args.func is cmd_up and args.doorman_base_port == 6200
    layout = ClusterLayout(data_dir=tmp_path, etcd_port=3000, doorman_base_port=6200)
    doormen = [c for c in layout.children() if c.role == "doorman"]
    assert [c.name for c in doormen] == ["doorman-0", "doorman-1"]
    assert [c.ports for c in doormen] == [{"grpc": 6200, "metrics": 6300}, {"grpc": 6201, "metrics": 6301}]
    for child in doormen:
        argv = child.argv
        assert argv[argv.index("--etcd") + 1] == "127.0.0.1:3000"
        assert argv[argv.index("--config") + 1] == str(tmp_path / "doorman.yaml")
        assert argv[argv.index("--election-name") + 1] == "root"  # one election: master + standby
    names = [c.name for c in layout.children()]
    assert names.index("doorman-0") < names.index("router")  # the router is stopped first


def test_the_default_configuration_is_valid_and_never_overwrites_the_operators(tmp_path: Path) -> None:
    path = tmp_path / "doorman.yaml"
    write_default_config(path)
    assert path.read_text() == DEFAULT_CONFIG
    assert ResourceRepository.from_file(path).find("table/x/wcu").capacity == 1000
    path.write_text("# mine\n")
    write_default_config(path)
    assert path.read_text() == "# mine\n"
