"""Validation and canonical form of items and keys as clients send them.

Requests arrive as orjson-decoded JSON. `check_value` walks an attribute value,
raises DynamoDB's error for anything DynamoDB refuses, and returns the value with
numbers in canonical form (DynamoDB answers "1.5" for a stored "1.50").
"""

from __future__ import annotations

import binascii
from typing import Any

from partita.api.values import AttributeValue, Item, item_size
from partita.common import errors, numbers
from partita.common.errors import DynamoError

MAX_ITEM_BYTES = 400 * 1024
MAX_DEPTH = 32
MAX_NAME_BYTES = 65535  # an attribute name; key attribute names are limited to 255 by the schema
NAME_TOO_LARGE = "Attribute name is too large, must be less than 65536 bytes"

_EMPTY_AV = "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
_MULTI_AV = (
    "Supplied AttributeValue has more than one datatypes set, "
    "must contain exactly one of the supported datatypes"
)
_SET_NAMES = {"SS": "string set", "NS": "number set", "BS": "binary set"}


def _serialization(kind: str) -> DynamoError:
    return errors.serialization(f"Unexpected value type in payload: expected {kind}")


def check_base64(text: str) -> None:
    """Base64 as DynamoDB decodes it: a length that is a multiple of 4, in canonical form
    (no stray characters, no padding bits set), or a SerializationException in the words
    of the AWS Java SDK's Base64 codec (its typo included), as dynalite's tests record
    them. The service model's Coral stage (`service_model.BlobCheck`) and the item checks
    both ask this."""
    if len(text) % 4:
        raise errors.serialization(
            f"Base64 encoded length is expected a multiple of 4 bytes but found: {len(text)}"
        )
    try:
        decoded = binascii.a2b_base64(text)
    except (binascii.Error, ValueError):  # ValueError: not ASCII
        decoded = None
    if decoded is None or binascii.b2a_base64(decoded, newline=False) != text.encode():
        raise errors.serialization("Invalid last non-pad Base64 character dectected")


def _check_b64(text: Any) -> None:
    if not isinstance(text, str):
        raise _serialization("a Base64 string")
    check_base64(text)


def check_value(av: Any, depth: int = 1) -> AttributeValue:
    """Validate one attribute value; return it in canonical form."""
    if not isinstance(av, dict):
        raise _serialization("an AttributeValue object")
    if len(av) != 1:
        raise errors.validation(_EMPTY_AV if not av else _MULTI_AV)
    if depth > MAX_DEPTH:
        raise errors.nesting_too_deep()
    ((kind, value),) = av.items()
    if kind == "S":
        if not isinstance(value, str):
            raise _serialization("a string")
        return av
    if kind == "N":
        if not isinstance(value, str):
            raise _serialization("a number string")
        return {"N": numbers.canonical(value)}
    if kind == "B":
        _check_b64(value)
        return av
    if kind == "BOOL":
        if not isinstance(value, bool):
            raise _serialization("a boolean")
        return av
    if kind == "NULL":
        if value is not True:
            if isinstance(value, bool):
                raise errors.validation(
                    "One or more parameter values were invalid: "
                    "Null attribute value types must have the value of true"
                )
            raise _serialization("a boolean")
        return av
    if kind == "M":
        if not isinstance(value, dict):
            raise _serialization("a map")
        return {"M": {k: check_value(v, depth + 1) for k, v in value.items()}}
    if kind == "L":
        if not isinstance(value, list):
            raise _serialization("a list")
        return {"L": [check_value(v, depth + 1) for v in value]}
    if kind in _SET_NAMES:
        return {kind: _check_set(kind, value)}
    raise errors.validation(_EMPTY_AV)


def _check_set(kind: str, members: Any) -> list[str]:
    if not isinstance(members, list):
        raise _serialization("a list")
    if not members:
        # DynamoDB's own wording, double space and all; binary sets have their own.
        what = (
            "Binary sets should not be empty" if kind == "BS" else f"An {_SET_NAMES[kind]}  may not be empty"
        )
        raise errors.validation(f"One or more parameter values were invalid: {what}")
    out: list[str] = []
    for m in members:
        if kind == "NS":
            if not isinstance(m, str):
                raise _serialization("a number string")
            out.append(numbers.canonical(m))
        elif kind == "BS":
            _check_b64(m)
            out.append(m)
        else:
            if not isinstance(m, str):
                raise _serialization("a string")
            out.append(m)
    if len(set(out)) != len(out):
        shown = ", ".join(members)
        of_type = "of type BS " if kind == "BS" else " "  # sic: DynamoDB's BS text has no space
        raise errors.validation(
            f"One or more parameter values were invalid: Input collection [{shown}]{of_type}contains duplicates."
        )
    return out


def name_too_large(name: str) -> bool:
    # UTF-8 needs at most 4 bytes a character: shorter names need no encoding.
    return len(name) > MAX_NAME_BYTES // 4 and len(name.encode("utf-8")) > MAX_NAME_BYTES


def check_item(item: Any) -> Item:
    """Validate a whole item (PutItem's Item); return it in canonical form."""
    if not isinstance(item, dict):
        raise _serialization("a map of attribute values")
    canonical = {name: check_value(av) for name, av in item.items()}
    for name in canonical:
        if not name:
            # DynamoDB's words as Alternator's test_limit_attribute_length_nonkey_empty
            # records them (the same as for an empty name in AttributesToGet).
            raise errors.validation("One or more parameter values were invalid: Empty attribute name")
        if name_too_large(name):
            raise errors.validation("One or more parameter values were invalid: " + NAME_TOO_LARGE)
    if item_size(canonical) > MAX_ITEM_BYTES:
        raise errors.validation("Item size has exceeded the maximum allowed size")
    return canonical
