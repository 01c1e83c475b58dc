"""DynamoDB expressions: parse, resolve against a request's names and values, evaluate.

Typical use by an operation:

    resolved = resolve_request(condition=req.get("ConditionExpression"),
                               update=req.get("UpdateExpression"),
                               names=req.get("ExpressionAttributeNames"),
                               values=req.get("ExpressionAttributeValues"))
    if resolved.condition is not None and not evaluate(resolved.condition, old_item):
        raise errors.conditional_check_failed()
    result = apply_update(resolved.update, old_item)

Everything here is pure: no I/O, no clock; the only state is the parse cache.
"""

from __future__ import annotations

from partita.api.expressions.condition import evaluate, operand_value
from partita.api.expressions.key_condition import KeyCondition
from partita.api.expressions.key_condition import plan as plan_key_condition
from partita.api.expressions.projection import project, project_paths
from partita.api.expressions.resolve import Resolved, Resolver, check_attribute_maps, resolve_request
from partita.api.expressions.update import UpdateResult, apply_update, modified_attributes

__all__ = [
    "KeyCondition",
    "Resolved",
    "Resolver",
    "UpdateResult",
    "apply_update",
    "check_attribute_maps",
    "evaluate",
    "modified_attributes",
    "operand_value",
    "plan_key_condition",
    "project",
    "project_paths",
    "resolve_request",
]
