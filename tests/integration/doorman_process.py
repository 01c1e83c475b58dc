"""One `partita doorman` process on 127.0.0.1 for the Doorman integration tests.

Its two ports are picked free, but under xdist another test may take one before the
process binds it; the process then exits (the metrics port is bound after the gRPC
port, so the gRPC port may even have answered a probe first). A process that exits
while starting is started again on fresh ports, up to three times."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.unit.control.conftest import free_port

START_ATTEMPTS = 3


class DoormanProcess:
    def __init__(self, name: str, tmp: Path, argv: list[str]) -> None:
        self.log = tmp / f"{name}.log"
        for attempt in range(START_ATTEMPTS):
            self.port, self.metrics_port = free_port(), free_port()
            self.address = f"127.0.0.1:{self.port}"
            self.process = self._spawn(name, argv)
            if self._serving():
                return
            assert attempt < START_ATTEMPTS - 1, self.log.read_text()

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.log, "wb") as out:
            return subprocess.Popen(
                [
                    sys.executable, "-m", "partita.cli.main", "doorman",
                    "--server-id", name,
                    "--port", str(self.port),
                    "--metrics-port", str(self.metrics_port),
                    "--election-ttl", "2",
                    *argv,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip

    def _serving(self) -> bool:
        """True once both ports take connections; False if the process exited first."""
        deadline = time.monotonic() + 30
        for port in (self.port, self.metrics_port):
            while True:
                if self.process.poll() is not None:
                    return False
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", port), timeout=0.5),
                ):
                    break
                assert time.monotonic() < deadline, self.log.read_text()
                time.sleep(0.05)
        # Another test's listener on a taken port would have answered the probe too:
        # the process itself must still be up.
        time.sleep(0.2)
        return self.process.poll() is None

    def assert_running(self) -> None:
        assert self.process.poll() is None, self.log.read_text()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
