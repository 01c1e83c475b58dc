"""kmock's Kubernetes emulator plus the metadata a real API server maintains.

kmock stores objects as plain JSON (its docs invite subclassing for server-side
fields). kopf and the operator read four of them: `uid` (owner references),
`resourceVersion` (kopf's optimistic JSON-patch test), `generation` (bumped when the
spec changes; status' observedGeneration) and `creationTimestamp`.

resourceVersion stays "1": bumping it on every write (as an API server does) makes
kopf's JSON-patch `test` of the version fail now and then, which kmock answers with a
500 where an API server answers 409/422 and kopf would re-read the object. The price
of a constant version is kopf waiting its consistency timeout (5 s) at times: slower
tests, the same behaviour.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
from collections.abc import Callable
from typing import Any

import aiohttp
import kmock

from partita.autoadmin.kube import naming

_uids = itertools.count(1)
# kmock logs every request, and matches each new one against its reactions by walking
# the whole log: a test running its operator for minutes slowed quadratically, on a
# loaded machine to the point where the test itself starved (the split-for-consumption
# test ran 9 minutes). The log keeps this many of the latest requests once it has twice
# as many; tests that count requests are short.
REQUEST_LOG_KEEP = 500


class ApiServer(kmock.KubernetesEmulator):
    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        key = None
        spec_before: Any = None
        if request.resource is not None and isinstance(request.data, dict):
            if request.action == kmock.action.CREATE:
                meta = request.data.setdefault("metadata", {})
                if "name" not in meta and "generateName" in meta:
                    meta["name"] = f"{meta['generateName']}{next(_uids)}"
                meta.setdefault("uid", f"uid-{next(_uids)}")
                meta.setdefault("resourceVersion", "1")
                meta.setdefault("generation", 1)
                meta.setdefault("creationTimestamp", datetime.datetime.now(datetime.UTC).isoformat())
            elif request.action == kmock.action.UPDATE and request.name and request.subresource is None:
                key = (request.resource, request.namespace, request.name)
                if key in self.objects and not self.objects[key].deleted:
                    current = self.objects[key].raw
                    spec_before = current.get("spec")
                    if (
                        "spec" in request.data
                        and _merge_patched(spec_before, request.data["spec"]) != spec_before
                    ):
                        # In the same write as the spec, as an API server does: a watcher
                        # must never see the new spec under the old generation.
                        generation = int(current.get("metadata", {}).get("generation", 1)) + 1
                        request.data.setdefault("metadata", {})["generation"] = generation
                        key = None
        response = await super()._handle(request)
        if key is not None and key in self.objects and not self.objects[key].deleted:
            current = self.objects[key].raw
            if current.get("spec") != spec_before:  # a replacement that changed the spec
                generation = int(current.get("metadata", {}).get("generation", 1)) + 1
                self.objects[key].patch({"metadata": {"generation": generation}})
        if len(self._requests) > 2 * REQUEST_LOG_KEEP:
            del self._requests[:-REQUEST_LOG_KEEP]
        return response


def _merge_patched(target: Any, patch: Any) -> Any:
    """`target` with a JSON merge patch (RFC 7386) applied; neither is changed."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge_patched(out.get(k), v)
    return out


NS = "db"
TABLES = f"/apis/{naming.API_VERSION}/namespaces/{NS}/tables"
# Seconds any awaited state may take. kopf waits up to 5 s for its own writes to show
# (the emulator keeps resourceVersion constant) and the test machine is shared: a
# settled split takes 10-20 s here under load, so the bound leaves room.
TIMEOUT = 45.0


PEERINGS = f"/apis/kopf.dev/v1/namespaces/{NS}/kopfpeerings"


async def create_peering(session: Any) -> None:
    """The KopfPeering the operators coordinate through (the chart installs it)."""
    peering = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfPeering",
        "metadata": {"name": "partita", "namespace": NS},
    }
    await session.post(PEERINGS, json=peering)


def register_resources(server: Any) -> None:
    server.resources[f"{naming.API_VERSION}/tables"] = kmock.ResourceInfo(
        kind="Table",
        namespaced=True,
        singular="table",
        subresources={"status"},
        verbs={"list", "watch", "patch"},
    )
    server.resources[f"{naming.API_VERSION}/partitions"] = kmock.ResourceInfo(
        kind="Partition",
        namespaced=True,
        singular="partition",
        subresources={"status"},
        verbs={"list", "watch", "patch"},
    )
    server.resources["kopf.dev/v1/kopfpeerings"] = kmock.ResourceInfo(
        kind="KopfPeering", namespaced=True, singular="kopfpeering", verbs={"list", "watch", "patch"}
    )
    for key, kind in [
        ("v1/events", "Event"),
        ("v1/services", "Service"),
        ("apps/v1/statefulsets", "StatefulSet"),
        ("policy/v1/poddisruptionbudgets", "PodDisruptionBudget"),
    ]:
        server.resources[key] = kmock.ResourceInfo(
            kind=kind, namespaced=True, verbs={"create", "list", "patch"}
        )
    # Discovered only: kopf waits to see these kinds exist (it never lists them here).
    server.resources["v1/namespaces"] = kmock.ResourceInfo(
        kind="Namespace", namespaced=False, verbs={"list", "watch"}
    )
    server.resources["apiextensions.k8s.io/v1/customresourcedefinitions"] = kmock.ResourceInfo(
        kind="CustomResourceDefinition", namespaced=False, verbs={"list", "watch"}
    )


def table_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Table",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {
            "tableName": name.title(),
            "attributeDefinitions": [{"attributeName": "pk", "attributeType": "S"}],
            "keySchema": [{"attributeName": "pk", "keyType": "HASH"}],
            **spec,
        },
    }


async def get(api: aiohttp.ClientSession, path: str) -> Any:
    async with api.get(path) as resp:
        return await resp.json() if resp.status == 200 else None


async def eventually(probe: Callable[[], Any], what: str) -> Any:
    """Poll `probe` until it returns something truthy; bounded in time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        result = await probe()
        if result:
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def partitions_of(api: aiohttp.ClientSession, table: str) -> list[dict[str, Any]]:
    data = await get(api, f"/apis/{naming.API_VERSION}/namespaces/{NS}/partitions")
    return [p for p in (data or {}).get("items", []) if p["spec"]["table"] == table]
