"""Reading an import's source objects from S3, or any S3-compatible store, and writing
an export's.

botocore's S3 client with its usual configuration: credentials from the environment,
the shared files or the pod's role, and the endpoint from `AWS_ENDPOINT_URL_S3` (or
`AWS_ENDPOINT_URL`) when the objects are not on AWS (MinIO, Ceph...). Its calls block,
so each runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import botocore.session
from botocore.exceptions import BotoCoreError, ClientError


class S3Failure(Exception):
    """An S3 refusal, in the words ImportTable and ExportTableToPointInTime report it
    with (`FailureCode`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class S3Object:
    key: str
    size: int


class S3Objects:
    def __init__(self, region: str) -> None:
        self._client: Any = botocore.session.get_session().create_client("s3", region_name=region)

    async def objects(self, bucket: str, prefix: str) -> list[S3Object]:
        return await asyncio.to_thread(self._objects, bucket, prefix)

    async def read(self, bucket: str, key: str) -> bytes:
        return await asyncio.to_thread(self._read, bucket, key)

    async def write(self, bucket: str, key: str, body: bytes, sse: dict[str, str]) -> str:
        """Store an object; its ETag. `sse`: put_object's ServerSideEncryption members."""
        return await asyncio.to_thread(self._write, bucket, key, body, sse)

    def _write(self, bucket: str, key: str, body: bytes, sse: dict[str, str]) -> str:
        try:
            return str(self._client.put_object(Bucket=bucket, Key=key, Body=body, **sse).get("ETag", ""))
        except ClientError as exc:
            raise _failure(exc) from None
        except BotoCoreError as exc:
            raise S3Failure("S3ConnectionError", str(exc)) from None

    def _objects(self, bucket: str, prefix: str) -> list[S3Object]:
        out: list[S3Object] = []
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                out.extend(S3Object(o["Key"], int(o["Size"])) for o in page.get("Contents", ()))
        except ClientError as exc:
            raise _failure(exc) from None
        except BotoCoreError as exc:
            raise S3Failure("S3ConnectionError", str(exc)) from None
        return out

    def _read(self, bucket: str, key: str) -> bytes:
        try:
            return bytes(self._client.get_object(Bucket=bucket, Key=key)["Body"].read())
        except ClientError as exc:
            raise _failure(exc) from None
        except BotoCoreError as exc:
            raise S3Failure("S3ConnectionError", str(exc)) from None


def _failure(exc: ClientError) -> S3Failure:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = str(error.get("Message", str(exc)))
    # ImportTable's failure codes carry S3's error code after "S3" (S3NoSuchBucket).
    return S3Failure(f"S3{code}", message)
