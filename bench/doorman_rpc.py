"""How many GetCapacity calls one Doorman server answers, and at what CPU cost.

    python -m bench.doorman_rpc [--clients 1000] [--seconds 10] [--concurrency 32]

Starts `partita doorman --etcd none` (a lone master) on a free loopback port, waits
out its learning mode, then `concurrency` coroutines send GetCapacity for one
resource from `clients` distinct client ids in turn, each id asking again only after
more than the resource's refresh interval (1 s), so every call runs the FAIR_SHARE
algorithm (no repeat-request shortcut). Prints calls per second and the server's CPU
per call (from /proc). Seed 002 asks for at least 1,000 requests per second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from bench.proc_cpu import tree_cpu_seconds
from partita._proto import doorman_pb2 as pb
from partita._proto import doorman_pb2_grpc

CONFIG = """
resources:
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 1, learning_mode_duration: 0}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _load(port: int, clients: int, seconds: float, concurrency: int) -> tuple[int, float]:
    ids = [f"client-{i}" for i in range(clients)]
    next_id = 0
    calls = 0
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = doorman_pb2_grpc.CapacityStub(channel)  # type: ignore[no-untyped-call]
        # Every client asks once first, so the store holds all of them.
        for cid in ids:
            await stub.GetCapacity(
                pb.GetCapacityRequest(client_id=cid, resource=[pb.ResourceRequest(resource_id="r", wants=5)])
            )
        await asyncio.sleep(1.1)  # past the refresh interval: no call below is a repeat
        deadline = time.monotonic() + seconds
        started = time.monotonic()

        async def worker() -> None:
            nonlocal next_id, calls
            while time.monotonic() < deadline:
                cid = ids[next_id % clients]
                next_id += 1
                await stub.GetCapacity(
                    pb.GetCapacityRequest(
                        client_id=cid, resource=[pb.ResourceRequest(resource_id="r", wants=5)]
                    ),
                    timeout=10,
                )
                calls += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return calls, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "doorman.yaml"
        config.write_text(CONFIG)
        server = subprocess.Popen(
            [sys.executable, "-m", "partita.cli.main", "doorman", "--etcd", "none", "--port", str(port),
             "--config", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the Doorman server did not start")
                time.sleep(0.05)
            cpu_before = tree_cpu_seconds(server.pid)
            calls, elapsed = asyncio.run(_load(port, args.clients, args.seconds, args.concurrency))
            cpu = tree_cpu_seconds(server.pid) - cpu_before
        finally:
            server.terminate()
            server.wait(10)
    # cpu includes the warm-up calls (one per client); subtract nothing, report both.
    print(
        f"clients={args.clients} concurrency={args.concurrency}: {calls / elapsed:.0f} GetCapacity/s, "
        f"server CPU {1e6 * cpu / (calls + args.clients):.0f} us/call"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
