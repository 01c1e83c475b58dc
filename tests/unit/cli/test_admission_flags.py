"""`partita up --admission`: doorman by default (throughput enforced as DynamoDB does);
`off` passes no flag to any process; `doorman` points the router at both Doorman servers and has the autoadmin write doorman.yaml,
the file the Doorman servers read; the router's own sub-command takes the same flags."""

from __future__ import annotations

from pathlib import Path

from partita.cli.main import build_parser
from partita.cli.supervisor import ClusterLayout


def argv_of(layout: ClusterLayout, name: str) -> list[str]:
    return next(c.argv for c in layout.children() if c.name == name)


def test_admission_is_doorman_by_default_at_every_layer(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path)
    router = argv_of(layout, "router")
    assert router[router.index("--admission") + 1] == "doorman"
    assert "--doorman-config" in argv_of(layout, "autoadmin")
    assert "--admission" in argv_of(layout, "storage-a")
    assert build_parser().parse_args(["up"]).admission == "doorman"


def test_admission_off_reaches_no_process(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path, admission="off")
    assert "--admission" not in argv_of(layout, "router")
    assert "--admission" not in argv_of(layout, "storage-a")
    assert "--doorman-config" not in argv_of(layout, "autoadmin")


def test_doorman_admission_wires_router_autoadmin_and_doorman_to_one_file(tmp_path: Path) -> None:
    layout = ClusterLayout(tmp_path, doorman_base_port=6200, admission="doorman")
    router = argv_of(layout, "router")
    assert router[router.index("--admission") + 1] == "doorman"
    assert router[router.index("--doorman") + 1] == "127.0.0.1:6200,127.0.0.1:6201"
    autoadmin = argv_of(layout, "autoadmin")
    doorman = argv_of(layout, "doorman-0")
    assert autoadmin[autoadmin.index("--doorman-config") + 1] == doorman[doorman.index("--config") + 1]


def test_local_admission_needs_no_doorman(tmp_path: Path) -> None:
    router = argv_of(ClusterLayout(tmp_path, admission="local"), "router")
    assert router[router.index("--admission") + 1] == "local" and "--doorman" not in router


def test_the_flags_parse() -> None:
    args = build_parser().parse_args(["up", "--admission", "doorman"])
    assert args.admission == "doorman"
    args = build_parser().parse_args(["router", "--admission", "doorman", "--doorman", "h:1,h:2"])
    assert (args.admission, args.doorman) == ("doorman", "h:1,h:2")
    assert build_parser().parse_args(["router"]).admission == "off"
