"""`partita up` runs two Doorman servers (master + standby) against its etcd, writes
their configuration, and `partita status` shows which one leads."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from partita.doorman.client import Client
from tests.integration.cluster import running

pytestmark = pytest.mark.integration


def status(data_dir: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "partita.cli.main", "status", "--data-dir", str(data_dir)],
        capture_output=True,
        check=True,
        timeout=60,
    )
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_up_runs_a_doorman_master_and_standby_that_status_reports(tmp_path: Path) -> None:
    with running(tmp_path / "cluster") as cluster:
        assert (cluster.data_dir / "doorman.yaml").exists()
        deadline = time.monotonic() + 30
        while True:
            doorman = status(cluster.data_dir)["doorman"]
            assert isinstance(doorman, list) and len(doorman) == 2
            masters = [d for d in doorman if d.get("is_master")]
            if len(masters) == 1 and all(d.get("master") == masters[0]["address"] for d in doorman):
                break
            assert time.monotonic() < deadline, doorman
            time.sleep(0.2)
        standby = next(d for d in doorman if not d.get("is_master"))

        async def ask_the_standby() -> float:
            # The standby redirects; the master (default "*" capacity 1000) answers,
            # after its 20 s learning mode with nothing to learn: 0 until then.
            async with Client([standby["address"]], "probe") as client:
                rate = client.rate("anything", wants=5)
                await client.refresh()
                assert client.connection.current == masters[0]["address"]
                return rate.capacity

        assert asyncio.run(ask_the_standby()) in (0.0, 5.0)
