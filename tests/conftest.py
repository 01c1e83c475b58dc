"""Suite-wide guards: compiled modules must match their source, and a test past its
timeout ends (below).

`make native` compiles the modules in native-modules.txt next to their .py files, and
Python imports the compiled one first. A .py edited after the last build would then go
untested: refuse to run rather than test stale code.
"""

from __future__ import annotations

import asyncio
import faulthandler
import functools
import inspect
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import pytest

ROOT = Path(__file__).resolve().parent.parent


def stale_compiled_modules(root: Path = ROOT) -> list[str]:
    stale = []
    for compiled in root.glob("services/**/*.so"):
        source = compiled.with_name(compiled.name.split(".", 1)[0] + ".py")
        if source.exists() and source.stat().st_mtime > compiled.stat().st_mtime:
            stale.append(str(source.relative_to(root)))
    return sorted(stale)


_REAL_STDERR = pytest.StashKey[TextIO]()


def pytest_configure(config: pytest.Config) -> None:
    # The real stderr, kept before pytest captures fd 2 around each test: the
    # backstop below writes to it from a test that may never return.
    config.stash[_REAL_STDERR] = os.fdopen(os.dup(sys.__stderr__.fileno()), "w")
    stale = stale_compiled_modules()
    if stale:
        pytest.exit(
            f"compiled modules are older than their source ({', '.join(stale)}): "
            "run `make native` to rebuild them, or `make pure` to test the source alone",
            returncode=2,
        )


# A test's timeout has three layers, each for what the one before cannot reach.
#
# 1. An asyncio test runs under `asyncio.timeout` at IN_LOOP_SHARE of its timeout: its
#    own task is cancelled, so its cleanup runs. pytest-timeout's signal method alone
#    raises wherever the main thread happens to be: in an asyncio test that is often
#    another task (kmock's request handler, a server's), which swallows the exception
#    as that task's result, and the test ran on forever (seen in a local run: the
#    likely cause of the CI run that never finished).
# 2. pytest-timeout's signal, at the timeout: a test blocked in synchronous code.
# 3. HARD_STOP_GRACE seconds later, faulthandler prints every thread's stack and ends
#    the worker: a test stuck where no exception reaches (C code, or a teardown after
#    the timeout fired). pytest-xdist reports it failed; `make test` passes
#    `--max-worker-restart 0`, as pytest-xdist 3.8's loadgroup scheduling hangs when
#    it replaces a crashed worker (pytest-xdist issue 1323): the other worker finishes
#    the run.
IN_LOOP_SHARE = 0.85
HARD_STOP_GRACE = float(os.environ.get("PARTITA_TEST_HARD_STOP_GRACE", "240"))


def _test_timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getoption("timeout", None) or 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        test = getattr(item, "obj", None)
        timeout = _test_timeout(item)
        if inspect.iscoroutinefunction(test) and timeout > 0:
            item.obj = _in_loop_timeout(test, timeout * IN_LOOP_SHARE)


def _in_loop_timeout(test: Callable[..., Awaitable[Any]], seconds: float) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(test)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await test(*args, **kwargs)
        except TimeoutError:
            if deadline.expired():
                pytest.fail(f"Timeout: still running after {seconds:.0f} s (its task was cancelled)")
            raise

    return bounded


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    timeout = _test_timeout(item)
    if timeout <= 0:
        yield
        return
    out = item.config.stash[_REAL_STDERR]
    faulthandler.dump_traceback_later(timeout + HARD_STOP_GRACE, exit=True, file=out)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
