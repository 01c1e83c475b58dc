"""What PutItem and DeleteItem share after their preamble: the condition on the write
and the ReturnValues they allow (UpdateItem has its own, with the update)."""

from __future__ import annotations

from typing import Any

from partita.api import legacy
from partita.api.operations import common
from partita.api.operations.common import Expressions, WritePreamble
from partita.common import errors

# Members that make a write conditional; a request without any skips their checks.
CONDITION_MEMBERS = frozenset(
    {
        "ConditionExpression",
        "ExpressionAttributeNames",
        "ExpressionAttributeValues",
        "Expected",
        "ConditionalOperator",
    }
)


def check_params(body: dict[str, Any]) -> bool:
    """Check the condition members' combination; True if the write is unconditional."""
    plain = body.keys().isdisjoint(CONDITION_MEMBERS)
    if not plain:
        common.check_expression_params(body, ["ConditionExpression"], ["Expected"])
    return plain


def return_old(return_values: str | None) -> bool:
    """Whether ALL_OLD was asked; PutItem and DeleteItem allow nothing but it and NONE."""
    if return_values not in (None, "NONE", "ALL_OLD"):
        raise errors.validation("ReturnValues can only be ALL_OLD or NONE")
    return return_values == "ALL_OLD"


def expressions(body: dict[str, Any], shared: WritePreamble, plain: bool) -> Expressions:
    """The write's resolved condition (none for an unconditional write)."""
    if plain:
        return common.NO_EXPRESSIONS
    values = common.values_map(body.get("ExpressionAttributeValues"))
    return condition_expressions(body, shared.condition, shared.names, values)


def condition_expressions(
    body: dict[str, Any], condition: str | None, names: dict[str, str] | None, values: dict[str, Any] | None
) -> Expressions:
    """ConditionExpression, or Expected translated into one; resolved."""
    if body.get("Expected") is not None:
        ph = legacy.Placeholders()
        operator = legacy.conditional_operator(body, "Expected")
        text = legacy.expected(body["Expected"], operator, ph)
        return common.resolve(
            Expressions(condition=text, names=ph.names or None, values=ph.values or None, legacy=True)
        )
    if body.get("ConditionalOperator") is not None:
        legacy.conditional_operator(body, "Expected")
    return common.resolve(Expressions(condition=condition, names=names, values=values))
