"""A root server reloads its configuration from a file or an etcd key when it
changes, and keeps the previous one when the new one is invalid or gone."""

from __future__ import annotations

import uuid
from pathlib import Path

import aetcd
import pytest

from partita._proto import doorman_pb2 as pb
from partita.doorman.config_source import ConfigSource, EtcdSource, FileSource, KeyOverFile
from partita.doorman.core import ServerCore
from partita.doorman.election import InMemoryElection, InMemoryLock
from partita.doorman.main import initial_repository, serve
from partita.doorman.server import DoormanServer
from tests.unit.control.conftest import Etcd


def config(capacity: float) -> str:
    return (
        "resources:\n"
        "  - identifier_glob: '*'\n"
        f"    capacity: {capacity}\n"
        "    algorithm: {kind: STATIC, lease_length: 10, refresh_interval: 1, learning_mode_duration: 0}\n"
    )


async def root_server(source: ConfigSource) -> DoormanServer:
    """A lone root server, master from time 0, loading its configuration from `source`."""
    server = DoormanServer(
        ServerCore("root", await initial_repository(source)),
        InMemoryElection(InMemoryLock(), "x"),
        config=source,
    )
    server.core.on_election(True, "x", 0.0)
    return server


def capacity_for(server: DoormanServer, resource: str) -> float:
    request = pb.GetCapacityRequest(
        client_id=f"c-{uuid.uuid4().hex}", resource=[pb.ResourceRequest(resource_id=resource, wants=1e9)]
    )
    return server.core.get_capacity(request, 1.0).response[0].gets.capacity


async def test_a_changed_file_is_loaded_and_an_invalid_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "doorman.yaml"
    path.write_text(config(10))
    source = FileSource(path)
    server = await root_server(source)
    assert capacity_for(server, "r") == 10
    path.write_text(config(25))
    assert await server.reload_config()
    assert capacity_for(server, "r") == 25
    assert not await server.reload_config()  # unchanged: nothing to do
    path.write_text("resources: [{identifier_glob: a, capacity: 1}]")  # no "*", no algorithm
    assert not await server.reload_config()
    assert capacity_for(server, "r") == 25
    path.unlink()
    assert not await server.reload_config()
    assert capacity_for(server, "r") == 25


async def test_a_root_server_refuses_to_start_without_a_valid_configuration(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no Doorman configuration"):
        await initial_repository(FileSource(tmp_path / "missing.yaml"))
    (tmp_path / "bad.yaml").write_text("resources: []")
    with pytest.raises(SystemExit, match="invalid Doorman configuration"):
        await initial_repository(FileSource(tmp_path / "bad.yaml"))


async def test_the_configuration_can_live_in_etcd(etcd: Etcd) -> None:
    key = f"/partita/doorman/test-{uuid.uuid4().hex[:8]}/config"
    raw = aetcd.Client(host="127.0.0.1", port=etcd.port)
    await raw.put(key.encode(), config(7).encode())
    source = EtcdSource("127.0.0.1", etcd.port, key)
    server = await root_server(source)
    assert await server.reload_config()  # first look records the revision
    assert capacity_for(server, "r") == 7
    await raw.put(key.encode(), config(70).encode())
    assert await server.reload_config()
    assert capacity_for(server, "r") == 70
    await raw.put(key.encode(), b"not: [valid")
    assert not await server.reload_config()
    assert capacity_for(server, "r") == 70
    await raw.close()
    await source.close()


async def test_a_key_over_a_file_serves_the_file_until_the_key_exists_and_the_key_after(
    etcd: Etcd, tmp_path: Path
) -> None:
    # On Kubernetes: the chart's templates (the file) from the start, the operator's
    # key (every table's resources) once it writes it.
    key = f"/partita/doorman/test-{uuid.uuid4().hex[:8]}/config"
    path = tmp_path / "doorman.yaml"
    path.write_text(config(3))
    source = KeyOverFile(EtcdSource("127.0.0.1", etcd.port, key), FileSource(path))
    server = await root_server(source)
    assert await server.reload_config()  # first look records the version
    assert capacity_for(server, "r") == 3
    raw = aetcd.Client(host="127.0.0.1", port=etcd.port)
    await raw.put(key.encode(), config(30).encode())
    assert await server.reload_config()
    assert capacity_for(server, "r") == 30
    path.write_text(config(4))  # the key wins while it exists
    assert not await server.reload_config()
    assert capacity_for(server, "r") == 30
    await raw.delete(key.encode())
    assert await server.reload_config()
    assert capacity_for(server, "r") == 4
    await raw.close()
    await source.close()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({}, "needs --config and/or --config-key"),
        ({"config_path": Path("x.yaml"), "parent": ["p:1"]}, "needs --config and/or --config-key"),
        ({"config_key": "/k", "etcd": None}, "--config-key needs --etcd"),
    ],
)
async def test_a_server_is_a_root_with_a_configuration_or_a_child_with_a_parent(
    given: dict[str, object], message: str
) -> None:
    kwargs: dict[str, object] = {
        "server_id": "s", "host": "127.0.0.1", "port": 0, "metrics_port": None, "config_path": None,
        "parent": None, "etcd": None, "election_name": "root",
    }  # fmt: skip
    kwargs.update(given)
    with pytest.raises(SystemExit, match=message):
        await serve(**kwargs)  # type: ignore[arg-type]
