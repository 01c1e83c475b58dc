"""A gRPC connection to the master of one Doorman tree node, shared by the client
library and by servers asking their parent.

A non-master answers with Mastership instead of an error: we switch to the named
master and repeat the call at once, without sleeping (a bounded number of times). A
server that does not know the master, or cannot be reached, makes the call fail with
`Unavailable` and the next call starts from the next configured address; the caller
backs off exponentially between such failures (`Backoff`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import grpc

from partita._proto import doorman_pb2 as pb
from partita._proto import doorman_pb2_grpc

log = logging.getLogger("partita.doorman.connection")

MAX_REDIRECTS = 3
RPC_TIMEOUT_SECONDS = 2.0


class Unavailable(Exception):
    """No master answered this call."""


@dataclass
class Backoff:
    """Exponential back-off between failed calls: 1, 2, 4, ... up to `maximum` s."""

    minimum: float = 1.0
    maximum: float = 60.0
    failures: int = 0

    def failed(self) -> float:
        self.failures += 1
        return float(min(self.maximum, self.minimum * (1 << min(self.failures - 1, 20))))

    def succeeded(self) -> None:
        self.failures = 0


class Connection:
    def __init__(self, addresses: list[str], *, timeout: float = RPC_TIMEOUT_SECONDS) -> None:
        if not addresses:
            raise ValueError("at least one Doorman address is needed")
        self.addresses = list(addresses)
        self.timeout = timeout
        self.current = self.addresses[0]
        self.redirects = 0  # followed so far, for tests and metrics
        self._next = 1
        # One channel per address, kept until close(): callers share the connection (a
        # client's refresh loop and a direct refresh), and closing a channel when one of
        # them moves on would cancel the other's call in flight.
        self._channels: dict[str, tuple[grpc.aio.Channel, Any]] = {}

    def _connect(self, address: str) -> Any:
        self.current = address
        known = self._channels.get(address)
        if known is None:
            channel = grpc.aio.insecure_channel(address)
            known = self._channels[address] = (channel, doorman_pb2_grpc.CapacityStub(channel))  # type: ignore[no-untyped-call]
        return known[1]

    def _rotate(self) -> None:
        """Moves on to the configured address after the one that failed (a master we
        were redirected to may not be in the list: then the next in turn)."""
        if self.current in self.addresses:
            self._next = self.addresses.index(self.current) + 1
        self.current = self.addresses[self._next % len(self.addresses)]
        self._next += 1

    async def call(self, method: str, request: Any) -> Any:
        """Calls `method` on the master; returns its answer (never a Mastership one)."""
        address = self.current
        for _ in range(MAX_REDIRECTS + 1):
            stub = self._connect(address)
            try:
                response = await getattr(stub, method)(request, timeout=self.timeout)
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    raise
                self._rotate()
                raise Unavailable(f"{address}: {exc.code().name} {exc.details()}") from exc
            if not response.HasField("mastership"):
                return response
            mastership: pb.Mastership = response.mastership
            if not mastership.HasField("master_address") or mastership.master_address == address:
                self._rotate()
                raise Unavailable(f"{address} does not know the master")
            log.info("%s is not the master; following it to %s", address, mastership.master_address)
            address = mastership.master_address
            self.redirects += 1
        self._rotate()
        raise Unavailable(f"more than {MAX_REDIRECTS} redirects")

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for channel, _ in channels.values():
            await channel.close()
