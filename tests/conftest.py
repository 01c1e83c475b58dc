"""Suite-wide guard: compiled modules must match their source.

`make native` compiles the modules in native-modules.txt next to their .py files, and
Python imports the compiled one first. A .py edited after the last build would then go
untested: refuse to run rather than test stale code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def stale_compiled_modules(root: Path = ROOT) -> list[str]:
    stale = []
    for compiled in root.glob("services/**/*.so"):
        source = compiled.with_name(compiled.name.split(".", 1)[0] + ".py")
        if source.exists() and source.stat().st_mtime > compiled.stat().st_mtime:
            stale.append(str(source.relative_to(root)))
    return sorted(stale)


def pytest_configure(config: pytest.Config) -> None:
    stale = stale_compiled_modules()
    if stale:
        pytest.exit(
            f"compiled modules are older than their source ({', '.join(stale)}): "
            "run `make native` to rebuild them, or `make pure` to test the source alone",
            returncode=2,
        )
