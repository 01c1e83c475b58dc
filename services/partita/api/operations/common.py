"""Validation pieces every data operation shares, with DynamoDB's messages.

DynamoDB validates a request in three passes, and so do the operation modules:
1. the JSON shape (SerializationException: a string where a map belongs, ...);
2. the constraints of the API model, all reported at once ("2 validation errors
   detected: ...", see `partita.api.shape.Violations`);
3. the operation's own rules, first failure wins: expression and legacy parameters
   not mixed, attribute values valid, expressions parsed and resolved.
Only then does the router look the table up (ResourceNotFoundException) and check
keys against its schema, so a malformed request to a missing table is a
ValidationException, as in DynamoDB.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from partita.api.expressions import Resolved, resolve_request
from partita.api.item import NAME_TOO_LARGE, check_value, name_too_large
from partita.api.shape import TABLE_NAME_PATTERN, Violations, expect_type
from partita.api.values import AttributeValue, Item
from partita.common import errors
from partita.common.errors import DynamoError

CAPACITY_MODES = ["INDEXES", "TOTAL", "NONE"]
COLLECTION_METRICS = ["SIZE", "NONE"]
RETURN_VALUES = ["NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"]
RETURN_ON_FAILURE = ["ALL_OLD", "NONE"]
SELECT = ["ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "SPECIFIC_ATTRIBUTES", "COUNT"]
CONDITIONAL_OPERATORS = ["AND", "OR"]
INVALID = "One or more parameter values were invalid: "
MAX_ATTRIBUTES_TO_GET = 255


@dataclass(frozen=True)
class Expressions:
    """A request's expressions as texts plus placeholder maps (legacy ones translated).

    The router resolves them once to report errors before routing (`resolved`); the
    storage node receives the texts and maps (`storage_body`) and evaluates them there,
    where the item is.
    """

    condition: str | None = None
    update: str | None = None
    filter: str | None = None
    projection: str | None = None
    key_condition: str | None = None
    names: dict[str, str] | None = None
    values: dict[str, AttributeValue] | None = None
    resolved: Resolved = field(default_factory=Resolved, compare=False)
    # True when translated from legacy parameters: some evaluation errors then carry
    # the legacy API's wording.
    legacy: bool = False

    def storage_body(self) -> dict[str, Any]:
        """The JSON fields a storage node needs to evaluate these expressions."""
        out: dict[str, Any] = {}
        if self.condition is not None:
            out["condition"] = self.condition
        if self.update is not None:
            out["update"] = self.update
        if self.filter is not None:
            out["filter"] = self.filter
        if self.projection is not None:
            out["projection"] = self.projection
        if out:
            if self.names:
                out["names"] = self.names
            if self.values:
                out["values"] = self.values
            if self.legacy:
                out["legacy"] = True
        return out


# A request without expressions (the common PutItem/GetItem): shared, never re-resolved.
NO_EXPRESSIONS = Expressions()


def resolve(expressions: Expressions) -> Expressions:
    """Parse and resolve every expression (raising DynamoDB's error on the first fault)."""
    if (
        expressions.condition is None
        and expressions.update is None
        and expressions.filter is None
        and expressions.projection is None
        and expressions.key_condition is None
    ):
        return expressions
    resolved = resolve_request(
        key_condition=expressions.key_condition,
        update=expressions.update,
        condition=expressions.condition,
        filter=expressions.filter,
        projection=expressions.projection,
        names=expressions.names,
        values=expressions.values,
        legacy=expressions.legacy,
    )
    return Expressions(
        condition=expressions.condition,
        update=expressions.update,
        filter=expressions.filter,
        projection=expressions.projection,
        key_condition=expressions.key_condition,
        names=expressions.names,
        values=expressions.values,
        resolved=resolved,
        legacy=expressions.legacy,
    )


# --- shape helpers -----------------------------------------------------------------------


def valid_table_name(name: str) -> bool:
    return 3 <= len(name) <= 255 and TABLE_NAME_PATTERN.fullmatch(name) is not None


def string(body: Mapping[str, Any], name: str) -> str | None:
    value: str | None = expect_type(body.get(name), str, "a string")
    return value


def boolean(body: Mapping[str, Any], name: str) -> bool | None:
    value: bool | None = expect_type(body.get(name), bool, "a boolean")
    return value


# Capacity units beyond this are not a limit but nonsense: DynamoDB refuses them as a
# ValidationException before any account limit is considered (dynalite's createTable and
# updateTable tests, recorded against DynamoDB).
MAX_CAPACITY_UNITS_VALUE = 1_000_000_000_000


def check_units_in_bounds(rcu: int | None, wcu: int | None) -> None:
    for name, units in (("ReadCapacityUnits", rcu), ("WriteCapacityUnits", wcu)):
        if units is not None and units > MAX_CAPACITY_UNITS_VALUE:
            raise errors.validation(f"Given value {units} for {name} is out of bounds")


def integer(body: Mapping[str, Any], name: str) -> int | None:
    value: int | None = expect_type(body.get(name), int, "a number")
    return value


def attribute_map(value: Any) -> dict[str, Any] | None:
    """A map of attribute values (Key, Item, ExclusiveStartKey): a JSON object."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise errors.serialization("Unexpected value type in payload: expected a map of attribute values")
    return value


def names_map(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise errors.serialization("Unexpected value type in payload: expected a map of strings")
    for v in value.values():
        if not isinstance(v, str):
            raise errors.serialization("Unexpected value type in payload: expected a string")
    return value


def check_item_values(item: Mapping[str, Any]) -> Item:
    """Every attribute value of a Key valid; returned in canonical form."""
    return {name: check_value(av) for name, av in item.items()}


def values_map(value: Any) -> dict[str, AttributeValue] | None:
    """ExpressionAttributeValues in canonical form; a bad value names its key."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise errors.serialization("Unexpected value type in payload: expected a map of attribute values")
    out: dict[str, AttributeValue] = {}
    for key, av in value.items():
        if isinstance(av, dict) and not av:
            out[key] = av  # reported by the resolver with DynamoDB's wording
            continue
        try:
            out[key] = check_value(av)
        except DynamoError as exc:
            if exc.code != "ValidationException":
                raise
            raise errors.validation(
                f"ExpressionAttributeValues contains invalid value: {exc.message} for key {key}"
            ) from None
    return out


def attributes_to_get(
    body: Mapping[str, Any], v: Violations, where: str = "attributesToGet"
) -> list[str] | None:
    value = expect_type(body.get("AttributesToGet"), list, "a list")
    if value is None:
        return None
    for name in value:
        if not isinstance(name, str):
            raise errors.serialization("Unexpected value type in payload: expected a string")
    if len(value) < 1:
        v.add(value, where, "Member must have length greater than or equal to 1")
    if len(value) > MAX_ATTRIBUTES_TO_GET:
        v.add(value, where, f"Member must have length less than or equal to {MAX_ATTRIBUTES_TO_GET}")
    names: list[str] = value
    return names


def check_no_duplicate_names(names: list[str] | None) -> None:
    if names is None:
        return
    seen: set[str] = set()
    for name in names:
        if not name:
            raise errors.validation(INVALID + "Empty attribute name")
        if name_too_large(name):
            raise errors.validation(INVALID + NAME_TOO_LARGE)
        if name in seen:
            raise errors.validation(INVALID + f"Duplicate value in attribute name: {name}")
        seen.add(name)


def check_expression_params(body: Mapping[str, Any], expressions: list[str], legacy: list[str]) -> None:
    """DynamoDB refuses mixing expression and legacy parameters, and stray maps."""
    used = [p for p in expressions if body.get(p) is not None]
    if used:
        mixed = [p for p in legacy if body.get(p) is not None]
        # KeyConditions with only a FilterExpression alongside is tolerated, as in DynamoDB.
        if "KeyConditions" in mixed and body.get("KeyConditionExpression") is None:
            mixed.remove("KeyConditions")
        if mixed:
            raise errors.validation(
                "Can not use both expression and non-expression parameters in the same request: "
                f"Non-expression parameters: {{{', '.join(mixed)}}} "
                f"Expression parameters: {{{', '.join(used)}}}"
            )
    if body.get("ExpressionAttributeNames") is not None and not used:
        raise errors.validation("ExpressionAttributeNames can only be specified when using expressions")
    value_users = [p for p in expressions if p != "ProjectionExpression"]
    if (
        value_users
        and body.get("ExpressionAttributeValues") is not None
        and not any(body.get(p) is not None for p in value_users)
    ):
        verb = "are" if len(value_users) > 1 else "is"
        raise errors.validation(
            "ExpressionAttributeValues can only be specified when using expressions: "
            f"{' and '.join(value_users)} {verb} null"
        )


def capacity_mode(body: Mapping[str, Any], v: Violations) -> str:
    mode = string(body, "ReturnConsumedCapacity")
    v.enum(mode, "returnConsumedCapacity", CAPACITY_MODES)
    return mode or "NONE"


def request_items(body: Mapping[str, Any], v: Violations) -> dict[str, Any]:
    """A batch's RequestItems: a map that must be present and not empty (violations go to
    `v`; an absent map reads as empty so callers can loop over it before raising)."""
    items = body.get("RequestItems")
    if items is not None and not isinstance(items, dict):
        raise errors.serialization("Unexpected value type in payload: expected a map")
    if v.not_null(items, "requestItems") and not items:
        v.add(items, "requestItems", "Member must have length greater than or equal to 1")
    return items or {}


def collection_metrics(body: Mapping[str, Any], v: Violations) -> None:
    # Accepted and validated; without local secondary indexes there are no item
    # collection metrics to report, as in DynamoDB.
    v.enum(string(body, "ReturnItemCollectionMetrics"), "returnItemCollectionMetrics", COLLECTION_METRICS)


def return_on_failure(body: Mapping[str, Any], v: Violations) -> bool:
    value = string(body, "ReturnValuesOnConditionCheckFailure")
    v.enum(value, "returnValuesOnConditionCheckFailure", RETURN_ON_FAILURE)
    return value == "ALL_OLD"


@dataclass(slots=True)
class WritePreamble:
    """The members PutItem, UpdateItem and DeleteItem share, checked in DynamoDB's order."""

    table_name: str | None
    target: dict[str, Any] | None  # Item or Key
    capacity: str
    return_values: str | None
    return_old_on_failure: bool
    condition: str | None
    names: dict[str, str] | None


def write_preamble(body: Mapping[str, Any], v: Violations, member: str, where: str) -> WritePreamble:
    """Check the shared members of a write; `member` ("Item" or "Key") is the written
    target, reported at `where` ("item" or "key"). Violations are collected in `v`,
    in the order DynamoDB lists them; the caller adds its own and raises."""
    name = string(body, "TableName")
    v.table_name(name)
    target = attribute_map(body.get(member))
    v.not_null(target, where)
    capacity = capacity_mode(body, v)
    collection_metrics(body, v)
    return_values = string(body, "ReturnValues")
    v.enum(return_values, "returnValues", RETURN_VALUES)
    on_failure = return_on_failure(body, v)
    return WritePreamble(
        name,
        target,
        capacity,
        return_values,
        on_failure,
        string(body, "ConditionExpression"),
        names_map(body.get("ExpressionAttributeNames")),
    )
