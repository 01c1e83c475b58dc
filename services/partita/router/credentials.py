"""Access keys: the `credentials.json` file, its operations, and the router's live view.

File format (documented for operators in docs/credentials.md)::

    {
      "version": 1,
      "credentials": [
        {
          "access_key_id": "AKIA...",          # "AKIA" + 16 of [A-Z0-9]
          "secret_access_key": "...",          # 40 characters
          "name": "orders-service",
          "description": "",
          "tables": ["Orders", "Customers"],   # or ["*"] for every table
          "created": "2026-11-21T05:38:00Z",
          "session_token": null                 # optional; see Credential
        }
      ]
    }

The file holds secrets, so it is written 0600 by an atomic replace (temp file, fsync,
rename, fsync of the directory): a reader sees the old file or the new one, never a
torn one, which is what lets a running router pick up changes by polling its mtime.
Read-modify-write operations hold an advisory lock (`credentials.json.lock`) so two
`partita credentials add` runs cannot lose each other's key.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import stat
import string
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FILE_NAME = "credentials.json"
FORMAT_VERSION = 1
ALL_TABLES = "*"

# How often CredentialStore stats the file: keys added with the CLI take effect within
# this long, and a router under load pays one stat() per second, not one per request.
RELOAD_INTERVAL_S = 1.0

_KEY_ALPHABET = string.ascii_uppercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits + "+/"


class CredentialsFileError(ValueError):
    """The credentials file exists but cannot be used as it is."""


@dataclass(frozen=True, slots=True)
class Credential:
    """One access key and what it may touch.

    `session_token`, when set, must also arrive as X-Amz-Security-Token; a plain key
    (the usual case) ignores any token a client sends, as SDKs configured with
    temporary credentials elsewhere may send one.
    """

    access_key_id: str
    secret_access_key: str = field(repr=False)
    name: str = ""
    description: str = ""
    tables: tuple[str, ...] = (ALL_TABLES,)
    created: str = ""
    session_token: str | None = field(default=None, repr=False)

    def may_access(self, table_name: str) -> bool:
        return ALL_TABLES in self.tables or table_name in self.tables

    def to_json(self) -> dict[str, Any]:
        return {
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "name": self.name,
            "description": self.description,
            "tables": list(self.tables),
            "created": self.created,
            "session_token": self.session_token,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Credential:
        if not isinstance(raw, dict):
            raise CredentialsFileError(f"a credential must be an object, got {type(raw).__name__}")
        try:
            key, secret = raw["access_key_id"], raw["secret_access_key"]
        except KeyError as e:
            raise CredentialsFileError(f"a credential is missing {e.args[0]!r}") from None
        if not isinstance(key, str) or not key or not isinstance(secret, str) or not secret:
            raise CredentialsFileError("access_key_id and secret_access_key must be non-empty strings")
        tables = raw.get("tables", [ALL_TABLES])
        if not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
            raise CredentialsFileError(f'{key}: tables must be a list of table names or ["*"]')
        token = raw.get("session_token")
        if token is not None and not isinstance(token, str):
            raise CredentialsFileError(f"{key}: session_token must be a string or null")
        return cls(
            access_key_id=key,
            secret_access_key=secret,
            name=str(raw.get("name", "")),
            description=str(raw.get("description", "")),
            tables=tuple(tables),
            created=str(raw.get("created", "")),
            session_token=token,
        )

    def public_json(self) -> dict[str, Any]:
        """What `credentials list` shows: everything but the secrets."""
        out = self.to_json()
        del out["secret_access_key"]
        del out["session_token"]
        return out


def credentials_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / FILE_NAME


def _iso_utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def generate(
    *,
    name: str = "",
    description: str = "",
    tables: Iterable[str] = (ALL_TABLES,),
    now: float | None = None,
) -> Credential:
    """A fresh AWS-shaped key pair: "AKIA" + 16 of [A-Z0-9], and a 40-character secret.

    The secret carries 240 bits from `secrets`; the key id only needs to be unique, but
    comes from `secrets` too so key ids reveal nothing about each other.
    """
    return Credential(
        access_key_id="AKIA" + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(16)),
        secret_access_key="".join(secrets.choice(_SECRET_ALPHABET) for _ in range(40)),
        name=name,
        description=description,
        tables=tuple(tables),
        created=_iso_utc(time.time() if now is None else now),
    )


def parse(text: str | bytes) -> list[Credential]:
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise CredentialsFileError(f"not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("credentials"), list):
        raise CredentialsFileError('expected an object with a "credentials" list')
    version = doc.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise CredentialsFileError(f"unsupported version {version!r} (this Partita reads {FORMAT_VERSION})")
    creds = [Credential.from_json(raw) for raw in doc["credentials"]]
    seen: set[str] = set()
    for c in creds:
        if c.access_key_id in seen:
            raise CredentialsFileError(f"access key {c.access_key_id} appears twice")
        seen.add(c.access_key_id)
    return creds


def load(path: str | os.PathLike[str]) -> list[Credential]:
    """The credentials in `path`; a missing file is an empty list."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    try:
        return parse(data)
    except CredentialsFileError as e:
        raise CredentialsFileError(f"{path}: {e}") from None


def dumps(credentials: Iterable[Credential]) -> str:
    doc = {"version": FORMAT_VERSION, "credentials": [c.to_json() for c in credentials]}
    return json.dumps(doc, indent=2) + "\n"


def save(path: str | os.PathLike[str], credentials: Iterable[Credential]) -> None:
    """Replace `path` atomically with these credentials, mode 0600."""
    target = Path(path)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = dumps(credentials).encode("utf-8")
    # mkstemp creates the file 0600 already; the secret is never world-readable.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    # The rename is durable only once the directory entry is.
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the advisory lock that serialises read-modify-write of `path`."""
    target = Path(path)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(f"{target}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def list_credentials(path: str | os.PathLike[str]) -> list[Credential]:
    return load(path)


def add_credential(path: str | os.PathLike[str], credential: Credential) -> None:
    with locked(path):
        creds = load(path)
        if any(c.access_key_id == credential.access_key_id for c in creds):
            raise CredentialsFileError(f"access key {credential.access_key_id} already exists")
        creds.append(credential)
        save(path, creds)


def create_credential(
    path: str | os.PathLike[str],
    *,
    name: str = "",
    description: str = "",
    tables: Iterable[str] = (ALL_TABLES,),
) -> Credential:
    """Generate a key pair, store it, and return it (the only time the secret is shown)."""
    cred = generate(name=name, description=description, tables=tables)
    add_credential(path, cred)
    return cred


def remove_credentials(path: str | os.PathLike[str], match: Callable[[Credential], bool]) -> list[Credential]:
    """Remove every credential `match` accepts; return the removed ones."""
    with locked(path):
        creds = load(path)
        keep = [c for c in creds if not match(c)]
        gone = [c for c in creds if match(c)]
        if gone:
            save(path, keep)
        return gone


def remove_credential(path: str | os.PathLike[str], access_key_id: str) -> bool:
    return bool(remove_credentials(path, lambda c: c.access_key_id == access_key_id))


class CredentialStore:
    """The router's view of the credentials file, refreshed when the file changes.

    `lookup` stats the file at most once per `interval` seconds (by the injected
    monotonic `clock`) and re-reads it only when its (mtime, size, inode) changed;
    every save renames a new file into place, so the inode alone catches even two
    writes within one mtime tick. A file that fails to parse on reload is logged and
    the previous keys stay in force: a bad hand edit must not lock every client out.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        interval: float = RELOAD_INTERVAL_S,
    ) -> None:
        self._path = Path(path)
        self._clock = clock
        self._interval = interval
        self._by_key: dict[str, Credential] = {}
        self._stamp: tuple[int, int, int] | None = None
        self._next_check = clock() + interval
        # At start-up a broken file is an operator error worth failing loudly on.
        self._load(strict=True)

    @classmethod
    def from_data_dir(cls, data_dir: str | os.PathLike[str], **kwargs: Any) -> CredentialStore:
        return cls(credentials_path(data_dir), **kwargs)

    @property
    def path(self) -> Path:
        return self._path

    def lookup(self, access_key: str) -> Credential | None:
        now = self._clock()
        if now >= self._next_check:
            self._next_check = now + self._interval
            self._load(strict=False)
        return self._by_key.get(access_key)

    def credentials(self) -> list[Credential]:
        return list(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def reload(self) -> None:
        """Re-read the file now if it changed (tests, SIGHUP handlers)."""
        self._load(strict=False)

    def _load(self, *, strict: bool) -> None:
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            if self._stamp is not None or strict:
                self._by_key, self._stamp = {}, None
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(
                "%s is readable by other users (mode %o); it holds secrets", self._path, st.st_mode & 0o777
            )
        try:
            creds = load(self._path)
        except (CredentialsFileError, OSError) as e:
            if strict:
                raise
            log.error("keeping the previous %d credentials: %s", len(self._by_key), e)
            # Remember the bad file so it is not re-parsed (and re-logged) every second.
            self._stamp = stamp
            return
        self._by_key = {c.access_key_id: c for c in creds}
        self._stamp = stamp
        log.info("loaded %d credentials from %s", len(self._by_key), self._path)
