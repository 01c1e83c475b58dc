"""Access checks: a key's own tables, and the tables' resource-based policies.

Through the front door (a MemoryControlStore behind a real TableCache, requests signed
by botocore) for the policy operations and the control plane; `access.check` itself for
what data-plane requests ask of a table (no storage node is needed to be refused).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from partita.common.errors import DynamoError
from partita.control.model import TableState
from partita.router import access
from partita.router.app import DynamoApp
from tests.unit.router.test_app import ADMIN, LIMITED, app, error_of, signed

__all__ = ["app"]  # the front door fixture, shared with test_app

ACCOUNT = "123456789012"
PAYROLL = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/Payroll"
ORDERS_SERVICE = f"arn:aws:iam::{ACCOUNT}:user/orders-service"
CREATE_PAYROLL = {
    "TableName": "Payroll",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "BillingMode": "PAY_PER_REQUEST",
}


def policy(*statements: dict[str, Any]) -> str:
    return orjson.dumps({"Version": "2012-10-17", "Statement": list(statements)}).decode()


def allow(principal: Any, *actions: str, resource: str = "*") -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": principal, "Action": list(actions), "Resource": resource}


def deny(principal: Any, *actions: str, resource: str = "*") -> dict[str, Any]:
    return {**allow(principal, *actions, resource=resource), "Effect": "Deny"}


async def active_payroll(app: DynamoApp, document: str | None = None) -> None:
    body = {**CREATE_PAYROLL, **({"ResourcePolicy": document} if document else {})}
    created = await app(signed("CreateTable", body))
    assert created.status == 200, created.body
    table_id = orjson.loads(created.body)["TableDescription"]["TableId"]
    spec = await app.ctx.catalog.get_table_spec("Payroll")
    assert spec is not None and table_id
    assert await app.ctx.catalog.put_table_state(
        TableState("Payroll", spec.table_id, "ACTIVE", spec.generation)
    )
    await app.ctx.tables.refresh()


async def put_policy(app: DynamoApp, document: str) -> str:
    response = await app(signed("PutResourcePolicy", {"ResourceArn": PAYROLL, "Policy": document}))
    assert response.status == 200, response.body
    await app.ctx.tables.refresh()
    return str(orjson.loads(response.body)["RevisionId"])


async def test_a_policy_lets_a_key_do_what_it_allows_on_a_table_the_key_does_not_list(app: DynamoApp) -> None:
    await active_payroll(app)
    assert error_of(await app(signed("DescribeTable", {"TableName": "Payroll"}, credential=LIMITED)))[0] == (
        "AccessDeniedException"
    )
    await put_policy(app, policy(allow({"AWS": ORDERS_SERVICE}, "dynamodb:Describe*")))
    described = await app(signed("DescribeTable", {"TableName": "Payroll"}, credential=LIMITED))
    assert described.status == 200
    code, message = error_of(await app(signed("DeleteTable", {"TableName": "Payroll"}, credential=LIMITED)))
    assert code == "AccessDeniedException"
    assert (
        message
        == f"User: orders-service is not authorized to perform: dynamodb:DeleteTable on resource: {PAYROLL}"
    )


async def test_an_explicit_deny_refuses_even_a_key_for_every_table(app: DynamoApp) -> None:
    await active_payroll(app, policy(deny({"AWS": ACCOUNT}, "dynamodb:DeleteTable")))
    code, message = error_of(await app(signed("DeleteTable", {"TableName": "Payroll"})))
    assert code == "AccessDeniedException"
    assert message == (
        f"User: arn:aws:iam::{ACCOUNT}:user/admin is not authorized to perform: dynamodb:DeleteTable on resource: "
        f"{PAYROLL} with an explicit deny in a resource-based policy"
    )
    assert (await app(signed("DescribeTable", {"TableName": "Payroll"}))).status == 200


async def test_a_key_for_every_table_can_always_remove_a_policy_that_denies_everything(
    app: DynamoApp,
) -> None:
    await active_payroll(app)
    revision = await put_policy(app, policy(deny("*", "dynamodb:*")))
    assert (
        error_of(await app(signed("DescribeTable", {"TableName": "Payroll"})))[0] == "AccessDeniedException"
    )
    got = await app(signed("GetResourcePolicy", {"ResourceArn": PAYROLL}))
    assert orjson.loads(got.body)["RevisionId"] == revision
    deleted = await app(signed("DeleteResourcePolicy", {"ResourceArn": PAYROLL}))
    assert orjson.loads(deleted.body) == {"RevisionId": revision}
    await app.ctx.tables.refresh()
    assert (await app(signed("DescribeTable", {"TableName": "Payroll"}))).status == 200


async def test_a_limited_key_is_held_to_the_policy_on_the_policy_operations_too(app: DynamoApp) -> None:
    await active_payroll(app, policy(allow({"AWS": ORDERS_SERVICE}, "dynamodb:GetResourcePolicy")))
    got = await app(signed("GetResourcePolicy", {"ResourceArn": PAYROLL}, credential=LIMITED))
    assert got.status == 200
    put = signed(
        "PutResourcePolicy", {"ResourceArn": PAYROLL, "Policy": policy(allow("*", "dynamodb:*"))}, LIMITED
    )
    assert error_of(await app(put))[0] == "AccessDeniedException"


# --- what data-plane requests ask of a table ------------------------------------------------


def check(app: DynamoApp, operation: str, payload: dict[str, Any], credential: Any = ADMIN) -> str | None:
    """The AccessDeniedException's message, or None when the request may go on."""
    try:
        access.check(app.ctx, app.policies, credential, operation, payload, ["Payroll"])
    except DynamoError as exc:
        assert exc.code == "AccessDeniedException"
        return exc.message
    return None


async def test_a_transaction_is_checked_action_by_action(app: DynamoApp) -> None:
    await active_payroll(app, policy(deny("*", "dynamodb:ConditionCheckItem")))
    key = {"pk": {"S": "me"}}
    check_action = {
        "ConditionCheck": {"TableName": "Payroll", "Key": key, "ConditionExpression": "attribute_exists(pk)"}
    }
    put_action = {"Put": {"TableName": "Payroll", "Item": key}}
    denied = check(app, "TransactWriteItems", {"TransactItems": [put_action, check_action]})
    assert denied is not None and "dynamodb:ConditionCheckItem" in denied
    assert check(app, "TransactWriteItems", {"TransactItems": [put_action]}) is None


async def test_a_partiql_statement_is_checked_as_its_partiql_action(app: DynamoApp) -> None:
    await active_payroll(app, policy(deny("*", "dynamodb:PartiQLDelete")))
    denied = check(app, "ExecuteStatement", {"Statement": "DELETE FROM Payroll WHERE pk = 'me'"})
    assert denied is not None and "dynamodb:PartiQLDelete" in denied
    assert check(app, "ExecuteStatement", {"Statement": "SELECT * FROM Payroll WHERE pk = 'me'"}) is None
    # A batch's statement on another table is that table's to judge.
    batch = {"Statements": [{"Statement": "SELECT * FROM Payroll WHERE pk = 'a'"},
                            {"Statement": "DELETE FROM Orders WHERE pk = 'b'"}]}  # fmt: skip
    assert check(app, "BatchExecuteStatement", batch) is None


async def test_an_index_read_is_checked_against_the_index_arn(app: DynamoApp) -> None:
    await active_payroll(app, policy(deny("*", "dynamodb:Query", resource=f"{PAYROLL}/index/*")))
    denied = check(app, "Query", {"TableName": "Payroll", "IndexName": "by-date"})
    assert denied is not None and f"on resource: {PAYROLL}/index/by-date with an explicit deny" in denied
    assert check(app, "Query", {"TableName": "Payroll"}) is None


@pytest.mark.parametrize("listed", [True, False])
async def test_a_table_without_policies_is_the_keys_own_list_alone(app: DynamoApp, listed: bool) -> None:
    await active_payroll(app)
    credential = ADMIN if listed else LIMITED
    assert (check(app, "GetItem", {"TableName": "Payroll"}, credential) is None) is listed
