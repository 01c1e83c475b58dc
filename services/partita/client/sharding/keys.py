"""Shard suffixes and sort-key order: the seed's three methods, as pure functions.

A logical partition key `/shared/firetvGen2.txt` lives in shards numbered 1..N, stored
under the physical partition keys `/shared/firetvGen2.txt_1` .. `_N`:
- random suffix: a writer picks RANDOM(1, N);
- computed suffix: md5(partition key + sort key) % N + 1, so a reader that knows both
  keys finds the item in one shard instead of asking all N.
"""

from __future__ import annotations

import base64
import hashlib
import random
from decimal import Decimal, localcontext
from enum import Enum
from typing import Any

# A DynamoDB attribute value in the low-level client's shape: {"S": "..."}, {"N": "1"}, ...
AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

SEPARATOR = "_"


class Suffix(Enum):
    """How a writer chooses a shard when the shard count is fixed."""

    RANDOM = "random"
    COMPUTED = "computed"


def sharded_key(partition_key: str, shard: int) -> str:
    """The physical partition key of one shard: `<pk>_<shard>`."""
    if shard < 1:
        raise ValueError(f"shards are numbered from 1, got {shard}")
    return f"{partition_key}{SEPARATOR}{shard}"


def logical_key(physical: str) -> tuple[str, int]:
    """(logical partition key, shard) of a physical key made by `sharded_key`."""
    base, sep, number = physical.rpartition(SEPARATOR)
    if not sep or not number.isdigit() or int(number) < 1:
        raise ValueError(f"{physical!r} is not a sharded partition key")
    return base, int(number)


def random_shard(count: int, rng: random.Random) -> int:
    """RANDOM(1, count), the seed's second method."""
    _check_count(count)
    return rng.randint(1, count)


def computed_shard(partition_key: str, sort_key: AttributeValue, count: int) -> int:
    """md5(partition key + sort key) % count + 1, the seed's third method.

    The sort key enters by its canonical bytes, so a reader that writes the number 1.0
    finds the item a writer stored as 1 (DynamoDB treats them as one key).
    """
    _check_count(count)
    digest = hashlib.md5(partition_key.encode() + canonical_bytes(sort_key), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def canonical_bytes(value: AttributeValue) -> bytes:
    """The bytes of a key attribute that equal keys share (S, N or B)."""
    (kind, raw), *rest = value.items()
    if rest:
        raise ValueError(f"a key attribute has one type, got {sorted(value)}")
    if kind == "S":
        return b"S" + str(raw).encode()
    if kind == "N":
        return b"N" + _canonical_number(str(raw)).encode()
    if kind == "B":
        return b"B" + _as_bytes(raw)
    raise ValueError(f"key attributes are S, N or B, got {kind}")


def sort_position(value: AttributeValue) -> tuple[int, Any]:
    """A value ordering sort keys as DynamoDB does: S by UTF-8 bytes, N by value, B by bytes."""
    (kind, raw), *rest = value.items()
    if rest:
        raise ValueError(f"a key attribute has one type, got {sorted(value)}")
    if kind == "S":
        return 0, str(raw).encode()
    if kind == "N":
        return 1, Decimal(str(raw))
    if kind == "B":
        return 2, _as_bytes(raw)
    raise ValueError(f"key attributes are S, N or B, got {kind}")


def _canonical_number(text: str) -> str:
    # DynamoDB numbers have at most 38 significant digits; normalize() within that
    # precision maps 1, 1.0 and 1E0 to one spelling without rounding any of them.
    with localcontext() as context:
        context.prec = 40
        number = Decimal(text)
        return "0" if number.is_zero() else str(number.normalize())


def _as_bytes(raw: Any) -> bytes:
    # boto3 hands B values back as bytes; a caller may also pass base64 text.
    if isinstance(raw, bytes | bytearray):
        return bytes(raw)
    return base64.b64decode(str(raw))


def _check_count(count: int) -> None:
    if count < 1:
        raise ValueError(f"a partition key has at least one shard, got {count}")
