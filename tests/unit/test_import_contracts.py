"""The import contracts in pyproject.toml ([tool.importlinter]) hold: services never
import the control plane, and the layers cli -> router/storage -> api -> control ->
common only point down. Run here so `make test` enforces them, not only `make lint`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(["services", "operator"]))
    argv = [str(LINT_IMPORTS), "--no-cache"] + (["--config", str(config)] if config else [])
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_every_import_contract_is_kept() -> None:
    result = _lint()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_a_contract_the_code_breaks_is_reported(tmp_path: Path) -> None:
    # Proves the check sees our modules: the router does import common.
    config = tmp_path / "contracts.toml"
    config.write_text(
        "[tool.importlinter]\n"
        'root_packages = ["partita"]\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "router without common"\n'
        'type = "forbidden"\n'
        'source_modules = ["partita.router"]\n'
        'forbidden_modules = ["partita.common"]\n'
    )
    result = _lint(config)
    assert result.returncode == 1
    assert "partita.router" in result.stdout and "BROKEN" in result.stdout
