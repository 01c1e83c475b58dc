"""Evaluating conditions and filters against items with DynamoDB's semantics."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from partita.api.expressions import evaluate, resolve_request

ITEM: dict[str, Any] = {
    "pk": {"S": "p"},
    "n": {"N": "5"},
    "s": {"S": "hello"},
    "u": {"S": "héllo"},
    "b": {"B": base64.b64encode(b"\x01\x02\x03").decode()},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "lst": {"L": [{"N": "1"}, {"S": "two"}, {"M": {"x": {"N": "3"}}}]},
    "mp": {"M": {"inr": {"M": {"deep": {"S": "d"}}}, "k": {"N": "7"}}},
    "dotted.name": {"S": "dot"},
}

VALUES: dict[str, Any] = {
    ":0": {"N": "0"},
    ":1": {"N": "1"},
    ":5": {"N": "5.0"},
    ":6": {"N": "6"},
    ":hello": {"S": "hello"},
    ":he": {"S": "he"},
    ":a": {"S": "a"},
    ":two": {"S": "two"},
    ":b12": {"B": base64.b64encode(b"\x01\x02").decode()},
    ":b2": {"B": base64.b64encode(b"\x02").decode()},
    ":true": {"BOOL": True},
    ":N": {"S": "N"},
    ":SS": {"S": "SS"},
    ":d": {"S": "d"},
    ":list1": {"L": [{"N": "1"}]},
}


def check(expression: str, item: dict[str, Any] | None = ITEM) -> bool:
    placeholders = set(re.findall(r":[A-Za-z0-9_]+", expression))
    used_values = {k: v for k, v in VALUES.items() if k in placeholders}
    names = {"#dn": "dotted.name"} if "#dn" in expression else None
    resolved = resolve_request(condition=expression, names=names, values=used_values or None)
    assert resolved.condition is not None
    return evaluate(resolved.condition, item)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("n = :5", True),  # numbers compare by value: 5 = 5.0
        ("n <> :5", False),
        ("n < :6", True),
        ("n <= :5", True),
        ("n > :6", False),
        ("n >= :5", True),
        ("s = :hello", True),
        ("s > :he", True),
        ("n = :hello", False),  # type mismatch is false, not an error
        ("n < :hello", False),
        ("n <> :hello", True),
        ("absent = :1", False),
        ("absent <> :1", True),  # <> is the negation of =
        ("absent < :1", False),
        ("flag = :true", True),
        ("lst[0] = :1", True),
        ("lst[1] = :two", True),
        ("lst[2].x = mp.k", False),
        ("lst[9] = :1", False),
        ("mp.inr.deep = :d", True),
        ("mp.k > lst[2].x", True),
        ("#dn = :d", False),
        ("n BETWEEN :1 AND :6", True),
        ("n BETWEEN :6 AND :6", False),
        ("s BETWEEN :1 AND :6", False),
        ("n IN (:0, :5)", True),
        ("n IN (:0, :hello)", False),
        ("absent IN (:0)", False),
    ],
)
def test_comparisons(expression: str, expected: bool) -> None:
    assert check(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("attribute_exists(n)", True),
        ("attribute_exists(mp.inr.deep)", True),
        ("attribute_exists(mp.inr.nope)", False),
        ("attribute_exists(lst[2].x)", True),
        ("attribute_exists(n.x)", False),
        ("attribute_not_exists(nope)", True),
        ("attribute_not_exists(nothing)", False),  # NULL is a value
        ("attribute_type(n, :N)", True),
        ("attribute_type(ss, :SS)", True),
        ("attribute_type(s, :N)", False),
        ("begins_with(s, :he)", True),
        ("begins_with(s, :hello)", True),
        ("begins_with(n, :he)", False),
        ("begins_with(b, :b12)", True),
        ("begins_with(b, :b2)", False),
        ("contains(s, :he)", True),
        ("contains(ss, :a)", True),
        ("contains(ss, :he)", False),
        ("contains(ns, :1)", True),
        ("contains(lst, :two)", True),
        ("contains(lst, :list1)", False),
        ("contains(b, :b2)", True),
        ("contains(n, :1)", False),
    ],
)
def test_functions(expression: str, expected: bool) -> None:
    assert check(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("size(s) = :5", True),
        ("size(u) = :5", True),  # characters, not UTF-8 bytes
        ("size(b) > :1", True),
        ("size(ss) = :1", False),
        ("size(lst) > :1", True),
        ("size(mp) > :1", True),
        ("size(n) > :0", False),  # numbers have no size: the comparison is false
        ("size(n) <> :0", True),
        ("size(flag) = :1", False),
        ("size(nope) = :0", False),
    ],
)
def test_size(expression: str, expected: bool) -> None:
    assert check(expression) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("n = :5 AND s = :hello", True),
        ("n = :5 AND s = :he", False),
        ("n = :0 OR s = :hello", True),
        ("NOT n = :5", False),
        ("NOT n = :0 AND s = :he", False),  # NOT binds to the first comparison only
        ("NOT (n = :0 AND s = :he)", True),
        ("n = :0 AND s = :he OR n = :5", True),  # AND before OR
        ("n = :0 AND (s = :he OR n = :5)", False),
    ],
)
def test_boolean_operators_and_precedence(expression: str, expected: bool) -> None:
    assert check(expression) is expected


def test_a_missing_item_satisfies_only_absence_conditions() -> None:
    assert check("attribute_not_exists(pk)", None)
    assert not check("attribute_exists(pk)", None)
    assert not check("pk = :a", None)
