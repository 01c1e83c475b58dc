"""The credentials file, its operations, and the router's reloading store."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
from pathlib import Path

import pytest

from partita.router import credentials as creds
from partita.router.credentials import Credential, CredentialsFileError, CredentialStore


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return creds.credentials_path(tmp_path / "data")


def test_generate_is_aws_shaped_and_unique() -> None:
    made = [creds.generate(name="n") for _ in range(200)]
    for c in made:
        assert re.fullmatch(r"AKIA[A-Z0-9]{16}", c.access_key_id)
        assert re.fullmatch(r"[A-Za-z0-9+/]{40}", c.secret_access_key)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", c.created)
        assert c.tables == ("*",)
    assert len({c.access_key_id for c in made}) == 200
    assert len({c.secret_access_key for c in made}) == 200


def test_generate_records_its_inputs() -> None:
    c = creds.generate(name="svc", description="d", tables=["A", "B"], now=0)
    assert (c.name, c.description, c.tables, c.created) == ("svc", "d", ("A", "B"), "1970-01-01T00:00:00Z")


def test_secrets_stay_out_of_repr() -> None:
    c = creds.generate()
    assert c.secret_access_key not in repr(c)


def test_may_access() -> None:
    everything = Credential("AKIA1", "s")
    some = Credential("AKIA2", "s", tables=("Orders", "Customers"))
    none = Credential("AKIA3", "s", tables=())
    assert everything.may_access("Anything")
    assert some.may_access("Orders") and some.may_access("Customers")
    assert not some.may_access("orders")  # table names are case-sensitive
    assert not some.may_access("Other")
    assert not none.may_access("Orders")


def test_round_trip_and_format(path: Path) -> None:
    items = [
        creds.generate(name="a", tables=["T1"]),
        Credential("AKIAX", "secret", name="b", description="with token", session_token="tok", created="x"),
    ]
    creds.save(path, items)
    assert creds.load(path) == items
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    assert doc["credentials"][0]["tables"] == ["T1"]
    assert set(doc["credentials"][1]) == {
        "access_key_id",
        "secret_access_key",
        "name",
        "description",
        "tables",
        "created",
        "session_token",
    }


def test_minimal_hand_written_entry(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text('{"credentials": [{"access_key_id": "AKIAHAND", "secret_access_key": "s3cr3t"}]}')
    (c,) = creds.load(path)
    assert c == Credential("AKIAHAND", "s3cr3t")
    assert c.may_access("Anything")


def test_file_is_private_and_written_atomically(path: Path) -> None:
    creds.save(path, [creds.generate()])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    creds.save(path, [creds.generate(), creds.generate()])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    leftovers = [p.name for p in path.parent.iterdir() if p.name not in (path.name, path.name + ".lock")]
    assert leftovers == []


def test_missing_file_is_empty(path: Path) -> None:
    assert creds.load(path) == []
    assert creds.list_credentials(path) == []


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[]", '"credentials" list'),
        ('{"version": 2, "credentials": []}', "unsupported version"),
        ('{"credentials": [{"access_key_id": "A"}]}', "secret_access_key"),
        ('{"credentials": [{"access_key_id": "A", "secret_access_key": ""}]}', "non-empty"),
        ('{"credentials": [{"access_key_id": "A", "secret_access_key": "s", "tables": "T"}]}', "tables"),
        (
            '{"credentials": [{"access_key_id": "A", "secret_access_key": "s", "session_token": 1}]}',
            "session_token",
        ),
        (
            '{"credentials": [{"access_key_id": "A", "secret_access_key": "s"},'
            ' {"access_key_id": "A", "secret_access_key": "t"}]}',
            "twice",
        ),
    ],
)
def test_malformed_files_are_reported(path: Path, text: str, fragment: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(CredentialsFileError, match=re.escape(fragment)):
        creds.load(path)


def test_add_list_remove(path: Path) -> None:
    a = creds.create_credential(path, name="a")
    b = creds.create_credential(path, name="b", tables=["T"])
    assert creds.list_credentials(path) == [a, b]
    with pytest.raises(CredentialsFileError, match="already exists"):
        creds.add_credential(path, a)
    assert creds.remove_credential(path, a.access_key_id)
    assert not creds.remove_credential(path, a.access_key_id)
    assert creds.list_credentials(path) == [b]
    assert creds.remove_credentials(path, lambda c: c.name == "b") == [b]
    assert creds.list_credentials(path) == []


def test_concurrent_adds_lose_nothing(path: Path) -> None:
    made: list[Credential] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            c = creds.create_credential(path, name="t")
            with lock:
                made.append(c)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {c.access_key_id for c in creds.load(path)} == {c.access_key_id for c in made}
    assert len(made) == 40


# --- CredentialStore -----------------------------------------------------------------


def test_store_lookup(path: Path) -> None:
    a = creds.create_credential(path, name="a")
    store = CredentialStore(path, clock=FakeClock())
    assert store.lookup(a.access_key_id) == a
    assert store.lookup("AKIAUNKNOWN") is None
    assert len(store) == 1


def test_store_from_data_dir(path: Path) -> None:
    a = creds.create_credential(path)
    assert CredentialStore.from_data_dir(path.parent).lookup(a.access_key_id) == a


def test_store_without_a_file_knows_no_keys(path: Path) -> None:
    store = CredentialStore(path, clock=FakeClock())
    assert store.lookup("AKIAANY") is None
    assert len(store) == 0


def test_store_refuses_a_broken_file_at_start(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text("{")
    with pytest.raises(CredentialsFileError):
        CredentialStore(path)


def test_store_reloads_on_change_at_most_once_per_interval(path: Path) -> None:
    clock = FakeClock()
    a = creds.create_credential(path, name="a")
    store = CredentialStore(path, clock=clock)

    b = creds.create_credential(path, name="b")
    clock.t += 0.5
    assert store.lookup(b.access_key_id) is None  # not looked at yet
    clock.t += 0.5
    assert store.lookup(b.access_key_id) == b

    creds.remove_credential(path, a.access_key_id)
    assert store.lookup(a.access_key_id) == a  # within the interval: still the old view
    clock.t += 1.0
    assert store.lookup(a.access_key_id) is None


def test_store_does_not_reparse_an_unchanged_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    creds.create_credential(path)
    store = CredentialStore(path, clock=clock)
    calls = 0
    real_load = creds.load

    def counting_load(p: str | os.PathLike[str]) -> list[Credential]:
        nonlocal calls
        calls += 1
        return real_load(p)

    monkeypatch.setattr(creds, "load", counting_load)
    for _ in range(5):
        clock.t += 1.0
        store.lookup("AKIAANY")
    assert calls == 0


def test_store_keeps_old_keys_when_the_file_breaks(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    a = creds.create_credential(path)
    store = CredentialStore(path, clock=clock)
    path.write_text("{ half a fi")
    clock.t += 1.0
    with caplog.at_level(logging.ERROR):
        assert store.lookup(a.access_key_id) == a
    assert "keeping the previous 1 credentials" in caplog.text
    b = creds.generate()
    creds.save(path, [b])
    clock.t += 1.0
    assert store.lookup(b.access_key_id) == b
    assert store.lookup(a.access_key_id) is None


def test_store_forgets_keys_when_the_file_is_deleted(path: Path) -> None:
    clock = FakeClock()
    a = creds.create_credential(path)
    store = CredentialStore(path, clock=clock)
    path.unlink()
    clock.t += 1.0
    assert store.lookup(a.access_key_id) is None


def test_store_warns_about_a_readable_file(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    creds.create_credential(path)
    os.chmod(path, 0o644)
    with caplog.at_level(logging.WARNING):
        CredentialStore(path)
    assert "readable by other users" in caplog.text


def test_store_reload_now(path: Path) -> None:
    store = CredentialStore(path, clock=FakeClock())
    a = creds.create_credential(path)
    store.reload()
    assert store.lookup(a.access_key_id) == a
    assert store.credentials() == [a]
