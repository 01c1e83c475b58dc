"""ImportTable's pure parts: reading a source object's items, its counts, ListImports' pages."""

from __future__ import annotations

import gzip
import json

from partita.api.operations import imports
from partita.control.model import KeyElement, TableRecord

TABLE = TableRecord(
    name="Orders", table_id=5, status="ACTIVE", partition_key=KeyElement("pk", "S"), sort_key=KeyElement("sk", "N"),
    attribute_definitions=(("pk", "S"), ("sk", "N")), billing_mode="PAY_PER_REQUEST", read_capacity=0,
    write_capacity=0, created_at=1.0, partitions=(),
)  # fmt: skip
JSON = {"InputFormat": "DYNAMODB_JSON"}


def item(pk: str, sk: str = "1", **attrs: object) -> dict[str, object]:
    return {"pk": {"S": pk}, "sk": {"N": sk}, **attrs}


def test_dynamodb_json_objects_are_read_with_or_without_newlines_between_them() -> None:
    text = (
        json.dumps({"Item": item("a")})
        + "\n\n"
        + json.dumps({"Item": item("b")})
        + json.dumps({"Item": item("c")})
    )
    parsed = imports.parse_object(text.encode(), JSON, TABLE)
    assert [i["pk"]["S"] for i in parsed.items] == ["a", "b", "c"] and parsed.errors == 0


def test_records_that_are_not_items_of_the_table_are_errors() -> None:
    records = [
        json.dumps(item("no-wrapper")),  # not {"Item": ...}
        json.dumps({"Item": {"pk": {"S": "no-sort-key"}}}),
        json.dumps({"Item": item("x", sk="1") | {"sk": {"S": "1"}}}),  # the sort key's type
        json.dumps({"Item": item("big", blob={"S": "x" * (400 * 1024)})}),
        json.dumps({"Item": item("empty-set", tags={"SS": []})}),
        json.dumps({"Item": item("good")}),
    ]
    parsed = imports.parse_object("\n".join(records).encode(), JSON, TABLE)
    assert [i["pk"]["S"] for i in parsed.items] == ["good"] and parsed.errors == 5
    cut = imports.parse_object(b'{"Item": {"pk": {"S": "a"}, "sk": {"N": "1"}}} {"Item": ', JSON, TABLE)
    assert (len(cut.items), cut.errors) == (1, 1)  # the rest of a torn object is one error


def test_csv_keys_are_typed_as_the_table_defines_them_and_other_values_are_strings() -> None:
    text = "pk|sk|colour|size\na|7|red|10\nb|8||\nc|9\n"
    request = {"InputFormat": "CSV", "InputFormatOptions": {"Csv": {"Delimiter": "|"}}}
    parsed = imports.parse_object(text.encode(), request, TABLE)
    assert parsed.items == [
        {"pk": {"S": "a"}, "sk": {"N": "7"}, "colour": {"S": "red"}, "size": {"S": "10"}},
        {"pk": {"S": "b"}, "sk": {"N": "8"}},
    ]
    assert parsed.errors == 1  # a row short of the header
    listed = {"InputFormat": "CSV", "InputFormatOptions": {"Csv": {"HeaderList": ["pk", "sk", "v"]}}}
    assert imports.parse_object(b"d,3,x\n", listed, TABLE).items == [
        {"pk": {"S": "d"}, "sk": {"N": "3"}, "v": {"S": "x"}}
    ]


def test_a_gzipped_object_is_decompressed_and_one_that_is_not_gzip_is_one_error() -> None:
    body = gzip.compress(json.dumps({"Item": item("z")}).encode())
    assert len(imports.read_object(body, "GZIP", JSON, TABLE).items) == 1
    broken = imports.read_object(b"not gzip", "GZIP", JSON, TABLE)
    assert (broken.items, broken.errors) == ([], 1)


def record(import_id: str, table_arn: str = "arn:t") -> imports.ImportRecord:
    request = {"S3BucketSource": {"S3Bucket": "b"}, "InputFormat": "CSV", "ClientToken": "tok"}
    return imports.ImportRecord(import_id, f"{table_arn}/import/{import_id}", "T", table_arn, 5, request, 1.0)


def test_an_import_record_round_trips_and_describes_itself_as_dynamodb_does() -> None:
    made = record("01")
    made.status, made.ended_at, made.failure_code, made.failure_message = (
        "FAILED",
        2.0,
        "S3NoSuchBucket",
        "gone",
    )
    back = imports.ImportRecord.from_json(json.loads(json.dumps(made.to_json())))
    assert back == made
    described = back.description("uuid")
    assert described["ClientToken"] == "tok" and described["TableId"] == "uuid"
    assert (described["FailureCode"], described["EndTime"], described["InputFormat"]) == (
        "S3NoSuchBucket",
        2.0,
        "CSV",
    )
    assert set(back.summary()) == {
        "ImportArn",
        "ImportStatus",
        "TableArn",
        "S3BucketSource",
        "InputFormat",
        "StartTime",
        "EndTime",
    }


def test_list_imports_pages_oldest_first_and_filters_by_table() -> None:
    records = [record(f"0{i}", "arn:a" if i % 2 else "arn:b") for i in range(5)]
    page, token = imports.ledger_page(records, _import_id, None, 2, None)
    assert [r.import_id for r in page] == ["00", "01"] and token == "01"
    page, token = imports.ledger_page(records, _import_id, None, 2, token)
    assert [r.import_id for r in page] == ["02", "03"]
    assert [r.import_id for r in imports.ledger_page(records, _import_id, "arn:a", None, None)[0]] == [
        "01",
        "03",
    ]


def _import_id(record: imports.ImportRecord) -> str:
    return record.import_id
