"""Generates the protobuf/gRPC modules from proto/ whenever the package is built, and
compiles the router's hot path with mypyc when PARTITA_COMPILE=1.

Configuration lives in pyproject.toml; this file only hooks code generation into
`build_py` (wheels, the Docker image) and `editable_wheel` (pip install -e .), and
declares the compiled modules (`native-modules.txt`; `make native` builds them in place).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext
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


class BuildExtInParallel(build_ext):
    """Compiles an extension's C files side by side, one compiler per core.

    mypyc writes one C file per module (`multi_file`), and setuptools compiles an
    extension's files one after another: most of `make native`'s time, on every fresh
    clone's `make test`.
    """

    def build_extensions(self) -> None:
        compiler: Any = self.compiler

        def compile_all(
            sources: list[str],
            output_dir: str | None = None,
            macros: Any = None,
            include_dirs: Any = None,
            debug: bool = False,
            extra_preargs: Any = None,
            extra_postargs: Any = None,
            depends: Any = None,
        ) -> list[str]:
            macros, objects, extra, pp_opts, build = compiler._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs
            )
            cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

            def compile_one(obj: str) -> None:
                if obj in build:  # absent: up to date
                    src, ext = build[obj]
                    compiler._compile(obj, src, ext, cc_args, extra, pp_opts)

            with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
                list(pool.map(compile_one, objects))
            return list(objects)

        compiler.compile = compile_all
        super().build_extensions()


cmdclass: dict[str, type] = {"build_py": BuildPyWithProto, "build_ext": BuildExtInParallel}

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
    # One C file per module: gcc at -O3 takes far longer over one file of them all, and
    # the files compile in parallel (BuildExtInParallel).
    extensions = list(mypycify(paths, opt_level="3", group_name="partita.router._native", multi_file=True))
    for extension in extensions:
        # mypyc writes a dotted group's shared header under the group's package, and
        # includes it from files it writes at the top of build/.
        extension.include_dirs.append("build/partita/router")
    return extensions


_packages, _package_dir = _package_layout()
setup(
    cmdclass=cmdclass,
    packages=_packages,
    package_dir=_package_dir,
    ext_modules=_native_extensions(),
)
