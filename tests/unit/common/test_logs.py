"""partita.common.logs: one JSON object per line, extras as fields, a rate-limited logger."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from partita.common import logs
from partita.common.logs import RateLimitedLog


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level, hook = list(root.handlers), root.level, sys.excepthook
    yield
    sys.excepthook = hook
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)


def test_json_lines_carry_level_process_logger_message_and_extras(restore_root: None) -> None:
    out = io.StringIO()
    logs.configure("router", "info", "json", stream=out)
    logging.getLogger("partita.test").info(
        "request %s", "rejected", extra={"request_id": "ABC", "table": "T"}
    )
    logging.getLogger("partita.test").debug("below the level")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["level"] == "info" and record["process"] == "router" and record["logger"] == "partita.test"
    assert record["msg"] == "request rejected"
    assert record["request_id"] == "ABC" and record["table"] == "T"
    assert record["ts"].endswith("+00:00")


def test_a_traceback_stays_inside_its_one_json_line(restore_root: None) -> None:
    out = io.StringIO()
    logs.configure("storage-a", "error", "json", stream=out)
    try:
        raise ValueError("disk on fire")
    except ValueError:
        logging.getLogger("partita.test").exception("commit failed")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["level"] == "error"
    assert "Traceback" in record["exc"] and "ValueError: disk on fire" in record["exc"]


def test_text_format_appends_extras_as_key_value(restore_root: None) -> None:
    out = io.StringIO()
    logs.configure("up", "debug", "text", stream=out)
    logging.getLogger("partita.test").debug("hello", extra={"table": "Orders"})
    assert out.getvalue().rstrip().endswith("hello table='Orders'")
    assert " up partita.test:" in out.getvalue()


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="log level"):
        logs.configure("x", "loud")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_limited_log_lets_a_burst_through_then_the_rate_and_counts_what_it_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    logger = logging.getLogger("partita.test.flood")
    limited = RateLimitedLog(logger, per_second=2.0, burst=3, clock=clock)
    with caplog.at_level(logging.INFO, logger="partita.test.flood"):
        written = [limited.log(logging.INFO, "rejected", {"n": i}) for i in range(10)]
        assert written == [True] * 3 + [False] * 7
        clock.now += 0.5  # one token back
        assert limited.log(logging.INFO, "rejected", {"n": 10})
        assert not limited.log(logging.INFO, "rejected", {"n": 11})
    records = [r for r in caplog.records if r.name == "partita.test.flood"]
    assert len(records) == 4
    assert records[3].suppressed == 7  # the line after the drop says so
    assert limited.suppressed == 1


def test_rate_limited_log_writes_nothing_below_the_level(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("partita.test.quiet")
    limited = RateLimitedLog(logger, clock=FakeClock())
    with caplog.at_level(logging.WARNING, logger="partita.test.quiet"):
        assert not limited.log(logging.INFO, "rejected", {})
    assert limited.suppressed == 0


def test_an_uncaught_exception_is_one_critical_json_line_with_its_traceback(restore_root: None) -> None:
    out = io.StringIO()
    logs.configure("router", "info", "json", stream=out)
    try:
        raise RuntimeError("escaped every handler")
    except RuntimeError as exc:
        sys.excepthook(RuntimeError, exc, exc.__traceback__)
    record = json.loads(out.getvalue())
    assert record["level"] == "critical" and record["logger"] == "partita.crash"
    assert "RuntimeError: escaped every handler" in record["exc"]
