"""Attribute values in DynamoDB's wire format, and the rules DynamoDB applies to them.

An attribute value is the one-key dict orjson gives us ({"S": "x"}, {"N": "1.5"},
{"L": [...]}, ...); an item maps attribute names to such values. Nothing here converts
values into other objects: callers keep the wire format end to end, and these helpers
answer the questions the engine asks of it — type, ordering, equality, and size as
DynamoDB counts it for the 400 KB limit and capacity units.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any

from partita.common.numbers import CONTEXT

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

SCALAR_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL"})
SET_TYPES = frozenset({"SS", "NS", "BS"})
ALL_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"})


def value_type(av: AttributeValue) -> str:
    """The type descriptor of a value ("S", "N", "M", ...)."""
    for key in av:
        return key
    raise ValueError("empty attribute value")


def b64_bytes(text: str) -> bytes:
    """Raw bytes of a B value (the wire carries base64 text, validated on the way in)."""
    return base64.b64decode(text)


# --- ordering and equality ---------------------------------------------------------


def compare(a: AttributeValue, b: AttributeValue) -> int | None:
    """-1/0/1 ordering of two values as DynamoDB orders them, or None if not comparable.

    Only S, N and B order, and only against the same type: a type mismatch is not an
    error in DynamoDB conditions, the comparison is simply false.
    """
    ta = value_type(a)
    if ta != value_type(b):
        return None
    if ta == "S":
        # Code-point order of valid Unicode equals the order of its UTF-8 bytes, so
        # comparing str directly gives DynamoDB's byte order without encoding.
        x: Any = a["S"]
        y: Any = b["S"]
    elif ta == "N":
        x = Decimal(a["N"])
        y = Decimal(b["N"])
    elif ta == "B":
        x = b64_bytes(a["B"])
        y = b64_bytes(b["B"])
    else:
        return None
    if x < y:
        return -1
    return 1 if x > y else 0


def ordered(a: AttributeValue, op: str, b: AttributeValue) -> bool:
    """`a op b` for op in = < <= > >=, by `compare`: false for values that do not order."""
    order = compare(a, b)
    if order is None:
        return False
    if op == "=":
        return order == 0
    if op == "<":
        return order < 0
    if op == "<=":
        return order <= 0
    if op == ">":
        return order > 0
    return order >= 0


def _number_key(text: str) -> Decimal:
    # Normalised so that 1, 1.0 and 10E-1 are one set member.
    return Decimal(text).normalize(CONTEXT)


def values_equal(a: AttributeValue, b: AttributeValue) -> bool:
    """DynamoDB equality: numbers by value, sets as sets, M and L deeply."""
    ta = value_type(a)
    if ta != value_type(b):
        return False
    x = a[ta]
    y = b[ta]
    if ta == "S" or ta == "BOOL" or ta == "NULL":
        return bool(x == y)
    if ta == "N":
        return x == y or Decimal(x) == Decimal(y)
    if ta == "B":
        return x == y or b64_bytes(x) == b64_bytes(y)
    if ta == "SS":
        return len(x) == len(y) and set(x) == set(y)
    if ta == "NS":
        return len(x) == len(y) and {_number_key(n) for n in x} == {_number_key(n) for n in y}
    if ta == "BS":
        return len(x) == len(y) and {b64_bytes(v) for v in x} == {b64_bytes(v) for v in y}
    if ta == "L":
        return len(x) == len(y) and all(values_equal(p, q) for p, q in zip(x, y, strict=True))
    if ta == "M":
        if x.keys() != y.keys():
            return False
        return all(values_equal(v, y[k]) for k, v in x.items())
    return bool(x == y)


def set_contains(av: AttributeValue, element: AttributeValue) -> bool:
    """Whether a set value (SS/NS/BS) holds `element` (a scalar of the member type)."""
    ts = value_type(av)
    te = value_type(element)
    if ts != te + "S" or te not in ("S", "N", "B"):
        return False
    members = av[ts]
    needle = element[te]
    if needle in members:
        return True
    if te == "N":
        key = _number_key(needle)
        return any(_number_key(m) == key for m in members)
    if te == "B":
        raw = b64_bytes(needle)
        return any(b64_bytes(m) == raw for m in members)
    return False


# --- sizes ---------------------------------------------------------------------------


def number_size(text: str) -> int:
    """Bytes DynamoDB charges for a number.

    DynamoDB stores a number as base-100 digit pairs aligned on the decimal point, plus
    one byte of exponent, plus one terminator byte for negatives; zero takes one byte.
    So the count of pairs depends on both the significant digits and the parity of the
    exponent (1.2 needs the pairs 01|20, 12 needs only 12).
    """
    value = Decimal(text)
    if value.is_zero():
        return 1
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    ndigits = len(digits)
    # Strip trailing zeros of the coefficient without renormalising the whole Decimal.
    trailing = 0
    while trailing < ndigits - 1 and digits[ndigits - 1 - trailing] == 0:
        trailing += 1
    leading = 0
    while leading < ndigits - 1 and digits[leading] == 0:
        leading += 1
    significant = ndigits - trailing - leading
    adjusted = value.adjusted()
    pairs = (significant + (1 if adjusted % 2 == 0 else 0) + 1) // 2
    return 1 + pairs + (1 if sign else 0)


def _binary_size(text: str) -> int:
    # Decoded length from the base64 text alone; no need to allocate the bytes.
    n = len(text)
    if n == 0:
        return 0
    padding = 2 if text.endswith("==") else 1 if text.endswith("=") else 0
    if n % 4 == 0:
        return n // 4 * 3 - padding
    return len(b64_bytes(text))


def value_size(av: AttributeValue) -> int:
    """Bytes a value contributes to its item's size (excluding its attribute name)."""
    for t, v in av.items():
        if t == "S":
            return len(v.encode("utf-8")) if not v.isascii() else len(v)
        if t == "N":
            return number_size(v)
        if t == "B":
            return _binary_size(v)
        if t == "BOOL" or t == "NULL":
            return 1
        if t == "M":
            # 3 bytes for the map itself, 1 per entry, then names and values.
            return 3 + sum(1 + _name_size(k) + value_size(e) for k, e in v.items())
        if t == "L":
            return 3 + sum(1 + value_size(e) for e in v)
        if t == "SS":
            return sum(len(s.encode("utf-8")) for s in v)
        if t == "NS":
            return sum(number_size(s) for s in v)
        if t == "BS":
            return sum(_binary_size(s) for s in v)
        raise ValueError(f"unknown attribute type {t!r}")
    raise ValueError("empty attribute value")


def _name_size(name: str) -> int:
    return len(name) if name.isascii() else len(name.encode("utf-8"))


def attribute_size(name: str, av: AttributeValue) -> int:
    """Bytes of one top-level attribute: its UTF-8 name plus its value."""
    return _name_size(name) + value_size(av)


def item_size(item: Item) -> int:
    """An item's size as DynamoDB computes it for the 400 KB limit and capacity units."""
    return sum(_name_size(name) + value_size(av) for name, av in item.items())


# What one item counts toward a Query's or Scan's 1 MB page is not its size (item_size)
# but that of its encoding in storage, as dynalite measured DynamoDB's pages to the byte
# (its tests "should return one less than all if just over limit" and their neighbours,
# run against DynamoDB): each top-level name one byte, each value with a length prefix,
# the sort key's value set apart, and per 3 KB of the item a header of 18 bytes plus
# that sort key value.
PAGE_CHUNK_BYTES = 3072
PAGE_CHUNK_HEADER_BYTES = 18


def sizes(item: Item, sort_key: str | None) -> tuple[int, int]:
    """An item's size (item_size) and the bytes it counts toward a Query's or Scan's 1 MB
    page, in one pass: a Query or Scan needs both for every item it reads."""
    size = body = sort = 0
    for name, av in item.items():
        value, stored = _value_sizes(av)
        size += _name_size(name) + value
        if name == sort_key:
            sort = value
        else:
            body += 1 + stored
    return size, 2 + body + (1 + (1 + body) // PAGE_CHUNK_BYTES) * (PAGE_CHUNK_HEADER_BYTES + sort)


def _value_sizes(av: AttributeValue) -> tuple[int, int]:
    """A value's size in its item's size, and in its stored encoding (length prefixes)."""
    for t, v in av.items():
        if t == "S":
            n = len(v) if v.isascii() else len(v.encode("utf-8"))
            return n, n + (1 if n < 128 else 2 if n < 16384 else 3)
        if t == "N" or t == "B":
            n = number_size(v) if t == "N" else _binary_size(v)
            return n, n + 1
        if t == "BOOL":
            return 1, 1
        if t == "NULL":
            return 1, 0
        if t == "SS" or t == "NS" or t == "BS":
            n = value_size(av)
            return n, n + len(v) + 1
        if t == "L":
            value = stored = 3
            for e in v:
                a, b = _value_sizes(e)
                value += 1 + a
                stored += 1 + b
            return value, stored
        if t == "M":
            value = 3
            stored = 3 + len(v)
            for k, e in v.items():
                a, b = _value_sizes(e)
                value += 1 + _name_size(k) + a
                stored += 1 + b
            return value, stored
        raise ValueError(f"unknown attribute type {t!r}")
    raise ValueError("empty attribute value")
