"""ImportTable, DescribeImport, ListImports: their requests, the import's record, and
reading an S3 object's items (pure; the router's job reads S3 and writes the table).

ImportTable creates a new table (TableCreationParameters, checked as CreateTable checks
a request) and loads it from every object under an S3 bucket and key prefix. Formats:
DYNAMODB_JSON (one `{"Item": {...}}` after another, whether or not lines separate them,
as DynamoDB's export writes and moto's DynamoDB-verified tests show) and CSV (a header
line or `HeaderList`; every value a string but the keys, typed as the table defines
them). An item that cannot be read or written is counted (`ErrorCount`) and skipped;
an import with errors ends FAILED, keeping the items it wrote and the table, as
DynamoDB's does. A bucket that does not exist fails the import and drops its table.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from partita.api.item import check_item
from partita.api.operations import create_table
from partita.api.shape import expect_dict, expect_type
from partita.api.values import item_size
from partita.common import errors
from partita.common.errors import DynamoError
from partita.control.model import Claim, TableRecord

# DynamoDB's item limit: a bigger one in a source file is an error, not an item.
MAX_ITEM_BYTES = 400 * 1024
_IMPORT_ARN = re.compile(
    r"arn:aws[a-z-]*:dynamodb:[a-z0-9-]*:[0-9]*:table/([a-zA-Z0-9_.-]{3,255})/import/([0-9a-f-]+)"
)
_NOT_YET = ("ION",)


def import_not_found(arn: str) -> DynamoError:
    return DynamoError("ImportNotFoundException", f"Import not found: {arn}")


def new_import_id(now: float) -> str:
    return f"{int(now * 1000):014d}-{secrets.token_hex(4)}"


def import_id_of(arn: str) -> str | None:
    match = _IMPORT_ARN.fullmatch(arn)
    return match.group(2) if match else None


@dataclass
class ImportRecord:
    """One ImportTable: what it was asked, where it stands, what it counted."""

    import_id: str
    arn: str
    table_name: str
    table_arn: str
    table_id: int
    request: dict[str, Any]  # S3BucketSource, InputFormat... as sent (answered back)
    started_at: float
    status: str = "IN_PROGRESS"  # COMPLETED, FAILED
    ended_at: float | None = None
    processed_bytes: int = 0
    processed_items: int = 0
    imported_items: int = 0
    error_count: int = 0
    failure_code: str | None = None
    failure_message: str | None = None
    claim: Claim = field(default_factory=Claim)

    def to_json(self) -> dict[str, Any]:
        return {
            "import_id": self.import_id,
            "arn": self.arn,
            "table_name": self.table_name,
            "table_arn": self.table_arn,
            "table_id": self.table_id,
            "request": self.request,
            "started_at": self.started_at,
            "status": self.status,
            "ended_at": self.ended_at,
            "processed_bytes": self.processed_bytes,
            "processed_items": self.processed_items,
            "imported_items": self.imported_items,
            "error_count": self.error_count,
            "failure_code": self.failure_code,
            "failure_message": self.failure_message,
            "claim": self.claim.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportRecord:
        return cls(
            import_id=str(data["import_id"]),
            arn=str(data["arn"]),
            table_name=str(data["table_name"]),
            table_arn=str(data["table_arn"]),
            table_id=int(data["table_id"]),
            request=dict(data["request"]),
            started_at=float(data["started_at"]),
            status=str(data.get("status", "IN_PROGRESS")),
            ended_at=data.get("ended_at"),
            processed_bytes=int(data.get("processed_bytes", 0)),
            processed_items=int(data.get("processed_items", 0)),
            imported_items=int(data.get("imported_items", 0)),
            error_count=int(data.get("error_count", 0)),
            failure_code=data.get("failure_code"),
            failure_message=data.get("failure_message"),
            claim=Claim.from_json(data.get("claim")),
        )

    @property
    def bucket(self) -> str:
        return str(self.request["S3BucketSource"]["S3Bucket"])

    @property
    def prefix(self) -> str:
        return str(self.request["S3BucketSource"].get("S3KeyPrefix") or "")

    def description(self, table_uuid: str) -> dict[str, Any]:
        """DescribeImport's ImportTableDescription."""
        out: dict[str, Any] = {
            "ImportArn": self.arn,
            "ImportStatus": self.status,
            "TableArn": self.table_arn,
            "TableId": table_uuid,
            **{k: v for k, v in self.request.items() if k != "ClientToken"},
            "StartTime": self.started_at,
            "ProcessedSizeBytes": self.processed_bytes,
            "ProcessedItemCount": self.processed_items,
            "ImportedItemCount": self.imported_items,
            "ErrorCount": self.error_count,
        }
        if "ClientToken" in self.request:
            out["ClientToken"] = self.request["ClientToken"]
        if self.ended_at is not None:
            out["EndTime"] = self.ended_at
        if self.failure_code is not None:
            out["FailureCode"] = self.failure_code
            out["FailureMessage"] = self.failure_message
        return out

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ImportArn": self.arn,
            "ImportStatus": self.status,
            "TableArn": self.table_arn,
            "S3BucketSource": self.request["S3BucketSource"],
            "InputFormat": self.request["InputFormat"],
            "StartTime": self.started_at,
        }
        if self.ended_at is not None:
            out["EndTime"] = self.ended_at
        return out


def validate(body: Any) -> tuple[dict[str, Any], create_table.CreateTableRequest]:
    """(the request's import parameters as sent, the table to create)."""
    body = expect_dict(body)
    params = expect_dict(body["TableCreationParameters"])
    table = create_table.validate(params)
    input_format = str(body["InputFormat"])
    if input_format in _NOT_YET:
        raise errors.validation(f"Partita does not support importing {input_format} yet")
    if body.get("InputCompressionType") == "ZSTD":
        raise errors.validation("Partita does not support importing ZSTD-compressed files yet")
    options = body.get("InputFormatOptions")
    if options is not None:
        csv_options = expect_dict(expect_dict(options).get("Csv") or {})
        delimiter = expect_type(csv_options.get("Delimiter"), str, "a string")
        if delimiter is not None and len(delimiter) != 1:
            raise errors.validation(
                "One or more parameter values were invalid: Delimiter must be one character"
            )
    kept = (
        "ClientToken",
        "S3BucketSource",
        "InputFormat",
        "InputFormatOptions",
        "InputCompressionType",
        "TableCreationParameters",
    )
    request = {k: body[k] for k in kept if body.get(k) is not None}
    request.setdefault("InputCompressionType", "NONE")
    return request, table


# --- reading a source object --------------------------------------------------------------


@dataclass
class Parsed:
    items: list[dict[str, Any]]
    errors: int


def read_object(data: bytes, compression: str, request: dict[str, Any], record: TableRecord) -> Parsed:
    """An object's items; one that cannot be decompressed counts as one error."""
    if compression == "GZIP":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return Parsed([], 1)
    return parse_object(data, request, record)


def parse_object(data: bytes, request: dict[str, Any], record: TableRecord) -> Parsed:
    """The items of one source object; each record that is not an item of `record`'s
    table (unreadable, lacking a key or of the wrong key type, too large) counts as an
    error and is left out."""
    rows = _csv_items(data, request, record) if request["InputFormat"] == "CSV" else _json_items(data)
    items, bad = [], 0
    for row in rows:
        if row is None or not _fits(row, record):
            bad += 1
        else:
            items.append(row)
    return Parsed(items, bad)


def _json_items(data: bytes) -> Iterator[dict[str, Any] | None]:
    """`{"Item": ...}` objects one after another; None for each that is not one, and
    for the rest of an object that stops parsing."""
    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    at, end = 0, len(text)
    while True:
        while at < end and text[at].isspace():
            at += 1
        if at >= end:
            return
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            yield None
            return
        item = value.get("Item") if isinstance(value, dict) and len(value) == 1 else None
        yield item if isinstance(item, dict) else None


def _csv_items(data: bytes, request: dict[str, Any], record: TableRecord) -> Iterator[dict[str, Any] | None]:
    options = (request.get("InputFormatOptions") or {}).get("Csv") or {}
    reader = csv.reader(
        io.StringIO(data.decode("utf-8", errors="replace")), delimiter=options.get("Delimiter", ",")
    )
    header = options.get("HeaderList")
    types = dict(record.attribute_definitions)
    for row in reader:
        if header is None:
            header = row
            continue
        if len(row) != len(header):
            yield None
            continue
        item = {}
        for name, value in zip(header, row, strict=True):
            if value == "" and name not in types:
                continue
            kind = types.get(name, "S") if name in record.key_names else "S"
            item[name] = {kind: value}
        yield item


def _fits(item: dict[str, Any], record: TableRecord) -> bool:
    try:
        check_item(item)
        if item_size(item) > MAX_ITEM_BYTES:
            return False
        for name in record.key_names:
            av = item.get(name)
            if not isinstance(av, dict) or list(av) != [dict(record.attribute_definitions)[name]]:
                return False
    except (DynamoError, ValueError, TypeError):
        return False
    return True


class _Ledgered(Protocol):
    @property
    def table_arn(self) -> str: ...


Ledgered = TypeVar("Ledgered", bound=_Ledgered)


def ledger_page(
    records: list[Ledgered],
    id_of: Callable[[Ledgered], str],
    table_arn: str | None,
    page_size: int | None,
    token: str | None,
) -> tuple[list[Ledgered], str | None]:
    """ListImports' and ListExports' page: oldest first (their ids start with their
    time), `page_size` at a time (25 at most), NextToken the last id of a full page."""
    chosen = sorted((r for r in records if table_arn is None or r.table_arn == table_arn), key=id_of)
    if token is not None:
        chosen = [r for r in chosen if id_of(r) > token]
    size = page_size or 25
    if len(chosen) > size:
        return chosen[:size], id_of(chosen[size - 1])
    return chosen, None
