"""ExecuteStatement and BatchExecuteStatement: PartiQL reads and single-item writes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.helpers import PYTESTMARK, error, key, validation

pytestmark = PYTESTMARK


def _items(ddb: Any, statement: str, **kwargs: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = ddb.execute_statement(Statement=statement, **kwargs)["Items"]
    return out


# --- SELECT ------------------------------------------------------------------------------


def test_select_by_partition_key_returns_the_item_and_its_projection(ddb: Any, table_s: str) -> None:
    k = key()
    item = {"pk": {"S": k}, "body": {"S": "text"}, "nested": {"M": {"a": {"L": [{"N": "1"}, {"N": "2"}]}}}}
    ddb.put_item(TableName=table_s, Item=item)
    assert _items(ddb, f'SELECT * FROM "{table_s}" WHERE pk = ?', Parameters=[{"S": k}]) == [item]
    assert _items(ddb, f"select body, nested.a[1] from \"{table_s}\" where pk = '{k}'") == [
        {"body": {"S": "text"}, "a[1]": {"N": "2"}}  # named by its last attribute
    ]
    assert _items(ddb, f'SELECT * FROM "{table_s}" WHERE pk = ?', Parameters=[{"S": key()}]) == []


def test_select_with_a_sort_key_condition_and_order_by_reads_one_collection(ddb: Any, table_sn: str) -> None:
    k = key()
    for sk in range(6):
        ddb.put_item(
            TableName=table_sn, Item={"pk": {"S": k}, "sk": {"N": str(sk)}, "odd": {"BOOL": sk % 2 == 1}}
        )
    statement = (
        f'SELECT sk FROM "{table_sn}" WHERE pk = ? AND sk BETWEEN 1 AND 4 AND odd = true ORDER BY sk DESC'
    )
    assert _items(ddb, statement, Parameters=[{"S": k}]) == [{"sk": {"N": "3"}}, {"sk": {"N": "1"}}]
    assert _items(ddb, f"SELECT sk FROM \"{table_sn}\" WHERE pk = '{k}' AND sk >= 4") == [
        {"sk": {"N": "4"}},
        {"sk": {"N": "5"}},
    ]


def test_select_with_partition_keys_in_a_list_reads_each(ddb: Any, table_s: str) -> None:
    keys = [key() for _ in range(3)]
    for k in keys:
        ddb.put_item(TableName=table_s, Item={"pk": {"S": k}})
    got = _items(
        ddb, f'SELECT pk FROM "{table_s}" WHERE pk IN [?, ?, ?]', Parameters=[{"S": k} for k in keys]
    )
    assert sorted(i["pk"]["S"] for i in got) == sorted(keys)


def test_select_without_the_partition_key_scans_with_the_whole_where_clause(ddb: Any) -> None:
    from tests.compat.helpers import create_table

    table = create_table(ddb, [("pk", "S")], prefix="partiql")
    rows = [
        {"pk": {"S": "0"}, "Name": {"S": "lambda code"}, "Category": {"S": "free"}, "Price": {"N": "2E-7"},
         "FreeTier": {"N": "1E+6"}},
        {"pk": {"S": "1"}, "Name": {"S": "code"}, "Category": {"S": "free"}, "Price": {"N": "0"},
         "FreeTier": {"NULL": True}},
        {"pk": {"S": "2"}, "Name": {"S": "code"}, "Category": {"S": "paid"}, "Price": {"N": "7.2"}},
        {"pk": {"S": "3"}, "Name": {"S": "other"}, "Category": {"S": "free"}, "Price": {"N": "0.003"},
         "FreeTier": {"N": "1"}},
    ]  # fmt: skip
    for row in rows:
        ddb.put_item(TableName=table, Item=row)
    statement = (
        f"SELECT pk FROM \"{table}\" WHERE contains(\"Name\", 'code') AND Category = 'free' "
        "AND Price >= 0 AND Price <= 1 AND FreeTier IS NOT MISSING AND attribute_type(\"FreeTier\", 'N')"
    )
    assert _items(ddb, statement) == [{"pk": {"S": "0"}}]
    missing = _items(ddb, f'SELECT pk FROM "{table}" WHERE FreeTier IS MISSING')
    assert missing == [{"pk": {"S": "2"}}]
    assert sorted(
        i["pk"]["S"] for i in _items(ddb, f"SELECT pk FROM \"{table}\" WHERE NOT Category = 'paid'")
    ) == [
        "0",
        "1",
        "3",
    ]


def test_a_select_is_paged_by_limit_and_next_token(ddb: Any) -> None:
    from tests.compat.helpers import create_table

    table = create_table(ddb, [("pk", "S")], prefix="partiql")
    for i in range(5):
        ddb.put_item(TableName=table, Item={"pk": {"S": str(i)}})
    seen: list[str] = []
    kwargs: dict[str, Any] = {"Statement": f'SELECT pk FROM "{table}"', "Limit": 2}
    for _ in range(10):
        out = ddb.execute_statement(**kwargs)
        assert len(out["Items"]) <= 2
        seen.extend(i["pk"]["S"] for i in out["Items"])
        if "NextToken" not in out:
            break
        kwargs["NextToken"] = out["NextToken"]
    assert sorted(seen) == ["0", "1", "2", "3", "4"]


# --- INSERT, UPDATE, DELETE ------------------------------------------------------------------


def test_insert_writes_a_new_item_and_refuses_an_existing_key(ddb: Any, table_s: str) -> None:
    k = key()
    statement = f"INSERT INTO \"{table_s}\" VALUE {{'pk': '{k}', 'attr': {{'sth': ['other', 1, true, null]}}, 'tags': <<'a', 'b'>>}}"
    assert ddb.execute_statement(Statement=statement)["Items"] == []
    assert ddb.get_item(TableName=table_s, Key={"pk": {"S": k}})["Item"] == {
        "pk": {"S": k},
        "attr": {"M": {"sth": {"L": [{"S": "other"}, {"N": "1"}, {"BOOL": True}, {"NULL": True}]}}},
        "tags": {"SS": ["a", "b"]},
    }
    assert error(ddb.execute_statement, Statement=statement) == (
        "DuplicateItemException",
        "Duplicate primary key exists in table",
    )


def test_update_sets_and_removes_attributes_of_an_existing_item_only(ddb: Any, table_s: str) -> None:
    k = key()
    ddb.put_item(TableName=table_s, Item={"pk": {"S": k}, "body": {"S": "x"}, "n": {"N": "1"}})
    ddb.execute_statement(Statement=f"UPDATE \"{table_s}\" SET body='other' SET n = n + 2 WHERE pk='{k}'")
    assert ddb.get_item(TableName=table_s, Key={"pk": {"S": k}})["Item"] == {
        "pk": {"S": k},
        "body": {"S": "other"},
        "n": {"N": "3"},
    }
    returned = ddb.execute_statement(
        Statement=f'UPDATE "{table_s}" REMOVE body WHERE pk=? RETURNING ALL NEW *', Parameters=[{"S": k}]
    )["Items"]
    assert returned == [{"pk": {"S": k}, "n": {"N": "3"}}]
    code, _ = error(ddb.execute_statement, Statement=f"UPDATE \"{table_s}\" SET body='x' WHERE pk='{key()}'")
    assert code == "ConditionalCheckFailedException"
    code, _ = error(
        ddb.execute_statement, Statement=f"UPDATE \"{table_s}\" SET body='x' WHERE pk='{k}' AND n > 5"
    )
    assert code == "ConditionalCheckFailedException"


def test_delete_removes_the_item_named_by_its_whole_key(ddb: Any, table_sn: str) -> None:
    k = key()
    ddb.put_item(TableName=table_sn, Item={"pk": {"S": k}, "sk": {"N": "1"}, "v": {"S": "old"}})
    out = ddb.execute_statement(
        Statement=f"DELETE FROM \"{table_sn}\" WHERE pk='{k}' AND sk=1 RETURNING ALL OLD *"
    )
    assert out["Items"] == [{"pk": {"S": k}, "sk": {"N": "1"}, "v": {"S": "old"}}]
    assert "Item" not in ddb.get_item(TableName=table_sn, Key={"pk": {"S": k}, "sk": {"N": "1"}})


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE \"{t}\" SET v = 1 WHERE v = 'x'",
        "DELETE FROM \"{t}\" WHERE pk = 'x'",  # the sort key is missing
    ],
)
def test_a_write_must_name_the_whole_primary_key(ddb: Any, table_sn: str, statement: str) -> None:
    assert validation(ddb.execute_statement, Statement=statement.format(t=table_sn)) == (
        "Where clause does not contain a mandatory equality on all key attributes"
    )


def test_a_mixed_batch_of_reads_and_writes_is_refused(ddb: Any, table_s: str) -> None:
    statements = [
        {"Statement": f"DELETE FROM \"{table_s}\" WHERE pk = 'x'"},
        {"Statement": f"SELECT * FROM \"{table_s}\" WHERE pk = 'x'"},
    ]
    assert validation(ddb.batch_execute_statement, Statements=statements) == (
        "Read and write requests together in the same batch is not supported."
    )


def test_delete_of_a_missing_item_succeeds_whatever_its_other_terms(ddb: Any, table_s: str) -> None:
    k = key()
    assert _items(ddb, f"DELETE FROM \"{table_s}\" WHERE pk = '{k}' AND v = 1") == []
    ddb.put_item(TableName=table_s, Item={"pk": {"S": k}, "v": {"N": "2"}})
    code, _ = error(ddb.execute_statement, Statement=f"DELETE FROM \"{table_s}\" WHERE pk = '{k}' AND v = 1")
    assert code == "ConditionalCheckFailedException"


def test_nested_projections_are_named_by_their_last_attribute(ddb: Any, table_s: str) -> None:
    k = key()
    ddb.put_item(
        TableName=table_s,
        Item={
            "pk": {"S": k},
            "profile": {"M": {"sub": {"S": "s"}, "other": {"S": "o"}}},
            "tags": {"L": [{"S": "a"}, {"S": "b"}]},
        },
    )
    statement = f"SELECT profile.sub, tags[1], profile.missing FROM \"{table_s}\" WHERE pk = '{k}'"
    assert _items(ddb, statement) == [{"sub": {"S": "s"}, "tags[1]": {"S": "b"}}]


def test_a_next_token_belongs_to_its_statement(ddb: Any, table_s: str) -> None:
    out = ddb.execute_statement(Statement=f'SELECT * FROM "{table_s}"', Limit=1)
    assert "NextToken" in out
    assert validation(
        ddb.execute_statement, Statement=f'SELECT pk FROM "{table_s}"', Limit=1, NextToken=out["NextToken"]
    ) == ("NextToken does not match request")
    assert validation(
        ddb.execute_statement, Statement=f'SELECT * FROM "{table_s}"', NextToken="not a token"
    ) == ("Invalid NextToken")


# --- errors ----------------------------------------------------------------------------------


def test_statements_that_do_not_parse_are_refused_as_malformed(ddb: Any, table_s: str) -> None:
    message = validation(ddb.execute_statement, Statement=f'SELEC * FROM "{table_s}"')
    assert message.startswith("Statement wasn't well formed, can't be processed:")
    message = validation(
        ddb.execute_statement, Statement=f'SELECT * FROM "{table_s}" WHERE pk = \'unterminated'
    )
    assert message.startswith("Statement wasn't well formed, can't be processed:")


def test_parameters_must_match_the_placeholders(ddb: Any, table_s: str) -> None:
    wrong = "Number of parameters in request and statement don't match."
    assert validation(ddb.execute_statement, Statement=f'SELECT * FROM "{table_s}" WHERE pk = ?') == wrong
    statement = f'SELECT * FROM "{table_s}"'
    assert validation(ddb.execute_statement, Statement=statement, Parameters=[{"S": "x"}]) == wrong


def test_unknown_tables_and_indexes(ddb: Any, table_s: str) -> None:
    assert error(ddb.execute_statement, Statement='SELECT * FROM "no-such-table-here"') == (
        "ResourceNotFoundException",
        "Requested resource not found",
    )
    assert validation(ddb.execute_statement, Statement=f'SELECT * FROM "{table_s}"."no_index"') == (
        "The table does not have the specified index"
    )


# --- BatchExecuteStatement ------------------------------------------------------------------------


def test_batch_reads_answer_each_statement_with_its_item_or_error(ddb: Any, table_s: str) -> None:
    k = key()
    ddb.put_item(TableName=table_s, Item={"pk": {"S": k}, "body": {"S": "b"}})
    responses = ddb.batch_execute_statement(
        Statements=[
            {"Statement": f'SELECT pk FROM "{table_s}" WHERE pk = ?', "Parameters": [{"S": k}]},
            {"Statement": f'SELECT * FROM "{table_s}" WHERE pk = ?', "Parameters": [{"S": key()}]},
            {"Statement": f'SELECT * FROM "{table_s}" WHERE body = ?', "Parameters": [{"S": "b"}]},
            {"Statement": "SELECT * FROM \"no-such-table-here\" WHERE pk = 'x'"},
        ]
    )["Responses"]
    assert responses[:3] == [
        {"TableName": table_s, "Item": {"pk": {"S": k}}},
        {"TableName": table_s},
        {
            "Error": {
                "Code": "ValidationError",
                "Message": "Select statements within BatchExecuteStatement must specify the primary key in the where clause.",
            },
        },
    ]
    # DynamoDB's records differ on whether an unknown table's entry names it.
    assert responses[3]["Error"] == {"Code": "ResourceNotFound", "Message": "Requested resource not found"}


def test_batch_writes_run_each_statement_and_report_each_failure(ddb: Any, table_s: str) -> None:
    existing, other, new = key(), key(), key()
    for k in (existing, other):
        ddb.put_item(TableName=table_s, Item={"pk": {"S": k}, "n": {"N": "1"}})
    responses = ddb.batch_execute_statement(
        Statements=[
            {
                "Statement": f'UPDATE "{table_s}" SET n = ? WHERE pk = ?',
                "Parameters": [{"N": "2"}, {"S": existing}],
            },
            {"Statement": f"INSERT INTO \"{table_s}\" VALUE {{'pk': '{new}'}}"},
            {"Statement": f"INSERT INTO \"{table_s}\" VALUE {{'pk': '{other}'}}"},
            {"Statement": f'UPDATE "{table_s}" SET n = ? WHERE pk = ?', "Parameters": [{"N": "2"}]},
        ]
    )["Responses"]
    assert responses[:2] == [{"TableName": table_s}, {"TableName": table_s}]
    assert responses[2]["Error"]["Code"] == "DuplicateItem"
    assert responses[3] == {
        "Error": {
            "Code": "ValidationError",
            "Message": "Number of parameters in request and statement don't match.",
        }
    }
    assert ddb.get_item(TableName=table_s, Key={"pk": {"S": existing}})["Item"]["n"] == {"N": "2"}
    assert "Item" in ddb.get_item(TableName=table_s, Key={"pk": {"S": new}})


def test_consumed_capacity_sums_the_requests_a_statement_made(ddb: Any, table_s: str) -> None:
    keys = [key(), key()]
    for k in keys:
        ddb.put_item(TableName=table_s, Item={"pk": {"S": k}})
    out = ddb.execute_statement(
        Statement=f'SELECT * FROM "{table_s}" WHERE pk IN [?, ?]',
        Parameters=[{"S": k} for k in keys],
        ReturnConsumedCapacity="TOTAL",
    )
    # Two Queries of one small item each, eventually consistent: half a unit each.
    assert out["ConsumedCapacity"] == {"TableName": table_s, "CapacityUnits": 1.0}
    batch = ddb.batch_execute_statement(
        Statements=[
            {"Statement": f'SELECT * FROM "{table_s}" WHERE pk = ?', "Parameters": [{"S": k}]} for k in keys
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert batch["ConsumedCapacity"] == [{"TableName": table_s, "CapacityUnits": 1.0}]


def test_a_batch_naming_one_item_twice_is_refused(ddb: Any, table_sn: str) -> None:
    k = key()
    statements = [
        {"Statement": f"SELECT * FROM \"{table_sn}\" WHERE pk = '{k}' AND sk = 1"},
        {"Statement": f"SELECT * FROM \"{table_sn}\" WHERE sk = 1.0 AND pk = '{k}'"},  # the same number
    ]
    assert validation(ddb.batch_execute_statement, Statements=statements) == (
        "Provided list of item keys contains duplicates"
    )
    writes = [
        {"Statement": f"INSERT INTO \"{table_sn}\" VALUE {{'pk': '{k}', 'sk': 2}}"},
        {"Statement": f"DELETE FROM \"{table_sn}\" WHERE pk = '{k}' AND sk = 2"},
    ]
    assert validation(ddb.batch_execute_statement, Statements=writes) == (
        "Provided list of item keys contains duplicates"
    )


def test_partition_keys_in_a_list_ordered_with_one_of_the_wrong_type_are_refused_not_a_fault(
    ddb: Any, table_s: str
) -> None:
    # Sorting the IN values for ORDER BY once failed on a boolean among strings (a 500).
    code, _ = error(
        ddb.execute_statement,
        Statement=f"SELECT * FROM \"{table_s}\" WHERE pk IN ['k', true] ORDER BY pk DESC",
    )
    assert code == "ValidationException"
