"""Ports for the processes a test starts on 127.0.0.1.

A port asked of the kernel (bind to 0) lies in Linux's ephemeral range (32768-60999),
and once the probing socket is closed any outgoing connection or port-0 listener of a
parallel test may take it before the child process binds it: a Doorman server of
stop 25's CI run died so. Ports are therefore picked at random below that range, where
only another test's explicit pick can collide, and checked free first."""

from __future__ import annotations

import os
import random
import socket
import time

EPHEMERAL_START = 32768
LOWEST = 20000
_RNG = random.Random(os.getpid() ^ time.monotonic_ns())


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    for _ in range(200):
        port = _RNG.randrange(LOWEST, EPHEMERAL_START)
        if port_is_free(port):
            return port
    raise RuntimeError("no free port below the ephemeral range")
