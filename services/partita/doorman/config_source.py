"""Where a root server reads its resource configuration: a file, or a key in etcd.

`read()` returns (version, text): the server reloads only when the version moved (a
file's modification time, the key's etcd mod_revision), and keeps its previous
configuration when the new text fails validation.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Protocol


class ConfigSource(Protocol):
    def describe(self) -> str: ...
    async def read(self) -> tuple[int, str] | None:
        """(version, text), or None when there is no configuration there."""
        ...

    async def close(self) -> None: ...


class FileSource:
    def __init__(self, path: Path) -> None:
        self.path = path

    def describe(self) -> str:
        return str(self.path)

    async def read(self) -> tuple[int, str] | None:
        try:
            version = self.path.stat().st_mtime_ns
            return version, self.path.read_text()
        except OSError:
            return None

    async def close(self) -> None:
        return None


class EtcdSource:
    """The YAML/JSON text stored at `key`, e.g. put with
    `etcdctl put /partita/doorman/config "$(cat doorman.yaml)"`."""

    def __init__(self, host: str, port: int, key: str, *, timeout: float = 3.0) -> None:
        self.host, self.port, self.key = host, port, key
        self.timeout = timeout
        self._client: Any = None

    def describe(self) -> str:
        return f"etcd {self.host}:{self.port} {self.key}"

    async def read(self) -> tuple[int, str] | None:
        import aetcd

        if self._client is None:
            self._client = aetcd.Client(host=self.host, port=self.port, timeout=self.timeout)
        kv = await self._client.get(self.key.encode())
        if kv is None:
            return None
        return int(kv.mod_revision), bytes(kv.value).decode()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()


class KeyOverFile:
    """The etcd key once it exists, the file until then: on Kubernetes the operator
    writes the key (every table's resources over the chart's templates), and the chart's
    templates in the file carry the servers from their start until its first write."""

    def __init__(self, key: EtcdSource, file: FileSource) -> None:
        self.key, self.file = key, file

    def describe(self) -> str:
        return f"{self.key.describe()} (until it exists: {self.file.describe()})"

    async def read(self) -> tuple[int, str] | None:
        found = await self.key.read()
        if found is not None:
            return found
        fallback = await self.file.read()
        # Negative: a file's version never equals a revision of the key.
        return None if fallback is None else (-fallback[0], fallback[1])

    async def close(self) -> None:
        await self.key.close()
        await self.file.close()
