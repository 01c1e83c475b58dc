"""The package layout DESIGN.md section 1 fixes: one namespace `partita` over two roots."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_operator_is_still_the_standard_library() -> None:
    import operator

    assert operator.__file__ is not None
    assert Path(operator.__file__).parent == Path(subprocess.__file__).parent
    assert not (ROOT / "operator" / "__init__.py").exists()


def test_partita_namespace_spans_services_and_operator() -> None:
    import partita.autoadmin.reconcile
    import partita.router.app

    assert Path(partita.router.app.__file__).is_relative_to(ROOT / "services")
    assert Path(partita.autoadmin.reconcile.__file__).is_relative_to(ROOT / "operator")


def test_generated_protobuf_code_is_not_committed() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "services/partita/_proto"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [t for t in tracked if "_pb2" in t]


@pytest.mark.integration
def test_built_wheel_holds_both_roots_and_generated_code_and_imports(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("partita-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "partita/router/app.py",
        "partita/storage/node.py",
        "partita/autoadmin/reconcile.py",
        "partita/client/sharding/dynamic.py",
        "partita/autoadmin/kube/handlers.py",
        "partita/_proto/storage_pb2.py",
        "partita/_proto/storage_pb2_grpc.py",
    ):
        assert expected in names
    assert not any(n.startswith("operator/") for n in names)
    # `partita operator` reaches the console script through this entry point.
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert (
        "operator = partita.autoadmin.kube.cli:register" in zipfile.ZipFile(wheel).read(entry_points).decode()
    )
    # Import from the wheel alone: -S skips site (and so the editable install's .pth);
    # the dependencies' directory is added without processing any .pth file.
    # The wheel is unpacked, as an install does (zipimport cannot import namespace packages).
    import sysconfig

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    wheel = site
    probe = (
        "import sys\n"
        f"sys.path[:0] = [{str(site)!r}, {sysconfig.get_paths()['purelib']!r}]\n"
        "import operator, partita.router.app, partita.autoadmin.reconcile, partita._proto.storage_pb2 as pb\n"
        f"assert partita.router.app.__file__.startswith({str(wheel)!r}), partita.router.app.__file__\n"
        f"assert partita.autoadmin.reconcile.__file__.startswith({str(wheel)!r})\n"
        "assert hasattr(operator, 'itemgetter')\n"
        "print(pb.Request(id=7).id)\n"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "7"
