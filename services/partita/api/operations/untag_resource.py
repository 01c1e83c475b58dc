"""UntagResource: validate the request into an `UntagResourceRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations.tag_resource import table_of_arn
from partita.api.shape import expect_dict, expect_type
from partita.common import errors


@dataclass(frozen=True)
class UntagResourceRequest:
    arn: str
    table_name: str
    keys: list[str]


def validate(body: Any) -> UntagResourceRequest:
    body = expect_dict(body)
    keys = expect_type(body.get("TagKeys"), list, "a list")
    arn, table = table_of_arn(body.get("ResourceArn"))
    if keys is None:
        raise errors.constraint_violations(
            ["Value null at 'tagKeys' failed to satisfy constraint: Member must not be null"]
        )
    if not keys:
        raise errors.validation("Atleast one Tag Key needs to be provided as Input.")
    for key in keys:
        if not isinstance(key, str):
            raise errors.serialization("Unexpected value type in payload: expected a string")
    return UntagResourceRequest(arn, table, keys)
