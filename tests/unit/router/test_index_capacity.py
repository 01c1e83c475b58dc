"""A global secondary index's own throughput at the router: a write is refused when one
of the table's global indexes is out of its write capacity, a Query or Scan of a global
index is admitted on the index's reads (not the table's), and a write's index units are
metered to the index (global) or the table (local)."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import orjson
import pytest

from partita.common.errors import DynamoError
from partita.control.model import KeyElement, NodeRecord, SecondaryIndex, TableRecord
from partita.control.store import MemoryControlStore
from partita.router import metrics
from partita.router.admission import Admission, ProvisionedRate
from partita.router.app import DynamoApp
from partita.router.context import RouterContext, RouterSettings
from partita.router.credentials import CredentialStore, save
from partita.router.index_capacity import global_indexes, index_name, index_record, queried
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from tests.unit.records import put_record, table_record
from tests.unit.router.test_admission import Clock, consume
from tests.unit.router.test_app import ADMIN, signed

BY_G = SecondaryIndex("by-g", "GLOBAL", KeyElement("g", "S"), None, read_capacity=5, write_capacity=1)
BY_L = SecondaryIndex("by-l", "LOCAL", KeyElement("pk", "S"), KeyElement("l", "S"))


def indexed_table() -> TableRecord:
    record = table_record(
        name=f"t-{uuid.uuid4().hex[:8]}", billing_mode="PROVISIONED", read_capacity=1000, write_capacity=1000
    )
    return dataclasses.replace(
        record,
        indexes=(BY_G, BY_L),
        attribute_definitions=(("pk", "S"), ("g", "S"), ("l", "S")),
    )


def test_a_global_index_is_a_table_of_its_own_name_and_throughput_and_local_ones_are_not() -> None:
    record = indexed_table()
    (index,) = global_indexes(record)
    assert index.name == index_name(record.name, "by-g") == f"{record.name}/index/by-g"
    assert (index.read_capacity, index.write_capacity, index.table_id) == (5, 1, record.table_id)
    assert index_record(record, BY_G) is index  # made once per record, not per request
    assert queried(record, "by-g") is index
    assert queried(record, "by-l") is record and queried(record, None) is record
    assert queried(record, "no-such-index") is record  # the request's own checks refuse it


def test_a_query_of_a_global_index_is_admitted_on_the_indexs_reads_not_the_tables() -> None:
    clock = Clock()
    record = indexed_table()
    admission = Admission(
        ProvisionedRate(), clock=clock, table_arn=lambda n: f"arn:aws:dynamodb:r:1:table/{n}"
    )
    index = queried(record, "by-g")
    admission.admit(record, "read")
    consume(record, "read", 10_000_000.0)  # the table deep in debt
    admission.admit(index, "read")  # its index is not
    consume(index, "read", 10_000.0)
    with pytest.raises(DynamoError) as caught:
        admission.admit(index, "read")
    assert caught.value.body()["ThrottlingReasons"] == [
        {
            "reason": "IndexReadProvisionedThroughputExceeded",
            "resource": f"arn:aws:dynamodb:r:1:table/{record.name}/index/by-g",
        }
    ]
    assert "global secondary indexes" in caught.value.message


async def test_a_write_is_refused_when_a_global_index_is_out_of_its_write_capacity(tmp_path: Path) -> None:
    """Wired into DynamoApp: the table has 1,000 WCU to spare, its global index none."""
    path = tmp_path / "credentials.json"
    save(path, [ADMIN])
    store = MemoryControlStore()
    await store.register_node(NodeRecord("a", "a", "127.0.0.1:1", "127.0.0.1:2"), ttl=10)
    record = indexed_table()
    await put_record(store, record)
    tables = TableCache(store)
    await tables.refresh()
    ctx = RouterContext(tables, store, StorageClient(), RouterSettings(account_id="123456789012"))
    app = DynamoApp(
        ctx, CredentialStore(path), Admission(ProvisionedRate(), clock=Clock(), table_arn=ctx.table_arn)
    )
    cached = tables.tables[record.name].record
    app.admission.admit(index_record(cached, BY_G), "write")  # type: ignore[union-attr]
    consume(index_record(cached, BY_G), "write", 1_000.0)
    item = {"pk": {"S": "k"}, "g": {"S": "v"}}
    response = await app(signed("PutItem", {"TableName": record.name, "Item": item}))
    body = orjson.loads(response.body)
    assert response.status == 400
    assert body["__type"].endswith("#ProvisionedThroughputExceededException")
    assert body["message"].startswith(
        "The level of configured provisioned throughput for one or more global secondary indexes"
    )
    assert body["ThrottlingReasons"] == [
        {
            "reason": "IndexWriteProvisionedThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{record.name}/index/by-g",
        }
    ]


def test_a_writes_index_units_are_metered_to_a_global_index_and_a_local_ones_to_the_table() -> None:
    record = indexed_table()
    ctx = RouterContext(
        TableCache(MemoryControlStore()), MemoryControlStore(), StorageClient(), RouterSettings()
    )
    table_writes = metrics.consumed_cells(record.name)[1]
    index_writes = metrics.consumed_cells(index_name(record.name, "by-g"))[1]
    before = (table_writes.value, index_writes.value)
    ctx._meter_indexes(record, {"by-g": 2.0, "by-l": 1.0})
    assert (table_writes.value - before[0], index_writes.value - before[1]) == (1.0, 2.0)
