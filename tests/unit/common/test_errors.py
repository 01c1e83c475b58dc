"""DynamoError: one type, factories with DynamoDB's types and statuses, one renderer.

Expected `__type` values are those real DynamoDB sends, as recorded by clients that
parse them (dynalite's test helpers retry on
"com.amazon.coral.availability#ThrottlingException"; IAM denials arrive as
"com.amazon.coral.service#AccessDeniedException").
"""

from __future__ import annotations

import orjson
import pytest

from partita.common import errors
from partita.common.errors import DynamoError


def test_render_is_json_with_type_and_message() -> None:
    error = DynamoError("ResourceNotFoundException", "gone")
    assert orjson.loads(error.render()) == {
        "__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
        "message": "gone",
    }
    assert error.status == 400
    assert not error.retriable


def test_extra_fields_are_rendered_beside_type_and_message() -> None:
    error = errors.conditional_check_failed({"pk": {"S": "a"}})
    assert orjson.loads(error.render()) == {
        "__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
        "message": "The conditional request failed",
        "Item": {"pk": {"S": "a"}},
    }


def test_conditional_check_failed_without_item_has_no_item_field() -> None:
    assert "Item" not in errors.conditional_check_failed().body()


def test_the_exception_text_names_code_and_message() -> None:
    assert str(errors.validation("bad thing")) == "ValidationException: bad thing"


@pytest.mark.parametrize(
    ("error", "type_name", "status", "retriable"),
    [
        (errors.validation("m"), "com.amazon.coral.validate#ValidationException", 400, False),
        (errors.serialization("m"), "com.amazon.coral.service#SerializationException", 400, False),
        (errors.unknown_operation(), "com.amazon.coral.service#UnknownOperationException", 400, False),
        (
            errors.missing_authentication_token(),
            "com.amazon.coral.service#MissingAuthenticationTokenException",
            400,
            False,
        ),
        (
            errors.incomplete_signature("m"),
            "com.amazon.coral.service#IncompleteSignatureException",
            400,
            False,
        ),
        (errors.invalid_signature("m"), "com.amazon.coral.service#InvalidSignatureException", 400, False),
        (errors.unrecognized_client(), "com.amazon.coral.service#UnrecognizedClientException", 400, False),
        (errors.access_denied("m"), "com.amazon.coral.service#AccessDeniedException", 400, False),
        (
            errors.resource_not_found(),
            "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
            400,
            False,
        ),
        (errors.resource_in_use("m"), "com.amazonaws.dynamodb.v20120810#ResourceInUseException", 400, False),
        (errors.limit_exceeded("m"), "com.amazonaws.dynamodb.v20120810#LimitExceededException", 400, False),
        (
            errors.item_collection_size_limit(),
            "com.amazonaws.dynamodb.v20120810#ItemCollectionSizeLimitExceededException",
            400,
            False,
        ),
        (
            errors.provisioned_throughput_exceeded(),
            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            400,
            True,
        ),
        (errors.throttling(), "com.amazon.coral.availability#ThrottlingException", 400, True),
        (errors.internal_server_error(), "com.amazonaws.dynamodb.v20120810#InternalServerError", 500, True),
        (errors.service_unavailable(), "com.amazon.coral.service#ServiceUnavailable", 503, True),
    ],
)
def test_factories_give_dynamodbs_type_status_and_retry_policy(
    error: DynamoError, type_name: str, status: int, retriable: bool
) -> None:
    assert error.type_name == type_name
    assert error.status == status
    assert error.retriable is retriable
    assert orjson.loads(error.render())["__type"] == type_name


def test_one_constraint_violation_is_singular() -> None:
    error = errors.constraint_violations(["Value null at 'tableName' failed to satisfy constraint: x"])
    assert (
        error.message
        == "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: x"
    )
    assert error.code == "ValidationException"


def test_several_constraint_violations_are_counted_and_joined_by_semicolons() -> None:
    error = errors.constraint_violations(["a", "b", "c"])
    assert error.message == "3 validation errors detected: a; b; c"


def test_table_not_found_names_the_table() -> None:
    assert errors.table_not_found("Orders").message == "Requested resource not found: Table: Orders not found"
    assert errors.resource_not_found().message == "Requested resource not found"


def test_transaction_canceled_lists_every_reason_code_and_carries_the_reasons() -> None:
    reasons = [
        {"Code": "None"},
        {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"},
    ]
    error = errors.transaction_canceled(reasons)
    assert error.message == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[None, ConditionalCheckFailed]"
    )
    assert error.body()["CancellationReasons"] == reasons
    assert error.body()["Message"] == error.message and "message" not in error.body()


def test_the_dynamodb_messages_of_fixed_errors() -> None:
    assert errors.missing_authentication_token().message == "Request is missing Authentication Token"
    assert errors.unrecognized_client().message == "The security token included in the request is invalid."
    assert errors.provisioned_throughput_exceeded().message == (
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API."
    )
    assert errors.item_collection_size_limit().message == "Collection size exceeded."
