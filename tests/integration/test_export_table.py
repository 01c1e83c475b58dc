"""ExportTableToPointInTime to an S3-compatible store: a real cluster (`partita up`)
whose router writes the export to a local S3 server (moto_server, standing in for S3 or
MinIO), read back with boto3 and imported again with ImportTable."""

from __future__ import annotations

import gzip
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, running, wait_active
from tests.integration.test_import_table import PK, s3_client, s3_endpoint, scanned

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-export")]

__all__ = ["s3_endpoint"]  # the S3 server fixture, shared with the import tests
ON = {"PointInTimeRecoveryEnabled": True}


@pytest.fixture(scope="module")
def cluster(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    patch = pytest.MonkeyPatch()
    patch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)
    patch.setenv("AWS_ACCESS_KEY_ID", "s3")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "s3key")
    try:
        with running(tmp_path_factory.mktemp("export-cluster")) as c:
            yield c
    finally:
        patch.undo()


@pytest.fixture(scope="module")
def ddb(cluster: Cluster) -> Any:
    return cluster.client()


def new_bucket(s3_endpoint: str) -> str:
    name = f"dst-{uuid.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
    return name


def recoverable_table(ddb: Any) -> tuple[str, str]:
    name = f"exp-{uuid.uuid4().hex[:8]}"
    ddb.create_table(TableName=name, **PK)
    wait_active(ddb, name, timeout=30)
    ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=ON)
    return name, ddb.describe_table(TableName=name)["Table"]["TableArn"]


def finished(ddb: Any, arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        description: dict[str, Any] = ddb.describe_export(ExportArn=arn)["ExportDescription"]
        if description["ExportStatus"] != "IN_PROGRESS":
            return description
        assert time.monotonic() < deadline, description
        time.sleep(0.3)


def exported_items(s3_endpoint: str, bucket: str, prefix: str) -> list[dict[str, Any]]:
    s3 = s3_client(s3_endpoint)
    rows = []
    for listed in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
        if "/data/" in listed["Key"]:
            body = gzip.decompress(s3.get_object(Bucket=bucket, Key=listed["Key"])["Body"].read())
            rows.extend(json.loads(line)["Item"] for line in body.decode().splitlines() if line)
    return rows


def test_an_export_writes_the_table_as_it_was_at_the_export_time_in_dynamodbs_layout(
    ddb: Any, s3_endpoint: str
) -> None:
    name, arn = recoverable_table(ddb)
    for i in range(30):
        ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}, "v": {"N": str(i)}, "b": {"B": b"bar"}})
    then = scanned(ddb, name)
    time.sleep(1.0)
    moment = time.time()
    time.sleep(1.0)
    ddb.put_item(TableName=name, Item={"pk": {"S": "k0"}, "v": {"N": "100"}})
    ddb.delete_item(TableName=name, Key={"pk": {"S": "k1"}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "later"}, "v": {"N": "1"}})
    bucket = new_bucket(s3_endpoint)
    started = ddb.export_table_to_point_in_time(
        TableArn=arn, S3Bucket=bucket, S3Prefix="backups/", ExportTime=moment, ExportFormat="DYNAMODB_JSON"
    )["ExportDescription"]
    assert started["ExportStatus"] == "IN_PROGRESS" and started["TableArn"] == arn
    assert started["ExportArn"].startswith(f"{arn}/export/")
    done = finished(ddb, started["ExportArn"])
    assert done["ExportStatus"] == "COMPLETED", done
    assert (done["ItemCount"], done["ExportType"], done["ExportFormat"]) == (
        30,
        "FULL_EXPORT",
        "DYNAMODB_JSON",
    )
    assert done["BilledSizeBytes"] > 0 and done["S3Prefix"] == "backups/"

    rows = exported_items(s3_endpoint, bucket, "backups/AWSDynamoDB/")
    # Binary values as DynamoDB's JSON writes them: base64 text.
    assert {r["pk"]["S"]: r for r in rows} == {k: {**item, "b": {"B": "YmFy"}} for k, item in then.items()}
    s3 = s3_client(s3_endpoint)
    summary = json.loads(s3.get_object(Bucket=bucket, Key=done["ExportManifest"])["Body"].read())
    assert (summary["exportArn"], summary["itemCount"], summary["outputFormat"]) == (
        started["ExportArn"],
        30,
        "DYNAMODB_JSON",
    )
    files = s3.get_object(Bucket=bucket, Key=summary["manifestFilesS3Key"])["Body"].read().decode()
    listed = [json.loads(line) for line in files.splitlines()]
    assert sum(f["itemCount"] for f in listed) == 30
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="backups/")["Contents"]}
    assert {f["dataFileS3Key"] for f in listed} <= keys
    assert done["ExportManifest"].removesuffix(".json") + ".md5" in keys

    # What DynamoDB exported, ImportTable reads: the table comes back as it was then.
    export_id = started["ExportArn"].rsplit("/", 1)[1]
    imported = f"reimported-{uuid.uuid4().hex[:8]}"
    arn_of_import = ddb.import_table(
        S3BucketSource={"S3Bucket": bucket, "S3KeyPrefix": f"backups/AWSDynamoDB/{export_id}/data/"},
        InputFormat="DYNAMODB_JSON",
        InputCompressionType="GZIP",
        TableCreationParameters={"TableName": imported, **PK},
    )["ImportTableDescription"]["ImportArn"]
    deadline = time.monotonic() + 60
    while (
        ddb.describe_import(ImportArn=arn_of_import)["ImportTableDescription"]["ImportStatus"]
        == "IN_PROGRESS"
    ):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert scanned(ddb, imported) == then

    listed_exports = ddb.list_exports(TableArn=arn)["ExportSummaries"]
    assert listed_exports == [
        {"ExportArn": started["ExportArn"], "ExportStatus": "COMPLETED", "ExportType": "FULL_EXPORT"}
    ]


def test_an_export_to_a_missing_bucket_fails_with_s3s_words(ddb: Any) -> None:
    _, arn = recoverable_table(ddb)
    started = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket=f"missing-{uuid.uuid4().hex}")
    done = finished(ddb, started["ExportDescription"]["ExportArn"])
    assert (done["ExportStatus"], done["FailureCode"]) == ("FAILED", "S3NoSuchBucket")
    assert "The specified bucket does not exist" in done["FailureMessage"]


def test_exports_are_refused_outside_the_window_and_a_token_names_one_export(
    ddb: Any, s3_endpoint: str
) -> None:
    _, arn = recoverable_table(ddb)
    bucket = new_bucket(s3_endpoint)
    with pytest.raises(ClientError) as exc:
        ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket=bucket, ExportTime=time.time() - 3600)
    assert exc.value.response["Error"]["Code"] == "InvalidExportTimeException"
    token = uuid.uuid4().hex
    first = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket=bucket, ClientToken=token)
    again = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket=bucket, ClientToken=token)
    assert again["ExportDescription"]["ExportArn"] == first["ExportDescription"]["ExportArn"]
    with pytest.raises(ClientError) as exc:
        ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket=bucket, S3Prefix="other", ClientToken=token)
    assert exc.value.response["Error"]["Code"] == "ExportConflictException"
    done = finished(ddb, first["ExportDescription"]["ExportArn"])
    assert (done["ExportStatus"], done["ItemCount"]) == ("COMPLETED", 0)
    missing = f"{arn}/export/01700000000000-abcdef12"
    with pytest.raises(ClientError) as exc:
        ddb.describe_export(ExportArn=missing)
    assert exc.value.response["Error"]["Code"] == "ExportNotFoundException"
