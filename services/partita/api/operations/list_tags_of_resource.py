"""ListTagsOfResource: validate the request into a `ListTagsRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations.tag_resource import table_of_arn
from partita.api.shape import expect_dict, expect_type


@dataclass(frozen=True)
class ListTagsRequest:
    arn: str
    table_name: str
    next_token: str | None


def validate(body: Any) -> ListTagsRequest:
    body = expect_dict(body)
    token = expect_type(body.get("NextToken"), str, "a string")
    arn, table = table_of_arn(body.get("ResourceArn"))
    return ListTagsRequest(arn, table, token)
