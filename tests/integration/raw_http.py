"""Raw HTTP to a DynamoDB endpoint, for the tests that look past the SDK: shared by the
local `Cluster` and the compat suite's `RemoteEndpoint`."""

from __future__ import annotations

import http.client
import json
import urllib.request
from typing import Any
from urllib.parse import urlsplit


class RawHttp:
    """Mixed into a class with an `endpoint` URL (http or https)."""

    endpoint: str

    def request(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout: float = 30
    ) -> tuple[int, bytes, dict[str, str]]:
        """Any raw request: (HTTP status, body bytes, lower-cased response headers)."""
        parts = urlsplit(self.endpoint)
        factory = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = factory(parts.netloc, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()

    def post(self, body: bytes, headers: dict[str, str], timeout: float = 30) -> tuple[int, dict[str, Any]]:
        """POST raw bytes to the endpoint: (HTTP status, decoded JSON body or {})."""
        status, payload, _ = self.request("POST", "/", body, headers, timeout)
        return status, json.loads(payload) if payload else {}

    def health(self) -> str:
        with urllib.request.urlopen(self.endpoint + "/", timeout=5) as response:
            body: bytes = response.read()
            return body.decode()
