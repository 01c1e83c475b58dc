"""The test clusters' port layouts: a layout taken between its choice and `partita up`
binding it is replaced by another, instead of failing every test of the fixture."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.integration import cluster as cluster_module
from tests.integration.cluster import running

pytestmark = [pytest.mark.integration]


def test_a_cluster_whose_ports_were_taken_meanwhile_starts_on_another_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[dict[str, int]] = []
    real_layout = cluster_module.free_port_layout
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()

    def layout() -> dict[str, int]:
        ports = real_layout()
        if not chosen:  # another process listens on the first layout's etcd port by now
            ports = {**ports, "etcd": squatter.getsockname()[1]}
        chosen.append(ports)
        return ports

    monkeypatch.setattr(cluster_module, "free_port_layout", layout)
    with squatter, running(tmp_path / "cluster") as c:
        assert len(chosen) == 2
        assert "is already in use" in c.read_log()
        assert c.ports == chosen[1]
        assert c.client().list_tables()["TableNames"] == []


def test_a_process_that_could_not_bind_its_port_counts_as_a_port_taken(tmp_path: Path) -> None:
    # The layout was free when `partita up` checked it, then taken before a storage node
    # bound its port: that node's log says so, and the start is retried elsewhere too.
    c = cluster_module.Cluster(tmp_path, cluster_module.free_port_layout())
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "storage-a.log").write_text("starting\n")
    assert not c._port_clash("storage-a exited with code 1")
    (tmp_path / "logs" / "storage-a.log").write_text(
        "Failed to add port to server: ... (Error in bind for address ...: Address already in use)\n"
    )
    assert c._port_clash("storage-a exited with code 1")
    # A /metrics listener (uvloop) words it in lower case.
    (tmp_path / "logs" / "storage-a.log").write_text(
        "OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1', 26315): "
        "address already in use\n"
    )
    assert c._port_clash("storage-a exited with code 1")
