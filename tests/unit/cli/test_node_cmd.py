"""`partita node add/hold/release`: what they ask of the running supervisor (through
`<data-dir>/nodes.json`), and how the supervisor starts an added storage node."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from partita.cli import main as cli
from partita.cli.node_cmd import next_zone, replicas_on
from partita.cli.supervisor import ClusterLayout, NodeRequests, Supervisor
from partita.common.partition_map import Partition
from tests.unit import records


def test_next_zone_is_the_first_letter_no_node_uses() -> None:
    assert next_zone({"a", "b", "c"}) == "d"
    assert next_zone({"a", "c"}) == "b"


def test_a_drained_node_still_holds_the_partitions_that_name_it_in_any_role() -> None:
    end = 2**64
    tables = [
        records.table_record(
            Partition("p0", 0, end // 4, ("a", "b"), "a"),
            Partition("p1", end // 4, end // 2, ("b", "c"), "b", joining=("a",)),
            Partition("p2", end // 2, 3 * end // 4, ("b", "c"), "b", log_replicas=("a",)),
            Partition("p3", 3 * end // 4, end, ("b", "c"), "b"),
            name="t",
            table_id=1,
        )
    ]
    assert replicas_on(tables, "a") == 3
    assert replicas_on(tables, "c") == 3
    assert replicas_on(tables, "d") == 0


def test_node_requests_round_trip_through_the_data_dir(tmp_path: Path) -> None:
    assert NodeRequests.read(tmp_path) == NodeRequests()
    NodeRequests(["d"], ["storage-c"]).write(tmp_path)
    assert NodeRequests.read(tmp_path) == NodeRequests(["d"], ["storage-c"])


def test_an_added_storage_node_takes_kernel_picked_ports_and_the_layouts_flags(tmp_path: Path) -> None:
    layout = ClusterLayout(data_dir=tmp_path, replication_factor=3, admission="local")
    child = layout.storage_child(["py"], "d", None)
    assert child.name == "storage-d" and child.zone == "d" and child.ports == {}
    argv = child.argv
    assert argv[argv.index("--port") + 1] == "0" and argv[argv.index("--data-port") + 1] == "0"
    assert "--metrics-port" not in argv
    assert {"--replication", "--admission"} <= set(argv)
    assert argv[argv.index("--data-dir") + 1] == str(tmp_path / "storage-d")
    # The layout's own nodes keep their fixed ports and /metrics.
    fixed = layout.storage_child(["py"], "a", 0)
    assert fixed.ports["grpc"] == layout.storage_base_port and "--metrics-port" in fixed.argv


def test_a_cluster_started_again_starts_the_added_nodes_and_forgets_holds(tmp_path: Path) -> None:
    NodeRequests(["d"], ["storage-a"]).write(tmp_path)
    supervisor = Supervisor(ClusterLayout(data_dir=tmp_path))
    assert "storage-d" in [c.name for c in supervisor.children]
    assert NodeRequests.read(tmp_path).held == []


async def test_the_supervisor_starts_an_added_node_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = Supervisor(ClusterLayout(data_dir=tmp_path))
    # A stand-in process (the real storage node needs etcd): the argv's program swapped.
    monkeypatch.setattr(
        "partita.cli.supervisor.python_argv",
        lambda: [sys.executable, "-c", "import time; time.sleep(30)", "--"],
    )
    NodeRequests(["d"], []).write(tmp_path)
    started = await supervisor.follow_node_requests()
    try:
        assert [c.name for c in started] == ["storage-d"]
        assert started[0].process is not None and started[0].process.returncode is None
        assert await supervisor.follow_node_requests() == []  # already running
        cluster = json.loads((tmp_path / "cluster.json").read_text())
        assert "storage-d" in [p["name"] for p in cluster["processes"]]
    finally:
        for child in started:
            assert child.process is not None
            child.process.kill()
            await asyncio.wait_for(child.process.wait(), 10)


def test_node_hold_refuses_an_unknown_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cluster.json").write_text(
        json.dumps({"processes": [{"name": "storage-a", "role": "storage"}]})
    )
    assert cli.main(["node", "hold", "storage-z", "--data-dir", str(tmp_path)]) == 1
    assert "no storage node storage-z" in capsys.readouterr().err
    assert cli.main(["node", "hold", "storage-a", "--data-dir", str(tmp_path)]) == 0
    assert NodeRequests.read(tmp_path).held == ["storage-a"]
    assert cli.main(["node", "release", "storage-a", "--data-dir", str(tmp_path)]) == 0
    assert NodeRequests.read(tmp_path).held == []


def test_replica_down_after_reaches_the_storage_nodes_of_a_replicated_cluster(tmp_path: Path) -> None:
    argv = (
        ClusterLayout(data_dir=tmp_path, replication_factor=3, replica_down_after=1.5)
        .storage_child(["py"], "a", 0)
        .argv
    )
    assert argv[argv.index("--replica-down-after") + 1] == "1.5"
    single = ClusterLayout(data_dir=tmp_path, replication_factor=1).storage_child(["py"], "a", 0).argv
    assert "--replica-down-after" not in single  # nothing to repair with one replica
    args = cli.build_parser().parse_args(["up", "--replica-down-after", "2"])
    assert args.replica_down_after == 2.0
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["up", "--replica-down-after", "0"])
