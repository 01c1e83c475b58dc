"""How DynamoDB words some validation errors of its write operations.

DynamoDB's front end for PutItem, UpdateItem and DeleteItem now reports certain
semantic validation errors as a list of one, the way the framework reports a failed
constraint: "1 validation error detected: <message>". Other operations answer the same
faults without the prefix (GetItem, Scan, BatchGetItem, the transactions), and the
write operations answer other faults without it (a key that does not match the schema,
a syntax error). No rule covers them all, so this module lists what was recorded
against DynamoDB (moto's AWS-verified tests as of August 2026, moto commit 35e6424)
and leaves everything else as the checks word it. (Query's Select rules are reported
among its constraint violations, `operations.query`.)

In the same front end, an empty set among an UpdateItem's ExpressionAttributeValues is
reported like one in an item: without naming the parameter or the placeholder.
"""

from __future__ import annotations

import re

from partita.common import errors
from partita.common.errors import DynamoError

ONE_ERROR = "1 validation error detected: "

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
# The messages (by their beginning) the write operations answer as a list of one.
LISTED = (
    "Value provided in ExpressionAttributeNames unused in expressions",
    "Value provided in ExpressionAttributeValues unused in expressions",
    "ExpressionAttributeValues must not be empty",
    "ExpressionAttributeNames must not be empty",
    'Invalid UpdateExpression: The "',  # ... section can only be used once
    "Invalid UpdateExpression: Two document paths overlap",
    "Invalid UpdateExpression: The expression can not be empty;",
    "One or more parameter values were invalid: An number set  may not be empty",
    "One or more parameter values were invalid: An string set  may not be empty",
    "One or more parameter values were invalid: Binary sets should not be empty",
)
_EMPTY_SET_VALUE = re.compile(
    r"ExpressionAttributeValues contains invalid value: "
    r"(One or more parameter values were invalid: (?:An \w+ set  may not be empty|Binary sets should not be "
    r"empty)) for key \S+"
)


def as_answered(operation: str, exc: DynamoError) -> DynamoError:
    """`exc` as DynamoDB's answer to `operation` words it."""
    if exc.code != "ValidationException" or operation not in WRITE_OPERATIONS:
        return exc
    message = exc.message
    empty_set = _EMPTY_SET_VALUE.fullmatch(message)
    if empty_set is not None:
        return errors.validation(ONE_ERROR + empty_set.group(1))
    if message.startswith(LISTED):
        return errors.validation(ONE_ERROR + message)
    return exc
