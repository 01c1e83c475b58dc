"""kmock's Kubernetes emulator plus the metadata a real API server maintains.

kmock stores objects as plain JSON (its docs invite subclassing for server-side
fields). kopf and the operator read four of them: `uid` (owner references),
`resourceVersion` (kopf's optimistic JSON-patch test), `generation` (bumped when the
spec changes; status' observedGeneration) and `creationTimestamp`.
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any

import aiohttp
import kmock

_uids = itertools.count(1)


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
                    spec_before = self.objects[key].raw.get("spec")
        response = await super()._handle(request)
        if key is not None and key in self.objects and not self.objects[key].deleted:
            current = self.objects[key].raw
            if current.get("spec") != spec_before:
                generation = int(current.get("metadata", {}).get("generation", 1)) + 1
                self.objects[key].patch({"metadata": {"generation": generation}})
        return response
