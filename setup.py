"""Generates the protobuf/gRPC modules from proto/ whenever the package is built, and
compiles the router's hot path with mypyc when PARTITA_COMPILE=1.

Configuration lives in pyproject.toml; this file only hooks code generation into
`build_py` (wheels, the Docker image) and `editable_wheel` (pip install -e .), and
declares the compiled modules (`native-modules.txt`; `make native` builds them in place).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT / "services"))


def _generate() -> None:
    from partita.common.proto_codegen import generate

    generate(ROOT)


class BuildPyWithProto(build_py):
    def run(self) -> None:
        _generate()
        super().run()


cmdclass: dict[str, type] = {"build_py": BuildPyWithProto}

try:
    from setuptools.command.editable_wheel import editable_wheel

    class EditableWheelWithProto(editable_wheel):
        def run(self) -> None:
            _generate()
            super().run()

    cmdclass["editable_wheel"] = EditableWheelWithProto
except ImportError:  # pragma: no cover - old setuptools
    pass


def _package_layout() -> tuple[list[str], dict[str, str]]:
    """Every package under services/partita and operator/partita, mapped to its root.

    `partita` is one PEP 420 namespace spread over two source roots; setuptools'
    finder cannot map one namespace to two directories, so each subpackage is mapped
    explicitly ("partita.router" -> "services/partita/router", ...).
    """
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for root in ("services", "operator"):
        base = ROOT / root / "partita"
        if not base.is_dir():
            continue
        for init in sorted(base.rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / root)
            name = ".".join(rel.parts)
            packages.append(name)
            package_dir[name] = str(Path(root) / rel)
    # The generated modules are created by build_py; declare the package up front.
    if "partita._proto" not in packages:
        packages.append("partita._proto")
        package_dir["partita._proto"] = "services/partita/_proto"
    return packages, package_dir


def _native_extensions() -> list[Any]:
    """mypyc extensions for the modules in native-modules.txt, if asked for.

    The shared runtime goes inside a regular package (partita.router), where the
    editable install can import it; a top-level module would not be on its path.
    """
    if os.environ.get("PARTITA_COMPILE") != "1":
        return []
    from mypyc.build import mypycify

    listed = (ROOT / "native-modules.txt").read_text().splitlines()
    paths = [line.strip() for line in listed if line.strip() and not line.startswith("#")]
    return list(mypycify(paths, opt_level="3", group_name="partita.router._native"))


_packages, _package_dir = _package_layout()
setup(
    cmdclass=cmdclass,
    packages=_packages,
    package_dir=_package_dir,
    ext_modules=_native_extensions(),
)
