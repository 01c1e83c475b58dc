"""Global and local secondary indexes: Query and Scan of an index, its projections, its
paging, and the checks writes make on index key attributes.

Written to pass against DynamoDB too (README.md here). The error texts are DynamoDB's,
as ScyllaDB Alternator's test_gsi.py and test_lsi.py recorded them against it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, all_pages, create_table, error, validation
from tests.integration.cluster import wait_active

pytestmark = PYTESTMARK


def _index(name: str, hash_key: str, range_key: str | None, projection: dict[str, Any]) -> dict[str, Any]:
    schema = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    if range_key is not None:
        schema.append({"AttributeName": range_key, "KeyType": "RANGE"})
    return {"IndexName": name, "KeySchema": schema, "Projection": projection}


@pytest.fixture(scope="module")
def indexed(ddb: Any) -> str:
    """pk/sk (S/N) with four indexes: `by_group` (group/rank, ALL), `keys_only`
    (group/rank, KEYS_ONLY), `include` (group, INCLUDE colour) and the local `by_rank`
    (pk/rank, KEYS_ONLY)."""
    name = f"compat-idx-{uuid.uuid4().hex[:10]}"
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
            {"AttributeName": "group", "AttributeType": "S"},
            {"AttributeName": "rank", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            _index("by_group", "group", "rank", {"ProjectionType": "ALL"}),
            _index("keys_only", "group", "rank", {"ProjectionType": "KEYS_ONLY"}),
            _index("include", "group", None, {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["colour"]}),
        ],
        LocalSecondaryIndexes=[_index("by_rank", "pk", "rank", {"ProjectionType": "KEYS_ONLY"})],
    )
    wait_active(ddb, name, timeout=30)
    return name


def _put(ddb: Any, table: str, pk: str, sk: int, **attributes: dict[str, str]) -> None:
    ddb.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"N": str(sk)}, **attributes})


def _group_request(table: str, group: str, index: str) -> dict[str, Any]:
    return {
        "TableName": table,
        "IndexName": index,
        "KeyConditionExpression": "#g = :g",
        "ExpressionAttributeNames": {"#g": "group"},
        "ExpressionAttributeValues": {":g": {"S": group}},
    }


def _group_query(ddb: Any, table: str, group: str, index: str = "by_group", **kwargs: Any) -> dict[str, Any]:
    out: dict[str, Any] = ddb.query(**_group_request(table, group, index), **kwargs)
    return out


def _fill_group(ddb: Any, table: str, group: str, ranks: list[int]) -> list[str]:
    """One item per rank, each under its own partition key (so on many partitions)."""
    pks = []
    for rank in ranks:
        pk = uuid.uuid4().hex
        _put(ddb, table, pk, 1, group={"S": group}, rank={"N": str(rank)}, colour={"S": f"c{rank}"},
             size={"N": str(rank * 10)})  # fmt: skip
        pks.append(pk)
    return pks


def test_a_global_index_query_finds_its_key_across_partitions_in_sort_key_order(
    ddb: Any, indexed: str
) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [5, 1, 4, 2, 3])
    _fill_group(ddb, indexed, uuid.uuid4().hex, [1, 2])  # another group: not returned
    out = _group_query(ddb, indexed, group)
    assert [item["rank"]["N"] for item in out["Items"]] == ["1", "2", "3", "4", "5"]
    assert out["Count"] == out["ScannedCount"] == 5
    assert all(item["colour"]["S"] == f"c{item['rank']['N']}" for item in out["Items"])  # ALL projection
    descending = _group_query(ddb, indexed, group, ScanIndexForward=False)
    assert [item["rank"]["N"] for item in descending["Items"]] == ["5", "4", "3", "2", "1"]


def test_a_global_index_query_applies_its_sort_key_condition(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1, 2, 3, 4, 5])
    out = ddb.query(
        TableName=indexed,
        IndexName="by_group",
        KeyConditionExpression="#g = :g AND #r BETWEEN :lo AND :hi",
        ExpressionAttributeNames={"#g": "group", "#r": "rank"},
        ExpressionAttributeValues={":g": {"S": group}, ":lo": {"N": "2"}, ":hi": {"N": "4"}},
    )
    assert [item["rank"]["N"] for item in out["Items"]] == ["2", "3", "4"]


def test_an_item_without_the_index_keys_is_not_in_the_index(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1])
    _put(ddb, indexed, uuid.uuid4().hex, 1, group={"S": group})  # no rank: not in by_group
    assert [item["rank"]["N"] for item in _group_query(ddb, indexed, group)["Items"]] == ["1"]
    # `include` has no sort key: an item with `group` alone is in it.
    assert _group_query(ddb, indexed, group, index="include")["Count"] == 2


def test_writes_move_items_in_and_out_of_an_index(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    pks = _fill_group(ddb, indexed, group, [1, 2, 3])
    ddb.update_item(
        TableName=indexed,
        Key={"pk": {"S": pks[0]}, "sk": {"N": "1"}},
        UpdateExpression="SET #r = :r",
        ExpressionAttributeNames={"#r": "rank"},
        ExpressionAttributeValues={":r": {"N": "9"}},
    )
    ddb.delete_item(TableName=indexed, Key={"pk": {"S": pks[1]}, "sk": {"N": "1"}})
    ddb.update_item(
        TableName=indexed,
        Key={"pk": {"S": pks[2]}, "sk": {"N": "1"}},
        UpdateExpression="REMOVE #r",
        ExpressionAttributeNames={"#r": "rank"},
    )
    assert [item["rank"]["N"] for item in _group_query(ddb, indexed, group)["Items"]] == ["9"]


def test_a_keys_only_index_returns_the_table_and_index_keys(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1])
    (item,) = _group_query(ddb, indexed, group, index="keys_only")["Items"]
    assert set(item) == {"pk", "sk", "group", "rank"}


def test_an_include_index_returns_its_non_key_attributes_too(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1])
    (item,) = _group_query(ddb, indexed, group, index="include")["Items"]
    assert set(item) == {"pk", "sk", "group", "colour"}


def test_a_global_index_query_pages_with_its_keys_in_the_last_evaluated_key(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, list(range(1, 8)))
    first = _group_query(ddb, indexed, group, Limit=3)
    assert set(first["LastEvaluatedKey"]) == {"pk", "sk", "group", "rank"}
    assert first["LastEvaluatedKey"]["rank"] == {"N": "3"}
    items, pages = all_pages(
        ddb.query,
        TableName=indexed,
        IndexName="by_group",
        KeyConditionExpression="#g = :g",
        ExpressionAttributeNames={"#g": "group"},
        ExpressionAttributeValues={":g": {"S": group}},
        Limit=2,
    )
    assert [item["rank"]["N"] for item in items] == [str(r) for r in range(1, 8)]
    assert pages == 4


def test_a_filter_on_an_index_query_counts_what_it_read(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1, 2, 3, 4])
    out = ddb.query(
        TableName=indexed,
        IndexName="by_group",
        KeyConditionExpression="#g = :g",
        FilterExpression="#s > :s",
        ExpressionAttributeNames={"#g": "group", "#s": "size"},
        ExpressionAttributeValues={":g": {"S": group}, ":s": {"N": "25"}},
    )
    assert [item["rank"]["N"] for item in out["Items"]] == ["3", "4"]
    assert (out["Count"], out["ScannedCount"]) == (2, 4)


def test_a_local_index_orders_one_item_collection_by_its_sort_key(ddb: Any, indexed: str) -> None:
    pk = uuid.uuid4().hex
    for sk, rank in ((1, 30), (2, 10), (3, 20)):
        _put(ddb, indexed, pk, sk, rank={"N": str(rank)}, note={"S": f"n{sk}"})
    _put(ddb, indexed, pk, 4)  # no rank: not in the local index
    out = ddb.query(
        TableName=indexed,
        IndexName="by_rank",
        KeyConditionExpression="pk = :p AND #r > :r",
        ExpressionAttributeNames={"#r": "rank"},
        ExpressionAttributeValues={":p": {"S": pk}, ":r": {"N": "5"}},
        ConsistentRead=True,
    )
    assert [item["sk"]["N"] for item in out["Items"]] == ["2", "3", "1"]
    assert set(out["Items"][0]) == {"pk", "sk", "rank"}  # KEYS_ONLY
    # A local index fetches the rest of an item from the table when asked.
    whole = ddb.query(
        TableName=indexed,
        IndexName="by_rank",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": pk}},
        Select="ALL_ATTRIBUTES",
    )
    assert [item["note"]["S"] for item in whole["Items"]] == ["n2", "n3", "n1"]


def test_a_local_index_charges_the_table_a_read_of_each_item_it_fetches(ddb: Any, indexed: str) -> None:
    # dynalite's DynamoDB-verified "should return all attributes when specified for
    # secondary indexes": each item fetched costs the table a read of its own.
    pk = uuid.uuid4().hex
    for sk, rank in ((1, 30), (2, 10), (3, 20)):
        _put(ddb, indexed, pk, sk, rank={"N": str(rank)}, note={"S": f"n{sk}"})

    def consumed(**kwargs: Any) -> dict[str, Any]:
        values = {":p": {"S": pk}, **kwargs.pop("values", {})}
        out = ddb.query(
            TableName=indexed, IndexName="by_rank", KeyConditionExpression="pk = :p",
            ExpressionAttributeValues=values, ConsistentRead=True, ReturnConsumedCapacity="INDEXES", **kwargs,
        )  # fmt: skip
        result: dict[str, Any] = out["ConsumedCapacity"]
        return result

    fetched = consumed(Select="ALL_ATTRIBUTES")
    assert fetched["CapacityUnits"] == 4.0
    assert fetched["Table"] == {"CapacityUnits": 3.0}
    assert fetched["LocalSecondaryIndexes"] == {"by_rank": {"CapacityUnits": 1.0}}
    # A projection of what the entries hold fetches nothing.
    entries_only = consumed(ProjectionExpression="sk, #r", ExpressionAttributeNames={"#r": "rank"})
    assert (entries_only["CapacityUnits"], entries_only["Table"]) == (1.0, {"CapacityUnits": 0.0})
    # A filter on an attribute the entries lack fetches every item read.
    filtered = consumed(
        FilterExpression="note = :n", values={":n": {"S": "n2"}}, ProjectionExpression="sk",
    )  # fmt: skip
    assert filtered["Table"] == {"CapacityUnits": 3.0}


def test_a_scan_of_an_index_reads_only_the_items_it_holds(ddb: Any) -> None:
    name = f"compat-idx-{uuid.uuid4().hex[:10]}"
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "tag", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[_index("by_tag", "tag", None, {"ProjectionType": "KEYS_ONLY"})],
    )
    wait_active(ddb, name, timeout=30)
    for i in range(12):
        item = {"pk": {"S": f"k{i}"}, "other": {"N": str(i)}}
        if i % 3 == 0:
            item["tag"] = {"S": f"t{i}"}
        ddb.put_item(TableName=name, Item=item)
    items, _ = all_pages(ddb.scan, TableName=name, IndexName="by_tag", Limit=2)
    assert sorted(item["pk"]["S"] for item in items) == ["k0", "k3", "k6", "k9"]
    assert all(set(item) == {"pk", "tag"} for item in items)
    counted = ddb.scan(TableName=name, IndexName="by_tag", Select="COUNT")
    assert (counted["Count"], counted["ScannedCount"]) == (4, 4)


def test_describe_table_lists_the_indexes(ddb: Any, indexed: str) -> None:
    table = ddb.describe_table(TableName=indexed)["Table"]
    globals_ = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    assert set(globals_) == {"by_group", "keys_only", "include"}
    assert globals_["by_group"]["IndexStatus"] == "ACTIVE"
    assert globals_["by_group"]["KeySchema"] == [
        {"AttributeName": "group", "KeyType": "HASH"},
        {"AttributeName": "rank", "KeyType": "RANGE"},
    ]
    assert globals_["include"]["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["colour"]}
    assert globals_["by_group"]["IndexArn"] == f"{table['TableArn']}/index/by_group"
    (local,) = table["LocalSecondaryIndexes"]
    assert local["IndexName"] == "by_rank"
    assert local["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert "IndexStatus" not in local


# --- errors --------------------------------------------------------------------------------


def test_a_query_of_a_missing_index_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.query,
        TableName=indexed,
        IndexName="nothere",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "x"}},
    )
    assert message == "The table does not have the specified index: nothere"


def test_a_consistent_read_of_a_global_index_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(ddb.query, **_group_request(indexed, "g", "by_group"), ConsistentRead=True)
    assert message == "Consistent reads are not supported on global secondary indexes"


def test_all_attributes_of_a_global_index_that_projects_less_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(ddb.query, **_group_request(indexed, "g", "keys_only"), Select="ALL_ATTRIBUTES")
    assert message == (
        "One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global "
        "secondary index keys_only because its projection type is not ALL"
    )


def test_a_query_of_an_index_must_name_its_partition_key(ddb: Any, indexed: str) -> None:
    code, _ = error(
        ddb.query,
        TableName=indexed,
        IndexName="by_group",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "x"}},
    )
    assert code == "ValidationException"


def test_a_put_with_an_index_key_of_the_wrong_type_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=indexed,
        Item={"pk": {"S": "x"}, "sk": {"N": "1"}, "group": {"N": "3"}},
    )
    assert message == (
        "One or more parameter values were invalid: Type mismatch for Index Key group Expected: S Actual: N "
        "IndexName: by_group"
    )


def test_an_update_that_gives_an_index_key_the_wrong_type_is_refused(ddb: Any, indexed: str) -> None:
    pk = uuid.uuid4().hex
    _put(ddb, indexed, pk, 1)
    message = validation(
        ddb.update_item,
        TableName=indexed,
        Key={"pk": {"S": pk}, "sk": {"N": "1"}},
        UpdateExpression="SET #r = :r",
        ExpressionAttributeNames={"#r": "rank"},
        ExpressionAttributeValues={":r": {"S": "high"}},
    )
    assert message.startswith(
        "One or more parameter values were invalid: Type mismatch for Index Key rank Expected: N Actual: S"
    )
    assert "rank" not in ddb.get_item(TableName=indexed, Key={"pk": {"S": pk}, "sk": {"N": "1"}})["Item"]


def test_an_empty_string_index_key_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.put_item,
        TableName=indexed,
        Item={"pk": {"S": "x"}, "sk": {"N": "1"}, "group": {"S": ""}},
    )
    assert message.startswith(
        "One or more parameter values are not valid. A value specified for a secondary index key is not "
        "supported. The AttributeValue for a key attribute cannot contain an empty string value."
    )


def test_a_partiql_select_from_an_index_reads_it(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [3, 1, 2])
    out = ddb.execute_statement(
        Statement=f'SELECT "rank" FROM "{indexed}"."by_group" WHERE "group" = ? AND "rank" >= 2',
        Parameters=[{"S": group}],
    )
    assert sorted(item["rank"]["N"] for item in out["Items"]) == ["2", "3"]


def test_consumed_capacity_of_an_index_read_names_the_index(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1])
    consumed = _group_query(ddb, indexed, group, ReturnConsumedCapacity="INDEXES")["ConsumedCapacity"]
    assert consumed["TableName"] == indexed
    assert consumed["GlobalSecondaryIndexes"]["by_group"]["CapacityUnits"] == consumed["CapacityUnits"] > 0


def test_an_index_query_takes_legacy_key_conditions(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [1, 2, 3])
    out = ddb.query(
        TableName=indexed,
        IndexName="by_group",
        KeyConditions={
            "group": {"AttributeValueList": [{"S": group}], "ComparisonOperator": "EQ"},
            "rank": {"AttributeValueList": [{"N": "2"}], "ComparisonOperator": "GE"},
        },
    )
    assert [item["rank"]["N"] for item in out["Items"]] == ["2", "3"]


def test_an_index_key_longer_than_a_key_may_be_is_refused(ddb: Any, indexed: str) -> None:
    message = validation(
        ddb.put_item, TableName=indexed, Item={"pk": {"S": "x"}, "sk": {"N": "1"}, "group": {"S": "g" * 2049}}
    )
    assert message == (
        "One or more parameter values were invalid: Size limit exceeded for Index Key group Actual Size: 2049 "
        "bytes Max Size: 2048 bytes IndexName: by_group"
    )


def test_an_index_query_start_key_is_checked_against_the_key_condition(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    pks = _fill_group(ddb, indexed, group, [1, 2])
    start = {"pk": {"S": pks[0]}, "sk": {"N": "1"}, "group": {"S": "another"}, "rank": {"N": "1"}}
    assert validation(ddb.query, **_group_request(indexed, group, "by_group"), ExclusiveStartKey=start) == (
        "The provided starting key is outside query boundaries based on provided conditions"
    )
    spurious = {**start, "group": {"S": group}, "colour": {"S": "c1"}}
    assert "starting key" in validation(
        ddb.query, **_group_request(indexed, group, "by_group"), ExclusiveStartKey=spurious
    )


def test_an_index_scan_start_key_with_more_than_the_keys_is_invalid(ddb: Any, indexed: str) -> None:
    # dynalite's recorded tests, for a local and for a global index.
    start = {"pk": {"S": "p"}, "sk": {"N": "1"}, "group": {"S": "g"}, "rank": {"N": "1"}, "z": {"S": "x"}}
    for index in ("by_rank", "by_group"):
        message = validation(ddb.scan, TableName=indexed, IndexName=index, ExclusiveStartKey=start)
        assert message == "The provided starting key is invalid"


def test_entries_sharing_a_global_index_key_come_back_in_dynamodbs_order(ddb: Any) -> None:
    # dynalite's "should query on basic hash global index", run against DynamoDB.
    name = create_table(
        ddb,
        [("a", "S"), ("b", "S")],
        prefix="compat-idx",
        definitions=[("c", "S")],
        GlobalSecondaryIndexes=[_index("index3", "c", None, {"ProjectionType": "ALL"})],
    )
    c = uuid.uuid4().hex
    keys = {"item": ("a", "a"), "item2": ("b", "b"), "item3": ("c", "e"), "item4": ("c", "d"),
            "item6": ("d", "a"), "item7": ("e", "a")}  # fmt: skip
    for a, b in keys.values():
        ddb.put_item(TableName=name, Item={"a": {"S": a}, "b": {"S": b}, "c": {"S": c}, "d": {"S": "a"}})
    ddb.put_item(TableName=name, Item={"a": {"S": "c"}, "b": {"S": "c"}, "c": {"S": "c"}, "d": {"S": "a"}})
    query = {"TableName": name, "IndexName": "index3", "KeyConditionExpression": "c = :c",
             "ExpressionAttributeValues": {":c": {"S": c}}, "Limit": 4}  # fmt: skip
    first = ddb.query(**query)
    assert [(i["a"]["S"], i["b"]["S"]) for i in first["Items"]] == [
        keys[k] for k in ("item2", "item", "item3", "item7")
    ]
    assert first["LastEvaluatedKey"] == {"a": {"S": "e"}, "b": {"S": "a"}, "c": {"S": c}}
    rest = ddb.query(**query, ExclusiveStartKey=first["LastEvaluatedKey"])
    assert {(i["a"]["S"], i["b"]["S"]) for i in rest["Items"]} == {keys["item4"], keys["item6"]}


def test_a_path_into_an_index_key_attribute_is_refused(ddb: Any, indexed: str) -> None:
    # dynalite's recorded tests: index key attributes are scalars too.
    expected = "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: rank"
    key = {"pk": {"S": "p"}, "sk": {"N": "1"}}
    assert validation(ddb.get_item, TableName=indexed, Key=key, ProjectionExpression="#r.b",
                      ExpressionAttributeNames={"#r": "rank"}) == expected  # fmt: skip
    assert validation(ddb.scan, TableName=indexed, FilterExpression="#r[1] = :b", ExpressionAttributeNames={"#r": "rank"},
                      ExpressionAttributeValues={":b": {"N": "1"}}) == expected  # fmt: skip
    assert validation(ddb.query, TableName=indexed, KeyConditionExpression="pk = :a",
                      FilterExpression="attribute_exists(#r.c)", ExpressionAttributeNames={"#r": "rank"},
                      ExpressionAttributeValues={":a": {"S": "p"}}) == expected  # fmt: skip


def test_a_global_index_refuses_to_return_or_filter_what_it_does_not_project(ddb: Any, indexed: str) -> None:
    for extra in ({"ProjectionExpression": "colour"}, {"FilterExpression": "attribute_exists(colour)"}):
        message = validation(ddb.query, **_group_request(indexed, "g", "keys_only"), **extra)
        assert "does not project" in message and "colour" in message


def test_a_write_to_a_table_with_a_local_index_reports_its_item_collection(ddb: Any, indexed: str) -> None:
    pk = uuid.uuid4().hex
    out = ddb.put_item(
        TableName=indexed, Item={"pk": {"S": pk}, "sk": {"N": "1"}}, ReturnItemCollectionMetrics="SIZE"
    )
    metrics = out["ItemCollectionMetrics"]
    assert metrics["ItemCollectionKey"] == {"pk": {"S": pk}}
    assert len(metrics["SizeEstimateRangeGB"]) == 2
    batch = ddb.batch_write_item(
        RequestItems={indexed: [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"N": "1"}}}}]},
        ReturnItemCollectionMetrics="SIZE",
    )
    assert batch["ItemCollectionMetrics"][indexed][0]["ItemCollectionKey"] == {"pk": {"S": pk}}


def test_a_scan_of_an_index_follows_the_index_s_order(ddb: Any, indexed: str) -> None:
    group = uuid.uuid4().hex
    _fill_group(ddb, indexed, group, [3, 1, 4, 2])
    seen = []
    for item in all_pages(ddb.scan, TableName=indexed, IndexName="by_group", Limit=3)[0]:
        if item["group"]["S"] == group:
            seen.append(item["rank"]["N"])
    assert seen == ["1", "2", "3", "4"]  # one index partition key: in its sort key's order


# --- multi-attribute keys (DynamoDB's since November 2025) --------------------------------


@pytest.fixture(scope="module")
def multi(ddb: Any) -> str:
    """A global index keyed on (tenant, region) HASH and (dt, seq) RANGE."""
    name = f"compat-multi-{uuid.uuid4().hex[:10]}"
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "tenant", "AttributeType": "S"},
            {"AttributeName": "region", "AttributeType": "S"},
            {"AttributeName": "dt", "AttributeType": "S"},
            {"AttributeName": "seq", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_tenant",
                "KeySchema": [
                    {"AttributeName": "tenant", "KeyType": "HASH"},
                    {"AttributeName": "region", "KeyType": "HASH"},
                    {"AttributeName": "dt", "KeyType": "RANGE"},
                    {"AttributeName": "seq", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    wait_active(ddb, name, timeout=30)
    return name


def _multi_query(ddb: Any, table: str, condition: str, **values: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = ddb.query(
        TableName=table,
        IndexName="by_tenant",
        KeyConditionExpression=condition,
        ExpressionAttributeNames={"#r": "region"},
        ExpressionAttributeValues={f":{k}": v for k, v in values.items()},
    )
    return out


def test_a_multi_attribute_key_is_described_and_queried_attribute_by_attribute(ddb: Any, multi: str) -> None:
    (index,) = ddb.describe_table(TableName=multi)["Table"]["GlobalSecondaryIndexes"]
    assert [k["KeyType"] for k in index["KeySchema"]] == ["HASH", "HASH", "RANGE", "RANGE"]
    tenant = uuid.uuid4().hex
    rows = [("eu", "d2", 1), ("eu", "d1", 2), ("eu", "d1", 1), ("us", "d1", 1), ("eu", "d1", 10)]
    for i, (region, day, seq) in enumerate(rows):
        ddb.put_item(
            TableName=multi,
            Item={"pk": {"S": f"{tenant}-{i}"}, "tenant": {"S": tenant}, "region": {"S": region},
                  "dt": {"S": day}, "seq": {"N": str(seq)}},
        )  # fmt: skip
    ddb.put_item(
        TableName=multi, Item={"pk": {"S": f"{tenant}-x"}, "tenant": {"S": tenant}, "region": {"S": "eu"}}
    )
    everything = _multi_query(ddb, multi, "tenant = :t AND #r = :r", t={"S": tenant}, r={"S": "eu"})
    assert [(i["dt"]["S"], i["seq"]["N"]) for i in everything["Items"]] == [
        ("d1", "1"), ("d1", "2"), ("d1", "10"), ("d2", "1")
    ]  # fmt: skip
    later = _multi_query(
        ddb, multi, "tenant = :t AND #r = :r AND dt = :d AND seq > :s",
        t={"S": tenant}, r={"S": "eu"}, d={"S": "d1"}, s={"N": "1"},
    )  # fmt: skip
    assert [i["seq"]["N"] for i in later["Items"]] == ["2", "10"]


def test_a_multi_attribute_key_condition_needs_every_hash_and_a_leading_run_of_ranges(
    ddb: Any, multi: str
) -> None:
    missing_hash = validation(
        ddb.query, TableName=multi, IndexName="by_tenant", KeyConditionExpression="tenant = :t",
        ExpressionAttributeValues={":t": {"S": "x"}},
    )  # fmt: skip
    assert "HASH" in missing_hash and "equality" in missing_hash and "region" in missing_hash
    skipped = validation(
        ddb.query, TableName=multi, IndexName="by_tenant",
        KeyConditionExpression="tenant = :t AND #r = :r AND seq = :s",
        ExpressionAttributeNames={"#r": "region"},
        ExpressionAttributeValues={":t": {"S": "x"}, ":r": {"S": "eu"}, ":s": {"N": "1"}},
    )  # fmt: skip
    assert "RANGE" in skipped and "equality" in skipped and "dt" in skipped
