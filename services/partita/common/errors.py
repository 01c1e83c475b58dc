"""One error type for the DynamoDB API, with factories and one renderer.

Every failure a client can see is a `DynamoError`: its `code` is DynamoDB's error
type (the part after '#' in `__type`), `namespace` the part before it, and
`status` the HTTP status DynamoDB answers with. Retry policy travels with the error
(`retriable`), as aiokafka's errors carry theirs, so the router's retry loop asks the
error instead of keeping a list.
"""

from __future__ import annotations

from typing import Any

import orjson

DYNAMODB_NS = "com.amazonaws.dynamodb.v20120810"
VALIDATE_NS = "com.amazon.coral.validate"
SERVICE_NS = "com.amazon.coral.service"
AVAILABILITY_NS = "com.amazon.coral.availability"  # ThrottlingException's, as DynamoDB sends it


# Fields an error carries between Partita's processes only, never to a client: which
# transaction holds a locked item, and since when (router/actions/orphan_locks.py).
INTERNAL_EXTRA = frozenset({"LockedBy", "LockedAt"})


class DynamoError(Exception):
    """An error DynamoDB would return; rendered as `{"__type": ..., "message": ...}`."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        namespace: str = DYNAMODB_NS,
        status: int = 400,
        retriable: bool = False,
        extra: dict[str, Any] | None = None,
        client_fault: bool | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.namespace = namespace
        self.status = status
        self.retriable = retriable
        self.extra = extra or {}
        # Whether the request caused it (logged as a rejection, not as a failure): every
        # 4xx, and the few 5xx DynamoDB answers to a bad request (a body that does not
        # decode).
        self.client_fault = status < 500 if client_fault is None else client_fault

    @property
    def type_name(self) -> str:
        return f"{self.namespace}#{self.code}"

    def body(self) -> dict[str, Any]:
        # The service framework (Coral) writes its own errors' text as "Message"; the
        # DynamoDB service's errors use "message", but TransactionCanceledException's is
        # "Message" (its member in the service model). A ConditionalCheckFailedException
        # with the item keeps "message": moto's tests, verified against DynamoDB in August
        # 2026, read it there (a LocalStack recording without it does not check it).
        # SDKs read both, but not all tools do.
        key = "Message" if self.code in _CAPITALISED else "message"
        out: dict[str, Any] = {"__type": self.type_name}
        if self.message:  # an error without text has no message member at all (dynalite)
            out[key] = self.message
        for name, value in self.extra.items():
            if name not in INTERNAL_EXTRA:
                out[name] = value
        return out

    def render(self) -> bytes:
        return orjson.dumps(self.body())


_CAPITALISED = frozenset({"SerializationException", "TransactionCanceledException"})


# --- request shape -------------------------------------------------------------------


def validation(message: str) -> DynamoError:
    return DynamoError("ValidationException", message, namespace=VALIDATE_NS)


def undecodable_body() -> DynamoError:
    """A compressed body that does not decode, or an unknown coding: DynamoDB answers
    InternalServerError, though the request is at fault."""
    return DynamoError(
        "InternalServerError", "Internal server error", status=500, retriable=True, client_fault=True
    )


def nesting_too_deep() -> DynamoError:
    """A document past DynamoDB's 32 levels (as AWS words it, captured in nubo-db/dynoxide
    issue 110; Alternator's tests match "nested")."""
    return validation(
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


def serialization(message: str) -> DynamoError:
    return DynamoError("SerializationException", message, namespace=SERVICE_NS)


def unknown_operation() -> DynamoError:
    return DynamoError("UnknownOperationException", "", namespace=SERVICE_NS)


def not_found_route() -> DynamoError:
    """A method other than POST, or a GET beside the health check on `/`."""
    return DynamoError("UnknownOperationException", "", namespace=SERVICE_NS, status=404)


def constraint_violations(violations: list[str]) -> DynamoError:
    """DynamoDB's 'N validation error(s) detected: ...; ...' for shape violations."""
    n = len(violations)
    noun = "error" if n == 1 else "errors"
    return validation(f"{n} validation {noun} detected: " + "; ".join(violations))


# --- authentication ------------------------------------------------------------------


def missing_authentication_token() -> DynamoError:
    return DynamoError(
        "MissingAuthenticationTokenException",
        "Request is missing Authentication Token",
        namespace=SERVICE_NS,
    )


def incomplete_signature(message: str) -> DynamoError:
    return DynamoError("IncompleteSignatureException", message, namespace=SERVICE_NS)


def invalid_signature(message: str) -> DynamoError:
    return DynamoError("InvalidSignatureException", message, namespace=SERVICE_NS)


def unrecognized_client() -> DynamoError:
    return DynamoError(
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
        namespace=SERVICE_NS,
    )


def access_denied(message: str) -> DynamoError:
    return DynamoError("AccessDeniedException", message, namespace=SERVICE_NS)


# --- resources -----------------------------------------------------------------------


def resource_not_found(message: str = "Requested resource not found") -> DynamoError:
    return DynamoError("ResourceNotFoundException", message)


def table_not_found(table_name: str) -> DynamoError:
    return resource_not_found(f"Requested resource not found: Table: {table_name} not found")


def resource_in_use(message: str) -> DynamoError:
    return DynamoError("ResourceInUseException", message)


def policy_not_found(message: str) -> DynamoError:
    return DynamoError("PolicyNotFoundException", message)


def limit_exceeded(message: str) -> DynamoError:
    return DynamoError("LimitExceededException", message)


# --- data ----------------------------------------------------------------------------


def conditional_check_failed(item: dict[str, Any] | None = None) -> DynamoError:
    extra = {"Item": item} if item is not None else None
    return DynamoError("ConditionalCheckFailedException", "The conditional request failed", extra=extra)


def item_collection_size_limit() -> DynamoError:
    return DynamoError(
        "ItemCollectionSizeLimitExceededException",
        "Collection size exceeded.",
    )


def transaction_canceled(reasons: list[dict[str, Any]]) -> DynamoError:
    codes = ", ".join(r.get("Code", "None") for r in reasons)
    return DynamoError(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": reasons},
    )


# --- capacity and availability -------------------------------------------------------


def provisioned_throughput_exceeded(reasons: list[tuple[str, str]] | None = None) -> DynamoError:
    """`reasons`: (reason, resource ARN) pairs, sent as DynamoDB's `ThrottlingReasons`
    (e.g. "TableWriteProvisionedThroughputExceeded", "TableReadKeyRangeThroughputExceeded")."""
    extra = {"ThrottlingReasons": [{"reason": r, "resource": arn} for r, arn in reasons]} if reasons else None
    return DynamoError(
        "ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API.",
        retriable=True,
        extra=extra,
    )


def index_throughput_exceeded(reasons: list[tuple[str, str]]) -> DynamoError:
    """A global secondary index out of its own throughput: DynamoDB's words for it."""
    return DynamoError(
        "ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for one or more global secondary indexes of the "
        "table was exceeded. Consider increasing your provisioning level for the under-provisioned global "
        "secondary indexes with the UpdateTable API",
        retriable=True,
        extra={"ThrottlingReasons": [{"reason": r, "resource": arn} for r, arn in reasons]},
    )


def throttling(message: str = "Rate of requests exceeds the allowed throughput.") -> DynamoError:
    return DynamoError("ThrottlingException", message, namespace=AVAILABILITY_NS, retriable=True)


def internal_server_error(message: str = "Internal server error") -> DynamoError:
    return DynamoError("InternalServerError", message, status=500, retriable=True)


def service_unavailable(message: str = "The service is currently unavailable") -> DynamoError:
    return DynamoError("ServiceUnavailable", message, namespace=SERVICE_NS, status=503, retriable=True)


# --- errors that crossed a process boundary ------------------------------------------

_NAMESPACE_OF = {
    "ValidationException": VALIDATE_NS,
    "SerializationException": SERVICE_NS,
    "UnknownOperationException": SERVICE_NS,
    "ServiceUnavailable": SERVICE_NS,
    "AccessDeniedException": SERVICE_NS,
    "ThrottlingException": AVAILABILITY_NS,
}
_STATUS_OF = {"InternalServerError": 500, "ServiceUnavailable": 503}
_RETRIABLE = frozenset(
    {
        "InternalServerError",
        "ServiceUnavailable",
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
    }
)


def from_code(code: str, message: str, extra: dict[str, Any] | None = None) -> DynamoError:
    """Rebuild an error a storage node reported by code, with the namespace, status and
    retry policy its factory gives it."""
    return DynamoError(
        code,
        message,
        namespace=_NAMESPACE_OF.get(code, DYNAMODB_NS),
        status=_STATUS_OF.get(code, 400),
        retriable=code in _RETRIABLE,
        extra=extra,
    )
