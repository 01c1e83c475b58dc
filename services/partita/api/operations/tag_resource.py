"""TagResource: validate the request into a `TagResourceRequest` (and the shared ARN rule)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from partita.api.shape import Violations, expect_dict, expect_type
from partita.common import errors

# A DynamoDB table ARN; the table name is the part after "table/".
_TABLE_ARN = re.compile(r"arn:aws[a-z-]*:dynamodb:[^:]+:\d+:table/([^/]{3,255})")
MAX_KEY_LENGTH = 128
MAX_VALUE_LENGTH = 256
MAX_TAGS = 50


@dataclass(frozen=True)
class TagResourceRequest:
    arn: str
    table_name: str
    tags: list[tuple[str, str]]


def table_of_arn(arn: Any) -> tuple[str, str]:
    """(arn, table name) of a ResourceArn, or DynamoDB's ValidationException."""
    if arn is None:
        raise errors.validation("Invalid TableArn")
    if not isinstance(arn, str):
        raise errors.serialization("Unexpected value type in payload: expected a string")
    if not arn.startswith("arn:"):
        # Newer DynamoDB answers an ARN without the prefix with the ARN parser's own words
        # (Alternator's test_tag_resource_incorrect, recorded against DynamoDB).
        raise errors.validation(f"Invalid TableArn: ARNs must start with 'arn:': {arn}")
    match = _TABLE_ARN.fullmatch(arn)
    if match is None:
        raise errors.validation(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")
    return arn, match.group(1)


# DynamoDB's tagging restrictions (developer guide, "Tagging restrictions"): letters,
# numbers and white space in any script, and + - = . _ : /.
_TAG_TEXT = re.compile(r"[\w\s+\-=._:/]*")
_RESERVED_PREFIX = "aws:"
_INVALID = "One or more parameter values were invalid: "


def check_tags(tags: list[Any], v: Violations) -> list[tuple[str, str]]:
    """Each tag's shape (not null, lengths) as constraint violations in `v`; the pairs."""
    out = []
    for i, tag in enumerate(tags, 1):
        tag = expect_dict(tag)
        key = expect_type(tag.get("Key"), str, "a string")
        value = expect_type(tag.get("Value"), str, "a string")
        if v.not_null(key, f"tags.{i}.member.key"):
            if len(key) < 1:
                v.add(key, f"tags.{i}.member.key", "Member must have length greater than or equal to 1")
            if len(key) > MAX_KEY_LENGTH:
                v.add(
                    key,
                    f"tags.{i}.member.key",
                    f"Member must have length less than or equal to {MAX_KEY_LENGTH}",
                )
        if v.not_null(value, f"tags.{i}.member.value") and len(value) > MAX_VALUE_LENGTH:
            v.add(
                value,
                f"tags.{i}.member.value",
                f"Member must have length less than or equal to {MAX_VALUE_LENGTH}",
            )
        out.append((key, value))
    return out


def check_tag_rules(tags: list[tuple[str, str]]) -> None:
    """The rules beyond the shape: characters, the reserved prefix, the count. Run after
    every shape check passed (`tags` holds strings only)."""
    for key, value in tags:
        if key.lower().startswith(_RESERVED_PREFIX) or value.lower().startswith(_RESERVED_PREFIX):
            raise errors.validation(_INVALID + f"Tag keys and values may not start with '{_RESERVED_PREFIX}'")
        if not _TAG_TEXT.fullmatch(key) or not _TAG_TEXT.fullmatch(value):
            raise errors.validation(
                _INVALID
                + "Tag keys and values may contain only letters, numbers, white space and + - = . _ : /"
            )
    check_tag_count(len({key for key, _ in tags}))


def check_tag_count(count: int) -> None:
    if count > MAX_TAGS:
        raise errors.validation(_INVALID + f"The number of tags on a resource cannot exceed {MAX_TAGS}")


def validate(body: Any) -> TagResourceRequest:
    body = expect_dict(body)
    tags = expect_type(body.get("Tags"), list, "a list")
    arn, table = table_of_arn(body.get("ResourceArn"))
    if tags is None:
        raise errors.constraint_violations(
            ["Value null at 'tags' failed to satisfy constraint: Member must not be null"]
        )
    if not tags:
        raise errors.validation("Atleast one Tag needs to be provided as Input.")
    v = Violations()
    out = check_tags(tags, v)
    v.raise_if_any()
    check_tag_rules(out)
    return TagResourceRequest(arn, table, out)
