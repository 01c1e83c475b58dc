"""A thin Kubernetes API client for the few calls the operator makes: apply (create, or
merge-patch what exists), list by label, delete.

kopf talks to the API for its own needs (watches, status, finalizers, events); this
client uses the same credentials (a kopf ConnectionInfo from the service account or a
kubeconfig) and aiohttp, which kopf already depends on.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp
import kopf

PLURALS = {
    "Service": "services",
    "StatefulSet": "statefulsets",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Partition": "partitions",
    "Table": "tables",
}


class KubeApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"Kubernetes API answered {status}: {text[:500]}")
        self.status = status


def collection_path(api_version: str, plural: str, namespace: str) -> str:
    """`/api/v1/namespaces/ns/services` for the core group, `/apis/<group>/<v>/...` otherwise."""
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{root}/namespaces/{namespace}/{plural}"


def object_path(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(collection path, name) of a manifest."""
    meta = obj["metadata"]
    return collection_path(obj["apiVersion"], PLURALS[obj["kind"]], meta["namespace"]), meta["name"]


def _ssl_context(info: kopf.ConnectionInfo) -> ssl.SSLContext | bool:
    if info.insecure:
        return False
    if not info.server.startswith("https"):
        return True
    context = ssl.create_default_context(
        cafile=str(info.ca_path) if info.ca_path else None,
        cadata=info.ca_data.decode() if isinstance(info.ca_data, bytes) else info.ca_data,
    )
    if info.certificate_path and info.private_key_path:
        context.load_cert_chain(str(info.certificate_path), str(info.private_key_path))
    return context


class KubeApi:
    """One aiohttp session to one API server."""

    def __init__(self, info: kopf.ConnectionInfo) -> None:
        self.info = info
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        # Created lazily, inside the running loop that will use it.
        if self._session is None:
            self._session = aiohttp.ClientSession(
                base_url=self.info.server.rstrip("/"),
                headers=self.info.as_http_headers(),
                connector=aiohttp.TCPConnector(ssl=_ssl_context(self.info)),
                timeout=aiohttp.ClientTimeout(total=30),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        headers = {"Content-Type": content_type} if content_type else None
        async with self._client().request(method, path, json=body, headers=headers, params=params) as resp:
            if resp.status >= 400:
                raise KubeApiError(resp.status, await resp.text())
            return await resp.json(content_type=None)

    async def apply(self, obj: Mapping[str, Any]) -> bool:
        """Create `obj`, or merge-patch it over what exists. True if it was created."""
        collection, name = object_path(obj)
        try:
            await self._call("POST", collection, obj)
            return True
        except KubeApiError as exc:
            if exc.status != 409:
                raise
        await self._call("PATCH", f"{collection}/{name}", obj, "application/merge-patch+json")
        return False

    async def patch_spec(
        self, api_version: str, plural: str, namespace: str, name: str, spec: Mapping[str, Any]
    ) -> Any:
        """Merge-patch fields of the object's spec (a list given replaces the list)."""
        path = f"{collection_path(api_version, plural, namespace)}/{name}"
        return await self._call("PATCH", path, {"spec": spec}, "application/merge-patch+json")

    async def patch_annotations(
        self,
        api_version: str,
        plural: str,
        namespace: str,
        name: str,
        annotations: Mapping[str, str],
        resource_version: str,
    ) -> Any:
        """Merge-patch annotations of the object as it was at `resource_version` (the API
        server answers 409 Conflict if it has changed since)."""
        path = f"{collection_path(api_version, plural, namespace)}/{name}"
        body = {"metadata": {"annotations": dict(annotations), "resourceVersion": resource_version}}
        return await self._call("PATCH", path, body, "application/merge-patch+json")

    async def get(self, api_version: str, plural: str, namespace: str, name: str) -> Any:
        """The object, or None if there is none."""
        try:
            return await self._call("GET", f"{collection_path(api_version, plural, namespace)}/{name}")
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def list(
        self, api_version: str, plural: str, namespace: str, labels: Mapping[str, str]
    ) -> list[Any]:
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        path = collection_path(api_version, plural, namespace)
        answer = await self._call("GET", path, params={"labelSelector": selector})
        items: list[Any] = answer.get("items") or []
        # Selection again here: a server that ignores labelSelector must not widen it.
        return [
            i
            for i in items
            if all((i["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        ]

    async def delete(self, api_version: str, plural: str, namespace: str, name: str) -> bool:
        """Ask for deletion; False if it was already gone."""
        try:
            await self._call("DELETE", f"{collection_path(api_version, plural, namespace)}/{name}")
            return True
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise
