"""The image's Dockerfile (no Docker daemon here: the wheel it installs is built and
installed in a scratch venv by hand, see docs/kubernetes.md; this checks its shape)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stages() -> list[list[str]]:
    stages: list[list[str]] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("FROM "):
            stages.append([])
        if stages and line.strip() and not line.lstrip().startswith("#"):
            stages[-1].append(line)
    return stages


def test_two_stages_and_the_compiler_only_in_the_first() -> None:
    build, final = _stages()
    assert any("gcc" in line for line in build)
    assert not any("gcc" in line or "apt-get" in line or "build-essential" in line for line in final)
    assert any("--mount=type=bind,from=build" in line for line in final)


def test_final_stage_runs_partita_as_a_numeric_non_root_user() -> None:
    final = _stages()[-1]
    (user,) = [line for line in final if line.startswith("USER ")]
    uid = user.split()[1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    assert 'ENTRYPOINT ["partita"]' in final


def test_the_chart_and_the_storage_pods_run_the_image_user() -> None:
    from partita.autoadmin.kube.builders import RUN_AS

    (user,) = [line for line in _stages()[-1] if line.startswith("USER ")]
    uid = int(user.split()[1].split(":")[0])
    assert uid == RUN_AS
    assert f"runAsUser: {uid}" in (ROOT / "charts" / "partita" / "values.yaml").read_text()
