"""`partita operator` as a real process: it logs in through a kubeconfig (as it would
from a laptop), reconciles a Table on kmock's in-memory API server, and stops cleanly
on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from partita.autoadmin.kube import naming
from tests.unit.autoadmin.kube.emulator import (
    NS,
    TABLES,
    ApiServer,
    create_peering,
    eventually,
    partitions_of,
    register_resources,
    table_manifest,
)

pytestmark = [pytest.mark.integration, pytest.mark.kmock(cls=ApiServer), pytest.mark.timeout(120)]
STOP_TIMEOUT = 30.0


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
        f"clusters: [{{name: test, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: test, user: {token: not-checked}}]\n"
        "contexts: [{name: test, context: {cluster: test, user: test, namespace: db}}]\n"
    )
    return path


async def test_operator_process_reconciles_and_stops_on_sigterm(kmock: Any, tmp_path: Path) -> None:
    register_resources(kmock)
    env = {**os.environ, "KUBECONFIG": str(_kubeconfig(tmp_path / "kubeconfig", str(kmock.url)))}
    env.pop("POD_NAMESPACE", None)
    async with aiohttp.ClientSession(base_url=str(kmock.url)) as api:
        await create_peering(api)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "partita.cli.main", "operator",
            f"--namespace={NS}", "--release=pt", "--image=partita:test", "--resync-seconds=0.5",
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            await api.post(TABLES, json=table_manifest("proc"))

            async def four() -> Any:
                parts = await partitions_of(api, "proc")
                return parts if len(parts) == 4 else None

            parts = await eventually(four, "the operator process to create partitions")
            sets = await (await api.get(f"/apis/apps/v1/namespaces/{NS}/statefulsets")).json()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                _, stderr = await asyncio.wait_for(proc.communicate(), STOP_TIMEOUT)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                raise AssertionError("the operator did not stop within 30 s of SIGTERM") from None

    assert all(p["metadata"]["labels"][naming.TABLE_LABEL] == "proc" for p in parts)
    assert len(sets["items"]) == 3
    assert proc.returncode == 0, stderr.decode()[-2000:]
