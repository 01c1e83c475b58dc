"""On Kubernetes the operator publishes every Table's throughput as Doorman resources
to an etcd key, which the Doorman servers read (`--config-key`, the chart's templates
in `--config` until the key exists): kmock's API server, the real kopf operator, a real
etcd, and a real Doorman server core loading the key."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import aetcd
import pytest

from partita._proto import doorman_pb2 as pb
from partita.doorman.config_source import EtcdSource, FileSource, KeyOverFile
from partita.doorman.server import DoormanServer
from tests.unit.autoadmin.kube.emulator import TABLES, ApiServer, eventually, table_manifest
from tests.unit.autoadmin.kube.test_operator import ServingDirector, _config, _patch, api, operator
from tests.unit.control.conftest import Etcd, etcd  # noqa: F401 (the etcd fixture)
from tests.unit.doorman.test_config_reload import root_server

pytestmark = [pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(150)]
__all__ = ["api"]  # the fixture, imported for pytest

CHART_TEMPLATES = """\
resources:
  - identifier_glob: "batch/*"
    capacity: 50
    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 16, learning_mode_duration: 20}
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 16, learning_mode_duration: 20}
"""


class Asker:
    """A client wanting everything of a resource, on a virtual clock that jumps past
    every lease and learning mode between questions: what the resource grants alone."""

    def __init__(self, server: DoormanServer) -> None:
        self.server, self.now = server, 0.0

    def granted(self, resource: str) -> float:
        request = pb.GetCapacityRequest(
            client_id=f"c-{uuid.uuid4().hex}", resource=[pb.ResourceRequest(resource_id=resource, wants=1e9)]
        )
        answer = 0.0
        for _ in range(2):  # the first may fall in the resource's learning mode
            self.now += 1000.0
            answer = self.server.core.get_capacity(request, self.now).response[0].gets.capacity
        return answer


async def test_tables_throughput_is_published_to_doorman_and_follows_updates_and_deletion(
    api: Any,
    kmock: Any,
    etcd: Etcd,  # noqa: F811
    tmp_path: Path,
) -> None:
    key = f"/partita/doorman/test-{uuid.uuid4().hex[:8]}/config"
    templates = tmp_path / "doorman.yaml"
    templates.write_text(CHART_TEMPLATES)
    base = _config()
    fleet = dataclasses.replace(base.fleet, etcd=f"127.0.0.1:{etcd.port}")
    config = dataclasses.replace(base, fleet=fleet, doorman_config_key=key, doorman_templates=templates)
    # The Doorman server as the chart runs it: the templates until the key exists.
    source = KeyOverFile(EtcdSource("127.0.0.1", etcd.port, key), FileSource(templates))
    server = await root_server(source)
    await server.reload_config()
    granted = Asker(server).granted
    assert granted("table/Orders/wcu") == 1000  # the catch-all, before the operator
    raw = aetcd.Client(host="127.0.0.1", port=etcd.port)

    async def published() -> dict[str, Any]:
        held = await raw.get(key.encode())
        return (
            {}
            if held is None
            else {r["identifier_glob"]: r for r in json.loads(bytes(held.value))["resources"]}
        )

    try:
        async with operator(kmock, ServingDirector(), priority=10, config=config):
            throughput = {"readCapacityUnits": 30, "writeCapacityUnits": 20}
            manifest = table_manifest(
                "orders", billingMode="PROVISIONED", provisionedThroughput=throughput, replicationFactor=1
            )
            await api.post(TABLES, json=manifest)
            await api.post(TABLES, json=table_manifest("events", replicationFactor=1))  # on demand

            async def both() -> dict[str, Any] | None:
                found = await published()
                return found if "table/Orders/wcu" in found and "table/Events/wcu" in found else None

            found = await eventually(both, "both tables' resources in etcd")
            assert found["table/Orders/rcu"]["capacity"] == 30
            assert found["table/Orders/wcu"]["capacity"] == 20
            assert found["table/Events/wcu"]["capacity"] == 4000  # DynamoDB's initial on-demand allowance
            assert found["batch/*"]["capacity"] == 50  # the chart's templates follow
            held = await raw.get(key.encode())
            assert json.loads(bytes(held.value))["resources"][-1]["identifier_glob"] == "*"  # last
            assert await server.reload_config()
            assert granted("table/Orders/wcu") == 20
            assert granted("batch/jobs") == 50

            await _patch(
                api, f"{TABLES}/orders", {"spec": {"provisionedThroughput": {"writeCapacityUnits": 45}}}
            )

            async def raised() -> bool:
                return (await published()).get("table/Orders/wcu", {}).get("capacity") == 45

            await eventually(raised, "the updated throughput in etcd")
            assert await server.reload_config()
            assert granted("table/Orders/wcu") == 45

            await api.delete(f"{TABLES}/events")

            async def gone() -> bool:
                found = await published()
                return "table/Events/wcu" not in found and "table/Orders/wcu" in found

            await eventually(gone, "the deleted table's resources gone")
    finally:
        await raw.close()
        await source.close()
