"""Suite-wide guard: compiled modules must match their source.

`make native` compiles the modules in native-modules.txt next to their .py files, and
Python imports the compiled one first. A .py edited after the last build would then go
untested: refuse to run rather than test stale code.
"""

from __future__ import annotations

import faulthandler
import os
import sys
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


# Seconds past a test's own timeout before the worker is ended. pytest-timeout's signal
# method fails a test by raising in the main thread; a test stuck where that cannot
# reach (in C code, or in a teardown after the timeout already fired) would otherwise
# stall the whole run with no word of where. The backstop prints every thread's stack
# and ends the worker; pytest-xdist reports the test as failed and starts another.
HARD_STOP_GRACE = 240.0


def _test_timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getoption("timeout", None) or 0)


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
