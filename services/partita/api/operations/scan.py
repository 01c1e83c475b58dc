"""Scan: validate the request into a `ScanRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations import common, reads
from partita.api.operations.common import Expressions
from partita.api.operations.reads import ReadCommon
from partita.api.shape import Violations, expect_dict
from partita.common import errors

MAX_TOTAL_SEGMENTS = 1_000_000


@dataclass(frozen=True)
class ScanRequest:
    read: ReadCommon
    segment: int
    total_segments: int  # 1 when the scan is not parallel
    expressions: Expressions


def validate(body: Any) -> ScanRequest:
    body = expect_dict(body)
    v = Violations()
    read, to_get = reads.shape(body, v)
    segment = common.integer(body, "Segment")
    total = common.integer(body, "TotalSegments")
    v.at_least(segment, "segment", 0)
    v.at_most(segment, "segment", MAX_TOTAL_SEGMENTS - 1)
    v.at_least(total, "totalSegments", 1)
    v.at_most(total, "totalSegments", MAX_TOTAL_SEGMENTS)
    if body.get("ConditionalOperator") is not None:
        v.enum(
            common.string(body, "ConditionalOperator"), "conditionalOperator", common.CONDITIONAL_OPERATORS
        )
    projection = common.string(body, "ProjectionExpression")
    common.string(body, "FilterExpression")
    v.raise_if_any()

    common.check_expression_params(
        body,
        ["ProjectionExpression", "FilterExpression"],
        ["AttributesToGet", "ScanFilter", "ConditionalOperator"],
    )
    problem = reads.select_problem(read.select, read.index_name, projection is not None, to_get is not None)
    if problem is not None:
        raise errors.validation(problem)
    common.check_no_duplicate_names(to_get)
    start = reads.exclusive_start(read.exclusive_start)
    if segment is not None and total is None:
        raise errors.validation(
            "The TotalSegments parameter is required but was not present in the request when Segment parameter "
            "is present"
        )
    if total is not None:
        if segment is None:
            raise errors.validation(
                "The Segment parameter is required but was not present in the request when parameter "
                "TotalSegments is present"
            )
        if segment >= total:
            raise errors.validation(
                "The Segment parameter is zero-based and must be less than parameter TotalSegments: "
                f"Segment: {segment} is not less than TotalSegments: {total}"
            )
    expressions = reads.filter_and_projection(body, "ScanFilter", to_get)
    read = reads.settled(read, start, expressions.projection is not None)
    return ScanRequest(read, segment or 0, total or 1, expressions)
