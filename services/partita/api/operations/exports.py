"""ExportTableToPointInTime, DescribeExport, ListExports: their requests, the export's
record, and what it writes to S3 (pure; the router's job reads the table and writes the
objects: `router/copy_jobs.py`).

An export writes the table as it was at ExportTime (default: when asked) to a bucket, in
DynamoDB's layout (`<prefix>/AWSDynamoDB/<export id>/`): gzipped DYNAMODB_JSON data files,
one `{"Item": {...}}` a line, under `data/`, then `manifest-files.json` (one line per data
file) and `manifest-summary.json`, each with a `.md5` beside it. Only a table with
point-in-time recovery can be exported, at a time within its restorable window: the
export is a restore to that time written to S3 instead of a table.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from partita.api.shape import expect_dict, expect_type
from partita.common import errors
from partita.common.errors import DynamoError
from partita.control.model import Claim

_EXPORT_ARN = re.compile(
    r"arn:aws[a-z-]*:dynamodb:[a-z0-9-]*:[0-9]*:table/([a-zA-Z0-9_.-]{3,255})/export/([0-9]{14}-[0-9a-f]{8})"
)
# A data file is closed past this many bytes of lines, before compression.
DATA_FILE_BYTES = 64 * 1024 * 1024
MANIFEST_VERSION = "2020-06-30"
# How long a ClientToken names its export (DynamoDB: eight hours).
TOKEN_SECONDS = 8 * 3600
# The request members that make an export what it is: a ClientToken sent again with
# other values is ExportConflictException.
_IDENTITY = (
    "TableArn",
    "ExportTime",
    "S3Bucket",
    "S3BucketOwner",
    "S3Prefix",
    "S3SseAlgorithm",
    "S3SseKmsKeyId",
    "ExportFormat",
    "ExportType",
)


def export_not_found(arn: str) -> DynamoError:
    return DynamoError("ExportNotFoundException", f"Export not found: {arn}")


def new_export_id(now: float) -> str:
    return f"{int(now * 1000):014d}-{secrets.token_hex(4)}"


def export_id_of(arn: str) -> str | None:
    match = _EXPORT_ARN.fullmatch(arn)
    return match.group(2) if match else None


def validate(body: Any) -> dict[str, Any]:
    """The request's members, as sent (kept in the record and told back)."""
    body = expect_dict(body)
    if body.get("ExportType") == "INCREMENTAL_EXPORT":
        raise errors.validation("Partita does not support incremental exports yet")
    if body.get("ExportFormat") == "ION":
        raise errors.validation("Partita does not support ION exports yet")
    expect_type(body.get("ExportTime"), (int, float), "a number")
    return {k: v for k, v in body.items() if v is not None}


def conflicts(request: dict[str, Any], earlier: dict[str, Any]) -> bool:
    """Whether a request with an earlier export's ClientToken asks something else."""
    return any(request.get(k) != earlier.get(k) for k in _IDENTITY)


def conflict(token: str) -> DynamoError:
    return DynamoError(
        "ExportConflictException",
        f"Export with ClientToken {token} already exists with different parameters",
    )


def invalid_time(earliest: float, latest: float) -> DynamoError:
    return DynamoError(
        "InvalidExportTimeException",
        f"Export time is not within the restorable window: earliest {earliest}, latest {latest}",
    )


@dataclass
class ExportRecord:
    """One ExportTableToPointInTime: what it was asked, where it stands, what it wrote."""

    export_id: str
    arn: str
    table_name: str
    table_arn: str
    table_id: int
    export_time: float
    request: dict[str, Any]  # the members as sent
    started_at: float
    status: str = "IN_PROGRESS"  # COMPLETED, FAILED
    ended_at: float | None = None
    item_count: int = 0
    billed_bytes: int = 0
    manifest: str | None = None  # the manifest summary's key, once written
    failure_code: str | None = None
    failure_message: str | None = None
    claim: Claim = field(default_factory=Claim)

    def to_json(self) -> dict[str, Any]:
        return {
            "export_id": self.export_id,
            "arn": self.arn,
            "table_name": self.table_name,
            "table_arn": self.table_arn,
            "table_id": self.table_id,
            "export_time": self.export_time,
            "request": self.request,
            "started_at": self.started_at,
            "status": self.status,
            "ended_at": self.ended_at,
            "item_count": self.item_count,
            "billed_bytes": self.billed_bytes,
            "manifest": self.manifest,
            "failure_code": self.failure_code,
            "failure_message": self.failure_message,
            "claim": self.claim.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExportRecord:
        return cls(
            export_id=str(data["export_id"]),
            arn=str(data["arn"]),
            table_name=str(data["table_name"]),
            table_arn=str(data["table_arn"]),
            table_id=int(data["table_id"]),
            export_time=float(data["export_time"]),
            request=dict(data["request"]),
            started_at=float(data["started_at"]),
            status=str(data.get("status", "IN_PROGRESS")),
            ended_at=data.get("ended_at"),
            item_count=int(data.get("item_count", 0)),
            billed_bytes=int(data.get("billed_bytes", 0)),
            manifest=data.get("manifest"),
            failure_code=data.get("failure_code"),
            failure_message=data.get("failure_message"),
            claim=Claim.from_json(data.get("claim")),
        )

    @property
    def export_type(self) -> str:
        return str(self.request.get("ExportType", "FULL_EXPORT"))

    def description(self, table_uuid: str) -> dict[str, Any]:
        """ExportDescription."""
        r = self.request
        out: dict[str, Any] = {
            "ExportArn": self.arn,
            "ExportStatus": self.status,
            "StartTime": self.started_at,
            "TableArn": self.table_arn,
            "TableId": table_uuid,
            "ExportTime": self.export_time,
            "S3Bucket": r["S3Bucket"],
            "S3SseAlgorithm": r.get("S3SseAlgorithm", "AES256"),
            "ExportFormat": r.get("ExportFormat", "DYNAMODB_JSON"),
            "ExportType": self.export_type,
        }
        for member in ("ClientToken", "S3BucketOwner", "S3Prefix", "S3SseKmsKeyId"):
            if member in r:
                out[member] = r[member]
        if self.status != "IN_PROGRESS":
            out["EndTime"] = self.ended_at
        if self.status == "COMPLETED":
            out["ItemCount"] = self.item_count
            out["BilledSizeBytes"] = self.billed_bytes
            out["ExportManifest"] = self.manifest
        if self.failure_code is not None:
            out["FailureCode"] = self.failure_code
            out["FailureMessage"] = self.failure_message or ""
        return out

    def summary(self) -> dict[str, Any]:
        return {"ExportArn": self.arn, "ExportStatus": self.status, "ExportType": self.export_type}


# --- what an export writes --------------------------------------------------------------


def export_root(request: dict[str, Any]) -> str:
    """Where DynamoDB writes every export under the request's prefix."""
    prefix = str(request.get("S3Prefix", "")).rstrip("/")
    return f"{prefix}/AWSDynamoDB" if prefix else "AWSDynamoDB"


def export_base(record: ExportRecord) -> str:
    return f"{export_root(record.request)}/{record.export_id}"


def sse_arguments(request: dict[str, Any]) -> dict[str, str]:
    """S3 put_object's encryption members for the export's S3SseAlgorithm."""
    if request.get("S3SseAlgorithm") == "KMS":
        out = {"ServerSideEncryption": "aws:kms"}
        if "S3SseKmsKeyId" in request:
            out["SSEKMSKeyId"] = str(request["S3SseKmsKeyId"])
        return out
    return {"ServerSideEncryption": "AES256"}


def item_line(item: dict[str, Any]) -> bytes:
    return orjson.dumps({"Item": item}) + b"\n"


@dataclass(frozen=True)
class DataFile:
    key: str
    body: bytes  # gzipped lines
    items: int

    @property
    def md5(self) -> str:
        return base64.b64encode(hashlib.md5(self.body).digest()).decode()


def data_file(record: ExportRecord, lines: bytes, items: int) -> DataFile:
    name = secrets.token_hex(13)
    return DataFile(f"{export_base(record)}/data/{name}.json.gz", gzip.compress(lines, 6), items)


def files_manifest(files: list[tuple[DataFile, str]]) -> bytes:
    """manifest-files.json: one line per data file, with its S3 ETag."""
    return b"".join(
        orjson.dumps(
            {"itemCount": f.items, "md5Checksum": f.md5, "etag": etag.strip('"'), "dataFileS3Key": f.key}
        )
        + b"\n"
        for f, etag in files
    )


def summary_manifest(record: ExportRecord, table_uuid: str, ended_at: float, files_key: str) -> bytes:
    r = record.request
    return orjson.dumps(
        {
            "version": MANIFEST_VERSION,
            "exportArn": record.arn,
            "startTime": _iso(record.started_at),
            "endTime": _iso(ended_at),
            "tableArn": record.table_arn,
            "tableId": table_uuid,
            "exportTime": _iso(record.export_time),
            "s3Bucket": r["S3Bucket"],
            "s3Prefix": r.get("S3Prefix"),
            "s3SseAlgorithm": r.get("S3SseAlgorithm", "AES256"),
            "s3SseKmsKeyId": r.get("S3SseKmsKeyId"),
            "manifestFilesS3Key": files_key,
            "billedSizeBytes": record.billed_bytes,
            "itemCount": record.item_count,
            "outputFormat": r.get("ExportFormat", "DYNAMODB_JSON"),
            "exportType": record.export_type,
        }
    )


def md5_text(body: bytes) -> bytes:
    return base64.b64encode(hashlib.md5(body).digest())


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
