"""Query and Scan share most of their request: Select, Limit, projection, filter, paging."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from partita.api import legacy
from partita.api.expressions import ast
from partita.api.expressions.parser import walk_paths
from partita.api.operations import common
from partita.api.operations.common import Expressions
from partita.api.shape import Violations
from partita.common import errors
from partita.control.model import TableRecord

SELECT_ENUM = ["SPECIFIC_ATTRIBUTES", "COUNT", "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES"]
_SELECTION = {"ALL_ATTRIBUTES": "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES": "ALL_PROJECTED_ATTRIBUTES",
              "COUNT": "only the Count"}  # fmt: skip


@dataclass(frozen=True)
class ReadCommon:
    """The parts of a Query or Scan request both operations treat alike."""

    table_name: str
    index_name: str | None
    select: str  # ALL_ATTRIBUTES, SPECIFIC_ATTRIBUTES or COUNT
    limit: int | None
    consistent: bool
    exclusive_start: dict[str, Any] | None
    capacity: str
    # Select as the request gave it ("" if absent): an index read tells ALL_ATTRIBUTES
    # from ALL_PROJECTED_ATTRIBUTES, and defaults to the latter.
    requested_select: str = ""


def shape(body: dict[str, Any], v: Violations) -> tuple[ReadCommon, list[str] | None]:
    """The model constraints of the shared parameters (collected, not raised)."""
    name = common.string(body, "TableName")
    v.table_name(name)
    index_name = common.string(body, "IndexName")
    if index_name is not None:
        v.table_name(index_name, "indexName")
    select = common.string(body, "Select")
    v.enum(select, "select", SELECT_ENUM)
    to_get = common.attributes_to_get(body, v)
    limit = common.integer(body, "Limit")
    v.at_least(limit, "limit", 1)
    consistent = common.boolean(body, "ConsistentRead")
    start = common.attribute_map(body.get("ExclusiveStartKey"))
    capacity = common.capacity_mode(body, v)
    read = ReadCommon(
        table_name=name or "",
        index_name=index_name,
        select=select or "",
        limit=limit,
        consistent=bool(consistent),
        exclusive_start=start,
        capacity=capacity,
    )
    return read, to_get


def select_problem(select: str, index_name: str | None, projection: bool, to_get: bool) -> str | None:
    """DynamoDB's rules tying Select to the projection parameters (message or None)."""
    if select == "SPECIFIC_ATTRIBUTES" and not (projection or to_get):
        return "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"
    if select == "ALL_PROJECTED_ATTRIBUTES" and index_name is None:
        return "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"
    if select in _SELECTION:
        if to_get:
            return f"Cannot specify the AttributesToGet when choosing to get {_SELECTION[select]}"
        if projection:
            return f"Cannot specify the ProjectionExpression when choosing to get {_SELECTION[select]}"
    return None


def settled(read: ReadCommon, start: dict[str, Any] | None, has_projection: bool) -> ReadCommon:
    """The request's shared parameters once checked: its ExclusiveStartKey's values, and
    the Select it amounts to (the one it gave kept as `requested_select`)."""
    select = effective_select(read.select, has_projection)
    return dataclasses.replace(read, select=select, exclusive_start=start, requested_select=read.select)


def effective_select(select: str, has_projection: bool) -> str:
    if select:
        return "ALL_ATTRIBUTES" if select == "ALL_PROJECTED_ATTRIBUTES" else select
    return "SPECIFIC_ATTRIBUTES" if has_projection else "ALL_ATTRIBUTES"


def exclusive_start(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """ExclusiveStartKey's values checked; DynamoDB prefixes most of their messages."""
    if raw is None:
        return None
    out = {}
    for name, av in raw.items():
        try:
            out[name] = common.check_item_values({name: av})[name]
        except errors.DynamoError as exc:
            if exc.code != "ValidationException":
                raise
            quiet = ("contains duplicates", "number set", "numeric value", "significant digits",
                     "number with magnitude")  # fmt: skip
            if any(q in exc.message for q in quiet):
                raise
            raise errors.validation(f"The provided starting key is invalid: {exc.message}") from None
    return out


def filter_and_projection(
    body: dict[str, Any],
    legacy_filter: str,
    to_get: list[str] | None,
    *,
    key_condition: str | None = None,
    key_conditions: Any = None,
) -> Expressions:
    """The request's expressions, legacy parameters translated, all resolved together."""
    names = common.names_map(body.get("ExpressionAttributeNames"))
    values = common.values_map(body.get("ExpressionAttributeValues"))
    filter_text = common.string(body, "FilterExpression")
    projection = common.string(body, "ProjectionExpression")
    uses_legacy = to_get is not None or body.get(legacy_filter) is not None or key_conditions is not None
    if not uses_legacy:
        if body.get("ConditionalOperator") is not None:
            legacy.conditional_operator(body, legacy_filter)
        return common.resolve(
            Expressions(
                key_condition=key_condition,
                filter=filter_text,
                projection=projection,
                names=names,
                values=values,
            )
        )
    # Legacy and expression parameters may still meet here in one case DynamoDB allows:
    # KeyConditions with a FilterExpression/ProjectionExpression. Keep the caller's maps.
    ph = legacy.Placeholders()
    if names:
        ph.names.update(names)
    if values:
        ph.values.update(values)
    if key_conditions is not None:
        key_condition = legacy.key_conditions(key_conditions, ph)
    if body.get(legacy_filter) is not None:
        operator = legacy.conditional_operator(body, legacy_filter)
        filter_text = legacy.filter_conditions(body[legacy_filter], operator, legacy_filter, ph)
    elif body.get("ConditionalOperator") is not None:
        legacy.conditional_operator(body, legacy_filter)
    if to_get is not None:
        projection = legacy.projection(to_get, ph)
    return common.resolve(
        Expressions(
            key_condition=key_condition,
            filter=filter_text,
            projection=projection,
            names=ph.names or None,
            values=ph.values or None,
            # Only a translated filter or projection is not held to the expression
            # limits: beside KeyConditions the FilterExpression is the caller's own (and
            # a translated key condition is two comparisons at most).
            legacy=body.get(legacy_filter) is not None or to_get is not None,
        )
    )


_NOT_SCALAR = "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: "


def check_scalar_key_paths(tree: ast.Projection | ast.Condition | None, record: TableRecord) -> None:
    """A document path into a key attribute (`pk.a`, `pk[0]`) in a projection or filter:
    key attributes are scalars, and DynamoDB says so (dynalite's getItem, query and scan
    tests, recorded against DynamoDB) rather than matching nothing. The table's keys
    first, then its indexes'."""
    nested = _nested_heads(tree)
    for name in record.key_names:
        if name in nested:
            raise errors.validation(f"{_NOT_SCALAR}Key: {name}")
    check_scalar_index_key_paths(tree, record, nested)


def check_scalar_index_key_paths(
    tree: ast.Projection | ast.Condition | None, record: TableRecord, nested: frozenset[str] | None = None
) -> None:
    """A document path into one of the table's index key attributes."""
    heads = _nested_heads(tree) if nested is None else nested
    for index in record.indexes:
        for name in index.key_names:
            if name in heads:
                raise errors.validation(f"{_NOT_SCALAR}IndexKey: {name}")


def _nested_heads(tree: ast.Projection | ast.Condition | None) -> frozenset[str]:
    """The attributes a tree reaches into (a path of more than one element)."""
    if tree is None:
        return frozenset()
    paths = tree.paths if isinstance(tree, ast.Projection) else tuple(walk_paths(tree))
    return frozenset(str(p.elements[0]) for p in paths if len(p.elements) > 1)
