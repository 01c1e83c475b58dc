"""TransactWriteItems and TransactGetItems: all or nothing, across partitions and tables.

Written to pass against DynamoDB too (README.md here). The recorded answers come from
suites run against DynamoDB: nubo-db's conformance suite, paritysuite's captures,
moto's aws_verified tests, LocalStack's snapshots and Alternator's test_transact.py.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.compat.helpers import PYTESTMARK, create_table, error, key, validation

pytestmark = PYTESTMARK


@pytest.fixture(scope="module")
def accounts(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S")], prefix="compat-tx")


def _get(ddb: Any, table: str, pk: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = ddb.get_item(
        TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True
    ).get("Item")
    return item


def _put(table: str, pk: str, **attributes: dict[str, str]) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {"pk": {"S": pk}, **attributes}}}


def _canceled(call: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as err:
        call(**kwargs)
    response: dict[str, Any] = err.value.response
    assert response["Error"]["Code"] == "TransactionCanceledException", response["Error"]
    return response


def test_a_transaction_writes_items_on_many_partitions_at_once(ddb: Any, accounts: str) -> None:
    pks = [key() for _ in range(12)]  # twelve keys: on every partition of the table
    ddb.transact_write_items(TransactItems=[_put(accounts, pk, n={"N": str(i)}) for i, pk in enumerate(pks)])
    assert [(_get(ddb, accounts, pk) or {}).get("n") for pk in pks] == [{"N": str(i)} for i in range(12)]


def test_a_failed_condition_cancels_every_action(ddb: Any, accounts: str) -> None:
    existing, fresh = key(), key()
    ddb.put_item(TableName=accounts, Item={"pk": {"S": existing}, "balance": {"N": "5"}})
    response = _canceled(
        ddb.transact_write_items,
        TransactItems=[
            _put(accounts, fresh, balance={"N": "10"}),
            {
                "Update": {
                    "TableName": accounts,
                    "Key": {"pk": {"S": existing}},
                    "UpdateExpression": "SET balance = balance - :amount",
                    "ConditionExpression": "balance >= :amount",
                    "ExpressionAttributeValues": {":amount": {"N": "10"}},
                }
            },
        ],
    )
    assert response["Error"]["Message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"
    )
    assert response["CancellationReasons"] == [
        {"Code": "None"},
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"},
    ]
    assert _get(ddb, accounts, fresh) is None
    assert (_get(ddb, accounts, existing) or {})["balance"] == {"N": "5"}


def test_a_transfer_moves_an_amount_between_two_items(ddb: Any, accounts: str) -> None:
    source, target = key(), key()
    for pk in (source, target):
        ddb.put_item(TableName=accounts, Item={"pk": {"S": pk}, "balance": {"N": "100"}})
    move = [
        {
            "Update": {
                "TableName": accounts,
                "Key": {"pk": {"S": pk}},
                "UpdateExpression": f"SET balance = balance {sign} :amount",
                "ConditionExpression": "balance >= :amount" if sign == "-" else "attribute_exists(pk)",
                "ExpressionAttributeValues": {":amount": {"N": "30"}},
            }
        }
        for pk, sign in ((source, "-"), (target, "+"))
    ]
    ddb.transact_write_items(TransactItems=move)
    assert [(_get(ddb, accounts, pk) or {})["balance"]["N"] for pk in (source, target)] == ["70", "130"]


def test_all_old_puts_the_item_in_its_cancellation_reason(ddb: Any, accounts: str) -> None:
    pk = key()
    ddb.put_item(TableName=accounts, Item={"pk": {"S": pk}, "v": {"S": "old"}})
    response = _canceled(
        ddb.transact_write_items,
        TransactItems=[
            {
                "ConditionCheck": {
                    "TableName": accounts,
                    "Key": {"pk": {"S": pk}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {"Delete": {"TableName": accounts, "Key": {"pk": {"S": key()}}}},
        ],
    )
    assert response["CancellationReasons"][0]["Item"] == {"pk": {"S": pk}, "v": {"S": "old"}}
    assert response["CancellationReasons"][1] == {"Code": "None"}


def test_deletes_and_condition_checks_run_together(ddb: Any, accounts: str) -> None:
    kept, gone = key(), key()
    for pk in (kept, gone):
        ddb.put_item(TableName=accounts, Item={"pk": {"S": pk}})
    ddb.transact_write_items(
        TransactItems=[
            {
                "ConditionCheck": {
                    "TableName": accounts,
                    "Key": {"pk": {"S": kept}},
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
            {"Delete": {"TableName": accounts, "Key": {"pk": {"S": gone}}}},
        ]
    )
    assert _get(ddb, accounts, kept) is not None and _get(ddb, accounts, gone) is None


def test_two_actions_on_one_item_are_refused(ddb: Any, accounts: str) -> None:
    pk = key()
    message = validation(
        ddb.transact_write_items,
        TransactItems=[_put(accounts, pk), {"Delete": {"TableName": accounts, "Key": {"pk": {"S": pk}}}}],
    )
    assert message == "Transaction request cannot include multiple operations on one item"


def test_an_unknown_table_is_not_found(ddb: Any, accounts: str) -> None:
    assert error(ddb.transact_write_items, TransactItems=[_put("no-such-table-here", key())]) == (
        "ResourceNotFoundException",
        "Requested resource not found",
    )


def test_a_key_of_the_wrong_type_is_the_action_s_validation_error(ddb: Any, accounts: str) -> None:
    response = _canceled(
        ddb.transact_write_items,
        TransactItems=[
            {"Put": {"TableName": accounts, "Item": {"pk": {"N": "5"}}}},
            _put(accounts, key()),
        ],
    )
    assert response["CancellationReasons"] == [
        {
            "Code": "ValidationError",
            "Message": "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N",
        },
        {"Code": "None"},
    ]


def test_a_client_request_token_makes_a_retry_harmless(ddb: Any, accounts: str) -> None:
    pk, token = key(), uuid.uuid4().hex
    ddb.put_item(TableName=accounts, Item={"pk": {"S": pk}, "n": {"N": "0"}})
    increment = [
        {
            "Update": {
                "TableName": accounts,
                "Key": {"pk": {"S": pk}},
                "UpdateExpression": "SET n = n + :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        }
    ]
    for _ in range(2):
        ddb.transact_write_items(TransactItems=increment, ClientRequestToken=token)
    assert (_get(ddb, accounts, pk) or {})["n"] == {"N": "1"}
    other = [_put(accounts, key())]
    code, _ = error(ddb.transact_write_items, TransactItems=other, ClientRequestToken=token)
    assert code == "IdempotentParameterMismatchException"


def test_transact_get_items_reads_items_of_several_tables(ddb: Any, accounts: str, table_s: str) -> None:
    first, second, missing = key(), key(), key()
    ddb.put_item(TableName=accounts, Item={"pk": {"S": first}, "a": {"S": "1"}, "b": {"S": "2"}})
    ddb.put_item(TableName=table_s, Item={"pk": {"S": second}, "c": {"N": "3"}})
    out = ddb.transact_get_items(
        TransactItems=[
            {"Get": {"TableName": accounts, "Key": {"pk": {"S": first}}, "ProjectionExpression": "b"}},
            {"Get": {"TableName": table_s, "Key": {"pk": {"S": second}}}},
            {"Get": {"TableName": accounts, "Key": {"pk": {"S": missing}}}},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert out["Responses"] == [
        {"Item": {"b": {"S": "2"}}},
        {"Item": {"pk": {"S": second}, "c": {"N": "3"}}},
        {},
    ]
    consumed = {c["TableName"]: c["CapacityUnits"] for c in out["ConsumedCapacity"]}
    assert consumed == {accounts: 4.0, table_s: 2.0}  # a transactional read: twice a strong one


def test_transactional_writes_cost_twice_a_plain_write(ddb: Any, accounts: str) -> None:
    out = ddb.transact_write_items(
        TransactItems=[_put(accounts, key()), _put(accounts, key())], ReturnConsumedCapacity="TOTAL"
    )
    assert out["ConsumedCapacity"] == [
        {"TableName": accounts, "CapacityUnits": 4.0, "WriteCapacityUnits": 4.0}
    ]


def test_a_table_arn_names_a_transaction_s_table(ddb: Any, accounts: str) -> None:
    arn = ddb.describe_table(TableName=accounts)["Table"]["TableArn"]
    pk = key()
    ddb.transact_write_items(TransactItems=[_put(arn, pk, v={"S": "by-arn"})])
    out = ddb.transact_get_items(TransactItems=[{"Get": {"TableName": arn, "Key": {"pk": {"S": pk}}}}])
    assert out["Responses"] == [{"Item": {"pk": {"S": pk}, "v": {"S": "by-arn"}}}]


def test_execute_transaction_runs_partiql_writes_as_one_transaction(ddb: Any, accounts: str) -> None:
    existing, fresh = key(), key()
    ddb.put_item(TableName=accounts, Item={"pk": {"S": existing}, "data": {"S": "before"}})
    written = ddb.execute_transaction(
        TransactStatements=[
            {
                "Statement": f"INSERT INTO \"{accounts}\" VALUE {{'pk': ?, 'data': 'new'}}",
                "Parameters": [{"S": fresh}],
            },
            {
                "Statement": f"UPDATE \"{accounts}\" SET data = 'after' WHERE pk = ?",
                "Parameters": [{"S": existing}],
            },
        ]
    )
    assert [(_get(ddb, accounts, pk) or {})["data"]["S"] for pk in (fresh, existing)] == ["new", "after"]
    assert written["Responses"] == []  # writes read nothing (LocalStack's recording)
    rolled_back = key()
    response = _canceled(
        ddb.execute_transaction,
        TransactStatements=[
            {"Statement": f"INSERT INTO \"{accounts}\" VALUE {{'pk': ?}}", "Parameters": [{"S": existing}]},
            {
                "Statement": f"INSERT INTO \"{accounts}\" VALUE {{'pk': ?}}",
                "Parameters": [{"S": rolled_back}],
            },
        ],
    )
    assert [r["Code"] for r in response["CancellationReasons"]] == ["DuplicateItem", "None"]
    # The service model's member is "Message": the body names it so.
    assert response["Message"].startswith("Transaction cancelled, please refer cancellation reasons")
    assert _get(ddb, accounts, rolled_back) is None
    read = ddb.execute_transaction(
        TransactStatements=[
            {"Statement": f'SELECT data FROM "{accounts}" WHERE pk = ?', "Parameters": [{"S": fresh}]}
        ]
    )
    assert read["Responses"] == [{"Item": {"data": {"S": "new"}}}]


def test_a_transactional_write_is_charged_for_the_item_it_replaces(ddb: Any, accounts: str) -> None:
    pk = key()
    ddb.put_item(TableName=accounts, Item={"pk": {"S": pk}, "blob": {"S": "x" * 2900}})  # 3 KB: 3 WCU
    out = ddb.transact_write_items(
        TransactItems=[{"Delete": {"TableName": accounts, "Key": {"pk": {"S": pk}}}}],
        ReturnConsumedCapacity="TOTAL",
    )
    assert out["ConsumedCapacity"][0]["CapacityUnits"] == 6.0  # twice the plain delete's
