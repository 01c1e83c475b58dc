"""The compat suite's target when it is not a local Partita cluster.

Set `PARTITA_COMPAT_ENDPOINT` (for example `http://localhost:8000` for DynamoDB Local,
or `https://dynamodb.us-east-1.amazonaws.com`) and the usual AWS variables
(`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, optionally `AWS_SESSION_TOKEN`,
`AWS_DEFAULT_REGION`), and the same tests run against that endpoint instead of a
cluster they start. `RemoteEndpoint` offers what the tests use of `Cluster`: a boto3
client, signed raw requests and the health check.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config

from tests.integration.raw_http import RawHttp

ENDPOINT_VARIABLE = "PARTITA_COMPAT_ENDPOINT"


def configured() -> RemoteEndpoint | None:
    url = os.environ.get(ENDPOINT_VARIABLE)
    return RemoteEndpoint(url) if url else None


@dataclass
class RemoteEndpoint(RawHttp):
    endpoint: str

    @property
    def region(self) -> str:
        return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"

    @property
    def host(self) -> str:
        return urlsplit(self.endpoint).netloc

    def credentials(self) -> dict[str, Any]:
        return {
            "access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
            "secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        }

    def client(self, service: str = "dynamodb", **overrides: Any) -> Any:
        kwargs: dict[str, Any] = {
            "endpoint_url": self.endpoint,
            "region_name": self.region,
            "config": Config(retries={"max_attempts": 2, "mode": "standard"}, read_timeout=30),
        }
        kwargs.update(overrides)
        return boto3.client(service, **kwargs)

    def signed_headers(
        self,
        operation: str,
        body: bytes,
        *,
        secret: str | None = None,
        amz_date: str | None = None,
        content_type: str = "application/x-amz-json-1.0",
    ) -> dict[str, str]:
        from partita.common.sigv4 import sign_request

        cred = self.credentials()
        headers = {
            "Content-Type": content_type,
            "X-Amz-Target": f"DynamoDB_20120810.{operation}",
            "Host": self.host,
        }
        token = os.environ.get("AWS_SESSION_TOKEN")
        if token:
            headers["X-Amz-Security-Token"] = token
        headers.update(
            sign_request(
                method="POST",
                host=self.host,
                path="/",
                query="",
                headers=headers,
                body=body,
                access_key=cred["access_key_id"],
                secret_key=secret or cred["secret_access_key"],
                region=self.region,
                amz_date=amz_date or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
            )
        )
        return headers
