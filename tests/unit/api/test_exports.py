"""ExportTableToPointInTime's pure parts: the request, the record's descriptions, paging,
and DynamoDB's S3 layout and manifests."""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest

from partita.api.operations import exports
from partita.api.operations.exports import ExportRecord
from partita.api.operations.imports import ledger_page
from partita.common.errors import DynamoError

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/t"


def record(**request: Any) -> ExportRecord:
    export_id = "01700000000000-0a1b2c3d"
    return ExportRecord(
        export_id=export_id,
        arn=f"{ARN}/export/{export_id}",
        table_name="t",
        table_arn=ARN,
        table_id=5,
        export_time=100.0,
        request={"TableArn": ARN, "S3Bucket": "b", **request},
        started_at=101.0,
    )


def test_incremental_and_ion_exports_are_refused_by_name() -> None:
    for body in ({"ExportType": "INCREMENTAL_EXPORT"}, {"ExportFormat": "ION"}):
        with pytest.raises(DynamoError) as caught:
            exports.validate({"TableArn": ARN, "S3Bucket": "b", **body})
        assert caught.value.code == "ValidationException" and "does not support" in caught.value.message


def test_a_token_sent_again_conflicts_only_when_the_export_differs() -> None:
    asked = {"TableArn": ARN, "S3Bucket": "b", "ClientToken": "x"}
    assert not exports.conflicts(asked, dict(asked))
    assert exports.conflicts({**asked, "S3Prefix": "p"}, asked)


def test_the_description_tells_what_the_status_has() -> None:
    started = record(S3Prefix="p", ClientToken="tok")
    running = started.description("uuid")
    assert running["ExportStatus"] == "IN_PROGRESS" and running["S3Prefix"] == "p"
    assert "EndTime" not in running and "ItemCount" not in running and running["ClientToken"] == "tok"
    assert (running["ExportType"], running["ExportFormat"], running["S3SseAlgorithm"]) == (
        "FULL_EXPORT",
        "DYNAMODB_JSON",
        "AES256",
    )
    started.status, started.ended_at, started.item_count, started.manifest = "COMPLETED", 120.0, 3, "m.json"
    done = started.description("uuid")
    assert (done["EndTime"], done["ItemCount"], done["ExportManifest"]) == (120.0, 3, "m.json")
    assert ExportRecord.from_json(started.to_json()) == started
    assert started.summary() == {
        "ExportArn": started.arn,
        "ExportStatus": "COMPLETED",
        "ExportType": "FULL_EXPORT",
    }


def test_exports_are_listed_oldest_first_by_table_a_page_at_a_time() -> None:
    records = [record() for _ in range(3)]
    for i, r in enumerate(records):
        r.export_id = f"0170000000000{i}-0a1b2c3d"
    other = record()
    other.table_arn, other.export_id = f"{ARN}2", "01699999999999-00000000"
    page, token = ledger_page([*reversed(records), other], _export_id, ARN, 2, None)
    assert [r.export_id for r in page] == [records[0].export_id, records[1].export_id] and token is not None
    rest, end = ledger_page(records, _export_id, ARN, 2, token)
    assert [r.export_id for r in rest] == [records[2].export_id] and end is None


def test_an_export_is_laid_out_as_dynamodb_lays_it_out() -> None:
    assert exports.export_base(record()) == "AWSDynamoDB/01700000000000-0a1b2c3d"
    assert exports.export_base(record(S3Prefix="backups/")) == "backups/AWSDynamoDB/01700000000000-0a1b2c3d"
    lines = exports.item_line({"pk": {"S": "a"}}) + exports.item_line({"pk": {"B": "YmFy"}})
    data = exports.data_file(record(), lines, 2)
    assert data.key.startswith("AWSDynamoDB/01700000000000-0a1b2c3d/data/") and data.key.endswith(".json.gz")
    assert [orjson.loads(line) for line in gzip.decompress(data.body).splitlines()] == [
        {"Item": {"pk": {"S": "a"}}},
        {"Item": {"pk": {"B": "YmFy"}}},
    ]
    listed = orjson.loads(exports.files_manifest([(data, '"etag1"')]))
    assert listed == {"itemCount": 2, "md5Checksum": data.md5, "etag": "etag1", "dataFileS3Key": data.key}
    summary = orjson.loads(exports.summary_manifest(record(), "uuid", 130.0, "files-key"))
    assert (summary["exportTime"], summary["manifestFilesS3Key"], summary["exportType"]) == (
        "1970-01-01T00:01:40.000Z",
        "files-key",
        "FULL_EXPORT",
    )
    assert exports.sse_arguments({"S3SseAlgorithm": "KMS", "S3SseKmsKeyId": "k"}) == {
        "ServerSideEncryption": "aws:kms",
        "SSEKMSKeyId": "k",
    }


def _export_id(record: ExportRecord) -> str:
    return record.export_id
