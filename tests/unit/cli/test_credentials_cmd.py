"""`partita credentials list|add|remove`, driven through argparse as the main CLI does."""

from __future__ import annotations

import argparse
import json
import os
import stat
from pathlib import Path

import pytest

from partita.cli import credentials_cmd
from partita.router import credentials as creds


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="partita")
    credentials_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_add_prints_json_and_exports(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(
        ["credentials", "add", "--data-dir", str(data_dir), "--name", "orders", "--tables", "Orders,Items"]
    )
    assert code == 0
    out = capsys.readouterr().out
    doc_text, _, exports = out.partition("\n}\n")
    doc = json.loads(doc_text + "\n}")
    assert doc["name"] == "orders"
    assert doc["tables"] == ["Orders", "Items"]
    assert exports.splitlines() == [
        f"export AWS_ACCESS_KEY_ID={doc['access_key_id']}",
        f"export AWS_SECRET_ACCESS_KEY={doc['secret_access_key']}",
    ]
    (stored,) = creds.load(creds.credentials_path(data_dir))
    assert stored.access_key_id == doc["access_key_id"]
    assert stored.secret_access_key == doc["secret_access_key"]
    assert stored.tables == ("Orders", "Items")
    assert stat.S_IMODE(os.stat(creds.credentials_path(data_dir)).st_mode) == 0o600


def test_add_json_only(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["credentials", "add", "--data-dir", str(data_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tables"] == ["*"]
    assert set(doc) == {"access_key_id", "secret_access_key", "name", "description", "tables", "created"}


def test_add_env_only(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["credentials", "add", "--data-dir", str(data_dir), "--env"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("=")[0] for line in lines] == [
        "export AWS_ACCESS_KEY_ID",
        "export AWS_SECRET_ACCESS_KEY",
    ]


@pytest.mark.parametrize("tables", ["", "ab", "bad name!", "*,Orders"])
def test_add_rejects_bad_tables(data_dir: Path, tables: str) -> None:
    with pytest.raises(SystemExit) as info:
        run(["credentials", "add", "--data-dir", str(data_dir), "--tables", tables])
    assert info.value.code == 2


def test_list_hides_secrets_unless_asked(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(["credentials", "add", "--data-dir", str(data_dir), "--name", "a", "--json"])
    run(["credentials", "add", "--data-dir", str(data_dir), "--name", "b", "--json"])
    capsys.readouterr()
    assert run(["credentials", "list", "--data-dir", str(data_dir)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in listed] == ["a", "b"]
    assert all("secret_access_key" not in c for c in listed)
    assert run(["credentials", "list", "--data-dir", str(data_dir), "--show-secrets"]) == 0
    assert all(len(c["secret_access_key"]) == 40 for c in json.loads(capsys.readouterr().out))


def test_list_of_nothing(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["credentials", "list", "--data-dir", str(data_dir)]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_remove_by_key_and_by_name(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = creds.credentials_path(data_dir)
    a = creds.create_credential(path, name="a")
    creds.create_credential(path, name="b")
    creds.create_credential(path, name="b")
    assert run(["credentials", "remove", "--data-dir", str(data_dir), a.access_key_id]) == 0
    assert json.loads(capsys.readouterr().out) == {"removed": [a.access_key_id]}
    assert run(["credentials", "remove", "--data-dir", str(data_dir), "--name", "b"]) == 0
    assert len(json.loads(capsys.readouterr().out)["removed"]) == 2
    assert creds.load(path) == []


def test_remove_unknown_fails(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["credentials", "remove", "--data-dir", str(data_dir), "AKIANOPE"]) == 1
    err = json.loads(capsys.readouterr().err)
    assert err == {"error": "no credential with access key AKIANOPE"}


@pytest.mark.parametrize("argv", [[], ["AKIA1", "--name", "x"]])
def test_remove_needs_exactly_one_selector(
    data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert run(["credentials", "remove", "--data-dir", str(data_dir), *argv]) == 1
    assert "either an access key id or --name" in capsys.readouterr().err


def test_broken_file_is_an_error(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir.mkdir()
    creds.credentials_path(data_dir).write_text("{")
    assert run(["credentials", "list", "--data-dir", str(data_dir)]) == 1
    assert "not valid JSON" in json.loads(capsys.readouterr().err)["error"]
    assert run(["credentials", "add", "--data-dir", str(data_dir)]) == 1


def test_default_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(["credentials", "add", "--json"]) == 0
    assert (tmp_path / ".partita" / "credentials.json").exists()


def test_bare_credentials_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["credentials"]) == 2
    assert "list,add,remove" in capsys.readouterr().err
