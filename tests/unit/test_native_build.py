"""The router's hot path is compiled with mypyc (native-modules.txt) and still plain
Python: what the list names must exist, and `make test` must run the compiled code."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, stale_compiled_modules


def _listed() -> list[str]:
    lines = (ROOT / "native-modules.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _module_name(path: str) -> str:
    return path.removeprefix("services/").removesuffix(".py").replace("/", ".")


def test_every_listed_module_is_a_source_file_listed_once() -> None:
    listed = _listed()
    assert listed and len(listed) == len(set(listed))
    for path in listed:
        assert (ROOT / path).is_file(), path
        assert path.startswith("services/partita/") and path.endswith(".py"), path


@pytest.mark.skipif(os.environ.get("PARTITA_EXPECT_NATIVE") != "1", reason="set by `make test`")
def test_make_test_runs_the_compiled_modules() -> None:
    for path in _listed():
        origin = importlib.import_module(_module_name(path)).__spec__.origin  # type: ignore[union-attr]
        assert origin is not None
        assert origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), f"{path} runs from {origin}"


def test_a_source_edited_after_the_build_is_reported_stale(tmp_path: Path) -> None:
    package = tmp_path / "services" / "partita"
    package.mkdir(parents=True)
    compiled = package / "fast.cpython-311-x86_64-linux-gnu.so"
    source = package / "fast.py"
    source.write_text("x = 1\n")
    compiled.write_bytes(b"")
    now = time.time()
    os.utime(source, (now - 10, now - 10))
    assert stale_compiled_modules(tmp_path) == []
    os.utime(source, (now + 10, now + 10))
    assert stale_compiled_modules(tmp_path) == ["services/partita/fast.py"]
