"""How `partita up` stops its children: the autoadmin, router and Doorman servers one at a
time with SIGTERM, then the storage nodes all at once with SIGINT (the whole cluster is
stopping: each keeps its groups' leadership for the restart instead of handing them to a
node that is stopping too), then etcd."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from partita.cli.supervisor import ClusterLayout, Supervisor

Event = tuple[str, str, Any]


class RecordingProcess:
    """Stands in for a child process: records the signal it gets and when it exits."""

    def __init__(self, name: str, events: list[Event]) -> None:
        self.name, self.events = name, events
        self.returncode: int | None = None
        self.pid = 0

    def send_signal(self, sig: int) -> None:
        self.events.append(("signal", self.name, signal.Signals(sig)))

    def kill(self) -> None:
        self.events.append(("killed", self.name, None))

    async def wait(self) -> int:
        await asyncio.sleep(0.01)  # a child takes a moment to exit
        self.events.append(("exited", self.name, None))
        self.returncode = 0
        return 0


async def test_storage_nodes_are_stopped_together_with_sigint_after_the_front_and_before_etcd(
    tmp_path: Path,
) -> None:
    supervisor = Supervisor(ClusterLayout(tmp_path))
    events: list[Event] = []
    for child in supervisor.children:
        child.process = RecordingProcess(child.name, events)  # type: ignore[assignment]
    await supervisor.stop()

    front = ["autoadmin", "router", "doorman-1", "doorman-0"]
    assert events[: 2 * len(front)] == [
        e for name in front for e in (("signal", name, signal.SIGTERM), ("exited", name, None))
    ]
    storage = events[2 * len(front) : 2 * len(front) + 6]
    # Every storage node is signalled before any has exited: they stop together.
    assert storage[:3] == [("signal", f"storage-{z}", signal.SIGINT) for z in "cba"]
    assert sorted(storage[3:]) == [("exited", f"storage-{z}", None) for z in "abc"]
    assert events[-2:] == [("signal", "etcd", signal.SIGTERM), ("exited", "etcd", None)]
    assert not [e for e in events if e[0] == "killed"]
