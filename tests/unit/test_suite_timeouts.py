"""The suite's own timeouts (tests/conftest.py), proved on throwaway test files run by
pytest in a subprocess, as `make test` runs the suite: two xdist workers, loadgroup,
`--max-worker-restart 0`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = "from tests.conftest import *  # noqa: F403\n"
PYTEST_INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"


def _run(tmp_path: Path, tests: str) -> str:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text(PYTEST_INI)
    (tmp_path / "test_throwaway.py").write_text(tests)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PARTITA_TEST_HARD_STOP_GRACE": "3"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "--max-worker-restart", "0", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.stdout + done.stderr


def test_an_asyncio_test_past_its_timeout_fails_even_while_another_task_holds_the_loop(
    tmp_path: Path,
) -> None:
    # pytest-timeout's alarm raises wherever the main thread is: here in the busy task,
    # whose failure nobody awaits, so without the in-loop timeout the test ran on.
    out = _run(
        tmp_path,
        """
import asyncio, time, pytest

@pytest.mark.timeout(3)
async def test_stuck():
    async def busy():
        while True:
            started = time.monotonic()
            while time.monotonic() - started < 0.05:
                pass
            await asyncio.sleep(0)
    task = asyncio.create_task(busy())
    try:
        await asyncio.sleep(100)
    finally:
        task.cancel()

async def test_next():
    await asyncio.sleep(0)
""",
    )
    assert "Timeout: still running after 3 s" in out, out
    assert "1 failed, 1 passed" in out, out
    assert "crashed" not in out, out


def test_a_test_no_timeout_reaches_ends_its_worker_with_its_stacks_and_the_run_ends(
    tmp_path: Path,
) -> None:
    out = _run(
        tmp_path,
        """
import signal, time, pytest

@pytest.mark.timeout(1)
def test_stuck():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])  # the alarm never lands
    time.sleep(60)

def test_next():
    time.sleep(0.5)
""",
    )
    assert "Timeout (0:00:04)!" in out and "in test_stuck" in out, out  # faulthandler's stacks
    assert "worker 'gw" in out and "crashed while running 'test_throwaway.py::test_stuck'" in out, out
    assert "1 failed" in out, out
