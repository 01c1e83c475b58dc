"""kmock's Kubernetes emulator with the API server's optimistic concurrency, for the
catalog's contract tests: every write moves `resourceVersion`, and a patch carrying
`metadata.resourceVersion` (or a delete carrying it as a precondition) is refused with
409 Conflict unless it is the stored one, as a real API server does.

The operator's tests keep resourceVersion constant instead (see
tests/unit/autoadmin/kube/emulator.py: kopf's own JSON-patch test of it meets kmock's
500s otherwise); no kopf runs against this one.
"""

from __future__ import annotations

import itertools
from typing import Any

import aiohttp
import kmock

from tests.unit.autoadmin.kube.emulator import ApiServer

_versions = itertools.count(100)


class VersionedApiServer(ApiServer):
    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        key = None
        if request.resource is not None and request.name is not None and request.subresource is None:
            key = (request.resource, request.namespace, request.name)
            stored = self.objects[key] if key in self.objects and not self.objects[key].deleted else None
            wanted = _precondition(request)
            version = (
                str(stored.raw.get("metadata", {}).get("resourceVersion")) if stored is not None else None
            )
            if wanted is not None and version is not None and version != wanted:
                return aiohttp.web.json_response(
                    {"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409}, status=409
                )
        if (
            request.resource is not None
            and request.action == kmock.action.CREATE
            and isinstance(request.data, dict)
        ):
            request.data.setdefault("metadata", {})["resourceVersion"] = str(next(_versions))
        response = await super()._handle(request)
        written = key is not None and request.action == kmock.action.UPDATE and response.status < 300
        if written and key in self.objects and not self.objects[key].deleted:
            self.objects[key].patch({"metadata": {"resourceVersion": str(next(_versions))}})
        return response


def _precondition(request: kmock.Request) -> str | None:
    data: Any = request.data
    if not isinstance(data, dict):
        return None
    if request.action == kmock.action.UPDATE:
        version = (data.get("metadata") or {}).get("resourceVersion")
    elif request.action == kmock.action.DELETE:
        version = (data.get("preconditions") or {}).get("resourceVersion")
    else:
        return None
    return str(version) if version is not None else None
