"""Fixtures shared by the storage node's unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from partita.storage.engine import Engine
from partita.storage.node import NodeState
from partita.storage.replica_host import ReplicaHost


@pytest.fixture
async def node_d(tmp_path: Path) -> AsyncIterator[NodeState]:
    """Node "d" with a real engine in tmp_path and a replica host whose messages go nowhere."""
    engine = Engine.open(tmp_path / "d", sync=False)
    state = NodeState("d", "zone-d", engine)
    state.replicas = ReplicaHost("d", engine, lambda envelopes: None)
    yield state
    await engine.close()
