"""ImportTable from, and ExportTableToPointInTime to, an S3-compatible store: a real
cluster (`partita up`) whose router reads and writes the objects on a local S3 server
(moto_server, standing in for S3 or MinIO: the router's S3 client is configured by
AWS_ENDPOINT_URL_S3, as any botocore client). One cluster for both: an export is read
back by ImportTable too."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.integration.cluster import Cluster, running, wait_active
from tests.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-import")]

PK = {"AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
      "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST"}  # fmt: skip


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = open(tmp_path_factory.mktemp("s3") / "moto_server.log", "wb")  # noqa: SIM115 - the server's
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                s3_client(endpoint).list_buckets()
                break
            except Exception:
                assert server.poll() is None and time.monotonic() < deadline, "moto_server did not start"
                time.sleep(0.2)
        yield endpoint
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def s3_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="s3",
        aws_secret_access_key="s3key",
    )


@pytest.fixture(scope="module")
def cluster(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    patch = pytest.MonkeyPatch()
    # What the cluster's processes inherit: the S3 server to read, and its credentials.
    patch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)
    patch.setenv("AWS_ACCESS_KEY_ID", "s3")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "s3key")
    try:
        with running(tmp_path_factory.mktemp("import-cluster"), "--replication-factor", "1") as c:
            yield c
    finally:
        patch.undo()


@pytest.fixture(scope="module")
def ddb(cluster: Cluster) -> Any:
    return cluster.client()


def bucket(s3_endpoint: str, objects: dict[str, bytes]) -> str:
    name = f"src-{uuid.uuid4().hex[:12]}"
    s3 = s3_client(s3_endpoint)
    s3.create_bucket(Bucket=name)
    for key, body in objects.items():
        s3.put_object(Bucket=name, Key=key, Body=body)
    return name


def settled(describe: Callable[[], dict[str, Any]], status: str, timeout: float = 90.0) -> dict[str, Any]:
    """An import's or export's description once its `status` is no longer IN_PROGRESS."""
    deadline = time.monotonic() + timeout
    while True:
        description = describe()
        if description[status] != "IN_PROGRESS":
            return description
        assert time.monotonic() < deadline, description
        time.sleep(0.2)


def finished(ddb: Any, arn: str) -> dict[str, Any]:
    return settled(lambda: ddb.describe_import(ImportArn=arn)["ImportTableDescription"], "ImportStatus")


def start(ddb: Any, source: str, table: str, prefix: str = "", **extra: Any) -> dict[str, Any]:
    description: dict[str, Any] = ddb.import_table(
        S3BucketSource={"S3Bucket": source, **({"S3KeyPrefix": prefix} if prefix else {})},
        InputFormat=extra.pop("InputFormat", "DYNAMODB_JSON"),
        TableCreationParameters={"TableName": table, **PK},
        **extra,
    )["ImportTableDescription"]
    return description


def scanned(ddb: Any, table: str) -> dict[str, dict[str, Any]]:
    items = ddb.scan(TableName=table, ConsistentRead=True)["Items"]
    return {item["pk"]["S"]: item for item in items}


def json_item(pk: str, **attrs: Any) -> str:
    return json.dumps({"Item": {"pk": {"S": pk}, **attrs}})


def test_dynamodb_json_objects_from_every_file_under_the_prefix_are_imported(
    ddb: Any, s3_endpoint: str
) -> None:
    lines = "\n".join(json_item(f"a{i}", n={"N": str(i)}) for i in range(5)) + "\n"
    joined = "".join(json_item(f"b{i}") for i in range(3))  # objects one after another, no newline
    source = bucket(
        s3_endpoint,
        {"data/one.json": lines.encode(), "data/two": joined.encode(), "other.json": json_item("z").encode()},
    )
    table = f"imported-{uuid.uuid4().hex[:8]}"
    description = start(ddb, source, table, prefix="data/")
    assert description["ImportStatus"] == "IN_PROGRESS" and description["TableArn"].endswith(
        f":table/{table}"
    )
    done = finished(ddb, description["ImportArn"])
    assert (done["ImportStatus"], done["ErrorCount"], done["ProcessedItemCount"], done["ImportedItemCount"]) == (
        "COMPLETED", 0, 8, 8,
    )  # fmt: skip
    assert done["ProcessedSizeBytes"] == len(lines) + len(joined)
    assert ddb.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE"
    items = scanned(ddb, table)
    assert sorted(items) == [*(f"a{i}" for i in range(5)), *(f"b{i}" for i in range(3))]
    assert items["a3"]["n"] == {"N": "3"}
    listed = ddb.list_imports(TableArn=done["TableArn"])["ImportSummaryList"]
    assert [(s["ImportArn"], s["ImportStatus"]) for s in listed] == [(done["ImportArn"], "COMPLETED")]


def test_a_gzipped_csv_file_is_imported_with_its_keys_typed_as_the_table_defines_them(
    ddb: Any, s3_endpoint: str
) -> None:
    text = io.StringIO()
    writer = csv.writer(text, delimiter=";")
    writer.writerows([["pk", "colour", "size"], ["k1", "red", "10"], ["k2", "blue", ""]])
    source = bucket(s3_endpoint, {"rows.csv.gz": gzip.compress(text.getvalue().encode())})
    table = f"csv-{uuid.uuid4().hex[:8]}"
    description = start(
        ddb, source, table, InputFormat="CSV", InputCompressionType="GZIP",
        InputFormatOptions={"Csv": {"Delimiter": ";"}},
    )  # fmt: skip
    assert finished(ddb, description["ImportArn"])["ImportStatus"] == "COMPLETED"
    assert scanned(ddb, table) == {
        "k1": {"pk": {"S": "k1"}, "colour": {"S": "red"}, "size": {"S": "10"}},
        "k2": {"pk": {"S": "k2"}, "colour": {"S": "blue"}},
    }


def test_records_that_are_not_items_are_counted_and_the_import_fails_keeping_the_rest(
    ddb: Any, s3_endpoint: str
) -> None:
    bad = json.dumps({"pk": {"S": "no-item-wrapper"}}) + "\n" + json.dumps({"Item": {"pk": {"N": "1"}}})
    source = bucket(s3_endpoint, {"good.json": json_item("ok").encode(), "bad.json": bad.encode()})
    table = f"partial-{uuid.uuid4().hex[:8]}"
    done = finished(ddb, start(ddb, source, table)["ImportArn"])
    assert (done["ImportStatus"], done["ErrorCount"], done["ProcessedItemCount"], done["ImportedItemCount"]) == (
        "FAILED", 2, 3, 1,
    )  # fmt: skip
    assert table in ddb.list_tables()["TableNames"]
    assert list(scanned(ddb, table)) == ["ok"]


def test_a_missing_bucket_fails_the_import_and_drops_its_table(ddb: Any) -> None:
    table = f"nobucket-{uuid.uuid4().hex[:8]}"
    done = finished(ddb, start(ddb, f"missing-{uuid.uuid4().hex}", table)["ImportArn"])
    assert (done["ImportStatus"], done["FailureCode"]) == ("FAILED", "S3NoSuchBucket")
    assert "The specified bucket does not exist" in done["FailureMessage"]
    # Gone once the import reads FAILED, as DynamoDB's (moto's verified test checks at once).
    assert table not in ddb.list_tables()["TableNames"]


def test_the_table_is_checked_as_create_table_checks_it_and_unknown_imports_are_not_found(ddb: Any) -> None:
    table = f"invalid-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ClientError) as exc:
        ddb.import_table(
            S3BucketSource={"S3Bucket": "any"}, InputFormat="DYNAMODB_JSON",
            TableCreationParameters={**PK, "TableName": table, "BillingMode": "PROVISIONED"},
        )  # fmt: skip
    assert exc.value.response["Error"]["Message"] == (
        "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be "
        "specified when BillingMode is PROVISIONED"
    )
    assert table not in ddb.list_tables()["TableNames"]
    missing = "arn:aws:dynamodb:us-east-1:000000000000:table/x/import/01700000000000-abcdef12"
    with pytest.raises(ClientError) as exc:
        ddb.describe_import(ImportArn=missing)
    assert exc.value.response["Error"]["Code"] == "ImportNotFoundException"


def test_the_same_client_token_is_the_same_import(ddb: Any, s3_endpoint: str) -> None:
    source = bucket(s3_endpoint, {"one.json": json_item("t").encode()})
    table = f"token-{uuid.uuid4().hex[:8]}"
    token = uuid.uuid4().hex
    first = start(ddb, source, table, ClientToken=token)
    again = start(ddb, source, table, ClientToken=token)
    assert again["ImportArn"] == first["ImportArn"]
    assert finished(ddb, first["ImportArn"])["ImportedItemCount"] == 1


# --- exports ---------------------------------------------------------------------------

ON = {"PointInTimeRecoveryEnabled": True}


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


def export_finished(ddb: Any, arn: str) -> dict[str, Any]:
    return settled(lambda: ddb.describe_export(ExportArn=arn)["ExportDescription"], "ExportStatus")


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
    done = export_finished(ddb, started["ExportArn"])
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
    assert finished(ddb, arn_of_import)["ImportStatus"] == "COMPLETED"
    assert scanned(ddb, imported) == then

    listed_exports = ddb.list_exports(TableArn=arn)["ExportSummaries"]
    assert listed_exports == [
        {"ExportArn": started["ExportArn"], "ExportStatus": "COMPLETED", "ExportType": "FULL_EXPORT"}
    ]


def test_an_export_to_a_missing_bucket_fails_with_s3s_words(ddb: Any) -> None:
    _, arn = recoverable_table(ddb)
    started = ddb.export_table_to_point_in_time(TableArn=arn, S3Bucket=f"missing-{uuid.uuid4().hex}")
    done = export_finished(ddb, started["ExportDescription"]["ExportArn"])
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
    done = export_finished(ddb, first["ExportDescription"]["ExportArn"])
    assert (done["ExportStatus"], done["ItemCount"]) == ("COMPLETED", 0)
    missing = f"{arn}/export/01700000000000-abcdef12"
    with pytest.raises(ClientError) as exc:
        ddb.describe_export(ExportArn=missing)
    assert exc.value.response["Error"]["Code"] == "ExportNotFoundException"
