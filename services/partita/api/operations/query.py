"""Query: validate the request into a `QueryRequest` (key condition resolved, not planned).

Planning the key condition needs the table's key schema, so the router does it after
the table lookup (`plan_key_range`), as DynamoDB reports schema mismatches after
ResourceNotFoundException.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api import legacy
from partita.api.expressions import KeyCondition, plan_key_condition
from partita.api.expressions.key_condition import MultiKeyCondition
from partita.api.expressions.key_condition import plan_multi as plan_multi_key_condition
from partita.api.expressions.parser import walk_paths
from partita.api.operations import common, reads
from partita.api.operations.common import Expressions
from partita.api.operations.reads import ReadCommon
from partita.api.shape import Violations, expect_dict
from partita.common import errors
from partita.control.model import KeyElement, SecondaryIndex, TableRecord


@dataclass(frozen=True)
class QueryRequest:
    read: ReadCommon
    forward: bool
    expressions: Expressions
    legacy_filter: bool  # the filter came from QueryFilter (its errors say so)
    # Legacy KeyConditions' (attribute, ComparisonOperator): an operator no key can be
    # read by is reported when the condition is matched to the key schema.
    legacy_operators: tuple[tuple[str, str], ...] = ()

    def key_condition(self, record: TableRecord, index: SecondaryIndex | None = None) -> KeyCondition:
        """The key condition matched to the key schema of the table, or of the index the
        Query reads (DynamoDB's messages)."""
        tree = self.expressions.resolved.key_condition
        assert tree is not None
        keys = (
            (record.partition_key, record.sort_key)
            if index is None
            else (index.partition_key, index.sort_key)
        )
        partition_key, sort_key = keys
        self._check_indexable(partition_key, sort_key)
        types = {element.name: element.type for element in keys if element is not None}
        condition = plan_key_condition(tree, partition_key.name, sort_key.name if sort_key else None, types)
        reads.check_scalar_key_paths(self.expressions.resolved.projection, record)
        self._check_filter_keys(keys)
        reads.check_scalar_index_key_paths(self.expressions.resolved.filter, record)
        return condition

    def _check_indexable(self, partition_key: KeyElement, sort_key: KeyElement | None) -> None:
        """A key attribute's legacy condition that no key can be read by, in DynamoDB's
        order (dynalite's recorded tests): the partition key's, then the sort key's;
        whatever the planner reports before it (a missing key attribute, a second
        condition on a table without a sort key, a partition key not read by EQ) first."""
        ops = dict(self.legacy_operators)
        if all(legacy.indexable(op) for op in ops.values()):
            return
        if partition_key.name not in ops or (sort_key is None and len(ops) > 1):
            return
        if not legacy.indexable(ops[partition_key.name]):
            raise errors.validation(legacy.UNINDEXABLE)
        sort_op = ops.get(sort_key.name) if sort_key is not None else None
        if ops[partition_key.name] == "EQ" and sort_op is not None and not legacy.indexable(sort_op):
            raise errors.validation(legacy.UNINDEXABLE)

    def multi_key_condition(self, record: TableRecord, index: SecondaryIndex) -> MultiKeyCondition:
        """The key condition matched to a global index's multi-attribute key."""
        key_names = {e.name for e in (*index.hash_keys, *index.range_keys)}
        if any(name in key_names and not legacy.indexable(op) for name, op in self.legacy_operators):
            raise errors.validation(legacy.UNINDEXABLE)
        tree = self.expressions.resolved.key_condition
        assert tree is not None
        condition = plan_multi_key_condition(
            tree,
            [(e.name, e.type) for e in index.hash_keys],
            [(e.name, e.type) for e in index.range_keys],
        )
        reads.check_scalar_key_paths(self.expressions.resolved.projection, record)
        self._check_filter_keys((*index.hash_keys, *index.range_keys))
        return condition

    def _check_filter_keys(self, keys: tuple[KeyElement | None, ...]) -> None:
        tree = self.expressions.resolved.filter
        if tree is None:
            return
        heads = {p.elements[0] for p in walk_paths(tree)}
        for element in keys:
            if element is not None and element.name in heads:
                source = "QueryFilter" if self.legacy_filter else "Filter Expression"
                raise errors.validation(
                    f"{source} can only contain non-primary key attributes: Primary key attribute: {element.name}"
                )


def validate(body: Any) -> QueryRequest:
    body = expect_dict(body)
    v = Violations()
    read, to_get = reads.shape(body, v)
    forward = common.boolean(body, "ScanIndexForward")
    if body.get("ConditionalOperator") is not None:
        v.enum(
            common.string(body, "ConditionalOperator"), "conditionalOperator", common.CONDITIONAL_OPERATORS
        )
    key_condition = common.string(body, "KeyConditionExpression")
    projection = common.string(body, "ProjectionExpression")
    # Query reports the Select rules among the model constraints ("1 validation error
    # detected: ..."); Scan reports them bare.
    problem = reads.select_problem(read.select, read.index_name, projection is not None, to_get is not None)
    if problem is not None:
        v.messages.append(problem)
    v.raise_if_any()

    common.check_expression_params(
        body,
        ["ProjectionExpression", "FilterExpression", "KeyConditionExpression"],
        ["AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions"],
    )
    common.check_no_duplicate_names(to_get)
    start = reads.exclusive_start(read.exclusive_start)
    key_conditions = body.get("KeyConditions")
    if key_conditions is None and key_condition is None:
        raise errors.validation(
            "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
        )
    expressions = reads.filter_and_projection(
        body,
        "QueryFilter",
        to_get,
        key_condition=key_condition,
        key_conditions=key_conditions if key_condition is None else None,
    )
    read = reads.settled(read, start, expressions.projection is not None)
    legacy_keys = key_conditions if key_condition is None else None
    return QueryRequest(
        read,
        forward is not False,
        expressions,
        body.get("QueryFilter") is not None,
        legacy.key_operators(legacy_keys) if legacy_keys else (),
    )
