"""Structured logs for every Partita process: one JSON object per line.

`configure` sets up the root logger once per process (`--log-level`, `--log-format`):
each line carries the time (UTC, ISO 8601), level, process role, logger, message, and
any fields passed as `extra={...}` (`request_id`, `operation`, `table`, `error_type`
...); an exception's traceback travels in the `exc` field of the same line, so one
event stays one line for `jq` and for log shippers. `--log-format text` gives the
plain human form instead.

`RateLimitedLog` keeps a flood of rejected requests from filling the disk: it lets a
burst through, then one line per refill, and says how many it dropped.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("json", "text")
DEFAULT_LEVEL = "info"
DEFAULT_FORMAT = "json"

# Attributes every LogRecord has; anything else on a record came from `extra`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "process": self.process,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        return orjson.dumps(out, default=str).decode()


class TextFormatter(logging.Formatter):
    """The plain form, with `extra` fields appended as key=value."""

    def __init__(self, process: str) -> None:
        super().__init__("%(asctime)s %(levelname)s " + process + " %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = [
            f"{k}={v!r}" for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")
        ]
        if not fields:
            return text
        first, newline, rest = text.partition("\n")
        return first + " " + " ".join(fields) + newline + rest


def add_flags(parser: argparse.ArgumentParser, fmt: str = DEFAULT_FORMAT) -> None:
    """`--log-level` and `--log-format`, the same on every process."""
    parser.add_argument("--log-level", choices=LEVELS, default=DEFAULT_LEVEL)
    parser.add_argument(
        "--log-format", choices=FORMATS, default=fmt, help="json lines or plain text (%(default)s)"
    )


def configure(
    process: str, level: str = DEFAULT_LEVEL, fmt: str = DEFAULT_FORMAT, stream: TextIO | None = None
) -> None:
    """Send every logger's records at `level` and above to `stream` (stderr), formatted."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}: {level}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter(process) if fmt == "json" else TextFormatter(process))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # A crash outside any handler is one error line with its traceback, like the rest.
    sys.excepthook = _log_uncaught


def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, tb)
        return
    logging.getLogger("partita.crash").critical("uncaught exception", exc_info=(kind, exc, tb))


class RateLimitedLog:
    """A token bucket in front of a logger: `burst` lines at once, then `per_second`.

    Dropped lines are counted and reported on the next line that gets through, as
    `suppressed`, so the log says how much it left out.
    """

    def __init__(
        self,
        logger: logging.Logger,
        per_second: float = 10.0,
        burst: int = 100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._rate = per_second
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._last = clock()
        self.suppressed = 0

    def log(self, level: int, msg: str, extra: dict[str, Any]) -> bool:
        """Log unless over the rate; True when the line was written."""
        if not self._logger.isEnabledFor(level):
            return False
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens < 1.0:
            self.suppressed += 1
            return False
        self._tokens -= 1.0
        if self.suppressed:
            extra = {**extra, "suppressed": self.suppressed}
            self.suppressed = 0
        self._logger.log(level, msg, extra=extra)
        return True
