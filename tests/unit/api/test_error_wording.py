"""The write operations' wording of some validation errors (as recorded against DynamoDB)."""

from __future__ import annotations

import pytest

from partita.api.error_wording import as_answered
from partita.common import errors

UNUSED = "Value provided in ExpressionAttributeNames unused in expressions: keys: {#count}"


@pytest.mark.parametrize("operation", ["PutItem", "UpdateItem", "DeleteItem"])
def test_a_write_operation_lists_an_unused_name_as_one_validation_error(operation: str) -> None:
    answered = as_answered(operation, errors.validation(UNUSED))
    assert (answered.code, answered.message) == (
        "ValidationException",
        "1 validation error detected: " + UNUSED,
    )


@pytest.mark.parametrize("operation", ["GetItem", "Scan", "Query", "BatchGetItem", "BatchWriteItem"])
def test_other_operations_answer_it_bare(operation: str) -> None:
    assert as_answered(operation, errors.validation(UNUSED)).message == UNUSED


def test_faults_not_on_record_keep_their_wording() -> None:
    syntax = errors.validation('Invalid UpdateExpression: Syntax error; token: "<EOF>", near: "SET"')
    assert as_answered("UpdateItem", syntax) is syntax
    not_found = errors.table_not_found("t")
    assert as_answered("PutItem", not_found) is not_found


def test_an_empty_set_among_the_values_is_worded_as_one_in_an_item() -> None:
    raised = errors.validation(
        "ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: "
        "An string set  may not be empty for key :emptySet"
    )
    assert as_answered("UpdateItem", raised).message == (
        "1 validation error detected: One or more parameter values were invalid: An string set  may not be empty"
    )
    other = errors.validation(
        "ExpressionAttributeValues contains invalid value: The parameter cannot be converted to a numeric "
        "value: dog for key :v"
    )
    assert as_answered("UpdateItem", other) is other
