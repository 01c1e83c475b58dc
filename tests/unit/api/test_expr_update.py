"""Applying UpdateExpressions: documented examples, and a reference model for random updates."""

from __future__ import annotations

import copy
from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partita.api.expressions import apply_update, modified_attributes, resolve_request
from partita.api.expressions.update import UpdateResult
from partita.common.errors import DynamoError

MISSING = "The provided expression refers to an attribute that does not exist in the item"
BAD_TYPE = "An operand in the update expression has an incorrect data type"
BAD_PATH = "The document path provided in the update expression is invalid for update"


def n(x: int | str) -> dict[str, str]:
    return {"N": str(x)}


def s(x: str) -> dict[str, str]:
    return {"S": x}


def run(
    expression: str,
    item: dict[str, Any] | None,
    values: dict[str, Any] | None = None,
    names: dict[str, str] | None = None,
) -> UpdateResult:
    resolved = resolve_request(update=expression, values=values, names=names)
    assert resolved.update is not None
    before = copy.deepcopy(item)
    result = apply_update(resolved.update, item)
    assert item == before, "apply_update modified its input"
    return result


def fails(expression: str, item: dict[str, Any] | None, values: dict[str, Any] | None = None) -> str:
    with pytest.raises(DynamoError) as info:
        run(expression, item, values)
    return info.value.message


# --- SET ------------------------------------------------------------------------------------


def test_set_creates_and_replaces_attributes_keeping_the_rest() -> None:
    result = run("SET b = :v, a = :w", {"p": s("k"), "a": s("hi")}, {":v": s("hello"), ":w": s("hey")})
    assert result.item == {"p": s("k"), "a": s("hey"), "b": s("hello")}


def test_set_on_a_missing_item_creates_it() -> None:
    assert run("SET a = :v", None, {":v": n(1)}).item == {"a": n(1)}


def test_set_copies_another_attribute_read_before_any_write() -> None:
    item = {"a": s("hello")}
    assert run("REMOVE a SET b = a", item).item == {"b": s("hello")}
    assert fails("SET x = :v, y = x", item, {":v": n(4)}) == MISSING
    assert fails("SET c = z", item) == MISSING


def test_set_arithmetic_and_if_not_exists() -> None:
    item = {"a": n(2), "b": n(10)}
    assert run("SET a = a + :v", item, {":v": n(3)}).item["a"] == n(5)
    assert run("SET a = :v - a", item, {":v": n(7)}).item["a"] == n(5)
    assert run("SET c = b + a", item).item["c"] == n(12)
    assert run("SET c = :x + :y", {}, {":x": n("0.1"), ":y": n("0.2")}).item["c"] == n("0.3")
    assert run("SET a = if_not_exists(a, :v)", item, {":v": n(9)}).item["a"] == n(2)
    assert run("SET z = if_not_exists(z, :v) + :v", item, {":v": n(9)}).item["z"] == n(18)
    assert fails("SET c = absent + :v", item, {":v": n(1)}) == MISSING
    assert fails("SET c = s + :v", {"s": s("x")}, {":v": n(1)}) == BAD_TYPE


def test_arithmetic_results_respect_number_limits() -> None:
    assert fails("SET a = :x + :x", {}, {":x": n("9" + "0" * 125)}).startswith("Number overflow")
    # A sum that needs a 39th digit is reported as an overflow by DynamoDB, not as
    # "more than 38 significant digits" (what PutItem says for such a number).
    assert fails("SET a = :x + :x", {}, {":x": n("9" * 38)}).startswith("Number overflow")
    assert fails("SET a = :x - :y", {}, {":x": n("1e50"), ":y": n(1)}).startswith("Number overflow")


def test_list_append_concatenates_lists_and_rejects_other_types() -> None:
    item = {"a": {"L": [s("hi"), n(2)]}, "x": n(1)}
    result = run("SET a = list_append(a, :v), b = list_append(:v, a)", item, {":v": {"L": [n(4)]}})
    assert result.item["a"] == {"L": [s("hi"), n(2), n(4)]}
    assert result.item["b"] == {"L": [n(4), s("hi"), n(2)]}
    assert fails("SET c = list_append(x, :v)", item, {":v": {"L": []}}) == BAD_TYPE
    assert fails("SET c = list_append(nope, :v)", item, {":v": {"L": []}}) == MISSING


def test_set_nested_map_entry_and_list_element() -> None:
    item = {"a": {"M": {"b": n(3), "c": {"L": [s("hi"), {"M": {"x": {"M": {"y": {"L": [n(3), n(5)]}}}}}]}}}}
    result = run("SET a.c[1].#n.y[1] = :v, a.d = :w", item, {":v": n(9), ":w": n(1)}, {"#n": "x"})
    assert result.item == {
        "a": {
            "M": {
                "b": n(3),
                "c": {"L": [s("hi"), {"M": {"x": {"M": {"y": {"L": [n(3), n(9)]}}}}}]},
                "d": n(1),
            }
        }
    }


def test_set_past_the_end_of_a_list_appends_in_index_order() -> None:
    item = {"a": {"L": [s("one"), s("two"), s("three")]}}
    result = run(
        "SET a[84] = :a1, a[37] = :a2, a[17] = :a3, a[50] = :a4",
        item,
        {":a1": s("a1"), ":a2": s("a2"), ":a3": s("a3"), ":a4": s("a4")},
    )
    assert result.item["a"]["L"][3:] == [s("a3"), s("a2"), s("a4"), s("a1")]


@pytest.mark.parametrize(
    "expression",
    ["SET a.c = :v", "SET b.c = :v", "SET c.c = :v", "SET a[0] = :v", "SET m[0] = :v", "SET l.x = :v"],
)
def test_set_through_a_missing_or_mistyped_container_is_invalid(expression: str) -> None:
    item = {"a": s("hello"), "b": {"L": [s("hi")]}, "m": {"M": {}}, "l": {"L": []}}
    assert fails(expression, item, {":v": n(7)}) == BAD_PATH


def test_nested_set_on_a_missing_item_is_invalid() -> None:
    assert fails("SET c.c = :v", None, {":v": n(7)}) == BAD_PATH


# --- REMOVE -----------------------------------------------------------------------------------


def test_remove_nested_attributes_and_list_elements() -> None:
    item = {
        "a": {
            "M": {
                "b": n(3),
                "c": {"L": [s("hi"), {"M": {"x": {"M": {"y": {"L": [n(3), n(5), n(7)]}}}, "q": n(2)}}]},
            }
        }
    }
    result = run("REMOVE a.c[1].x.y[1], a.c[1].q", item)
    assert result.item == {
        "a": {"M": {"b": n(3), "c": {"L": [s("hi"), {"M": {"x": {"M": {"y": {"L": [n(3), n(7)]}}}}}]}}}
    }


def test_list_indexes_refer_to_positions_before_the_update() -> None:
    item = {"a": {"L": [n(2), n(3), n(4), n(5), n(6), n(7)]}}
    expected = {"L": [n(2), n(4), n(17), n(6), n(7)]}
    assert run("REMOVE a[1] SET a[3] = :v", item, {":v": n(17)}).item["a"] == expected
    assert run("SET a[3] = :v REMOVE a[1]", item, {":v": n(17)}).item["a"] == expected
    assert run("REMOVE a[0], a[2], a[4]", item).item["a"] == {"L": [n(3), n(5), n(7)]}


def test_removing_what_is_not_there_does_nothing() -> None:
    item = {"a": {"M": {"x": n(3)}}, "b": {"L": [s("hi")]}}
    for expression in ("REMOVE a.y", "REMOVE b[7]", "REMOVE c"):
        assert run(expression, item).item == item


def test_removing_the_last_member_leaves_an_empty_container() -> None:
    assert run("REMOVE a.b", {"a": {"M": {"b": n(1)}}}).item == {"a": {"M": {}}}
    assert run("REMOVE a[0]", {"a": {"L": [n(1)]}}).item == {"a": {"L": []}}


@pytest.mark.parametrize(
    "expression", ["REMOVE a.c", "REMOVE b.c", "REMOVE c.c", "REMOVE a[0]", "REMOVE m[0]"]
)
def test_remove_through_a_missing_or_mistyped_container_is_invalid(expression: str) -> None:
    item = {"a": s("hello"), "b": {"L": [s("hi")]}, "m": {"M": {}}}
    assert fails(expression, item) == BAD_PATH


def test_remove_on_a_missing_item_does_nothing() -> None:
    assert run("REMOVE x.y, z[0]", None).item == {}


# --- ADD and DELETE -------------------------------------------------------------------------


def test_add_numbers_and_create_missing_numbers() -> None:
    item = {"a": n(3), "b": s("hi")}
    assert run("ADD a :v, c :v", item, {":v": n(4)}).item == {"a": n(7), "b": s("hi"), "c": n(4)}
    assert fails("ADD b :v", item, {":v": n(1)}) == BAD_TYPE


def test_add_to_sets_is_a_union_and_creates_missing_sets() -> None:
    item = {"a": {"SS": ["beaver", "lynx", "coati"]}, "ns": {"NS": ["1", "2"]}}
    result = run(
        "ADD a :v, b :w, ns :ns",
        item,
        {":v": {"SS": ["coati", "beaver", "badger"]}, ":w": {"SS": ["dog"]}, ":ns": {"NS": ["2.0", "3"]}},
    )
    assert result.item["a"] == {"SS": ["beaver", "lynx", "coati", "badger"]}
    assert result.item["b"] == {"SS": ["dog"]}
    assert result.item["ns"] == {"NS": ["1", "2", "3"]}
    assert fails("ADD a :v", item, {":v": {"NS": ["1"]}}) == BAD_TYPE
    assert fails("ADD a :v", {"a": {"L": [n(1)]}}, {":v": {"NS": ["1"]}}) == BAD_TYPE


def test_delete_from_sets_and_drop_emptied_sets() -> None:
    item = {"p": s("k"), "a": {"SS": ["dog", "cat", "mouse"]}, "b": s("hi")}
    assert run("DELETE a :v", item, {":v": {"SS": ["cat", "mouse"]}}).item["a"] == {"SS": ["dog"]}
    assert run("DELETE a :v", item, {":v": {"SS": ["pig"]}}).item == item
    assert run("DELETE a :v", item, {":v": {"SS": ["dog", "cat", "mouse"]}}).item == {
        "p": s("k"),
        "b": s("hi"),
    }
    assert run("DELETE z :v", item, {":v": {"SS": ["dog"]}}).item == item
    assert fails("DELETE a :v", item, {":v": {"NS": ["1"]}}) == BAD_TYPE
    assert fails("DELETE b :v", item, {":v": {"SS": ["h"]}}) == BAD_TYPE


def test_add_and_delete_need_the_parent_container() -> None:
    assert fails("ADD y.a :v", {"b": n(1)}, {":v": n(1)}) == BAD_PATH
    assert fails("DELETE y.a :v", {"b": n(1)}, {":v": {"SS": ["a"]}}) == BAD_PATH


# --- what the caller learns -------------------------------------------------------------------


def test_updated_old_and_new_project_the_acted_on_paths() -> None:
    item = {"p": s("k"), "a": {"M": {"b": s("dog"), "c": {"L": [n(1), n(2), n(3)]}}}, "d": s("cat")}
    result = run("SET a.c[1] = :v, a.b = :w", item, {":v": n(8), ":w": s("yo")})
    assert result.updated_old(item) == {"a": {"M": {"b": s("dog"), "c": {"L": [n(2)]}}}}
    assert result.updated_new() == {"a": {"M": {"b": s("yo"), "c": {"L": [n(8)]}}}}
    added = run("SET a.x1 = :v", item, {":v": n(8)})
    assert added.updated_old(item) == {}
    assert added.updated_new() == {"a": {"M": {"x1": n(8)}}}
    appended = run("SET a.c[100] = :v", item, {":v": n(70)})
    assert appended.updated_new() == {}  # DynamoDB does not report an append either
    removed = run("REMOVE a.c[1], a.c[3]", item)
    assert removed.updated_old(item) == {"a": {"M": {"c": {"L": [n(2)]}}}}
    assert removed.updated_new() == {"a": {"M": {"c": {"L": [n(3)]}}}}


def test_modified_attributes_names_top_level_attributes_for_key_checks() -> None:
    resolved = resolve_request(
        update="SET a.b = :v, c = :v REMOVE d[1] ADD #e :v", names={"#e": "e"}, values={":v": n(1)}
    )
    assert resolved.update is not None
    assert modified_attributes(resolved.update) == {"a", "c", "d", "e"}


# --- random updates against a reference model -------------------------------------------------
#
# The reference applies an update the obvious way on a marked copy of the item: every
# list element is tagged with its original position, SET/REMOVE address elements by
# tag, appends are kept aside and placed after the existing elements in index order.
# No sorting tricks, no in-place index arithmetic.


class _RefError(Exception):
    pass


def _mark(value: Any) -> Any:
    if "M" in value:
        return {"M": {k: _mark(v) for k, v in value["M"].items()}}
    if "L" in value:
        return {"L*": [[i, _mark(v)] for i, v in enumerate(value["L"])], "appends": []}
    return value


def _unmark(value: Any) -> Any:
    if "M" in value:
        return {"M": {k: _unmark(v) for k, v in value["M"].items()}}
    if "L*" in value:
        existing = [_unmark(v) for _, v in value["L*"]]
        appended = [_unmark(v) for _, v in sorted(value["appends"], key=lambda e: e[0])]
        return {"L": existing + appended}
    return value


def _ref_get(item: dict[str, Any] | None, path: tuple[Any, ...]) -> Any:
    node: Any = {"M": item or {}}
    for element in path:
        if isinstance(element, str):
            node = node.get("M", {}).get(element) if "M" in node else None
        else:
            node = node["L"][element] if "L" in node and element < len(node["L"]) else None
        if node is None:
            return None
    return node


def _ref_parent(work: dict[str, Any], path: tuple[Any, ...]) -> Any:
    node: Any = {"M": work}
    for element in path[:-1]:
        if isinstance(element, str):
            node = node["M"].get(element) if "M" in node else None
        else:
            found = [v for i, v in node.get("L*", []) if i == element]
            node = found[0] if found else None
        if node is None:
            raise _RefError(BAD_PATH)
    last = path[-1]
    if (isinstance(last, str) and "M" not in node) or (isinstance(last, int) and "L*" not in node):
        raise _RefError(BAD_PATH)
    return node


def _ref_put(work: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    parent = _ref_parent(work, path)
    last = path[-1]
    if isinstance(last, str):
        parent["M"][last] = _mark(value)
        return
    for entry in parent["L*"]:
        if entry[0] == last:
            entry[1] = _mark(value)
            return
    parent["appends"].append((last, _mark(value)))


def _ref_current(work: dict[str, Any], path: tuple[Any, ...]) -> Any:
    parent = _ref_parent(work, path)
    last = path[-1]
    if isinstance(last, str):
        found = parent["M"].get(last)
    else:
        matches = [v for i, v in parent["L*"] if i == last]
        found = matches[0] if matches else None
    return _unmark(found) if found is not None else None


def _ref_remove(work: dict[str, Any], path: tuple[Any, ...]) -> None:
    parent = _ref_parent(work, path)
    last = path[-1]
    if isinstance(last, str):
        parent["M"].pop(last, None)
    else:
        parent["L*"] = [e for e in parent["L*"] if e[0] != last]


def _ref_number(text: str) -> Decimal:
    return Decimal(text)


def _ref_format(number: Decimal) -> str:
    with localcontext() as context:
        context.prec = 100
        return "0" if number.is_zero() else format(number.normalize(), "f")


def _ref_value(spec: Any, old: dict[str, Any] | None) -> Any:
    kind = spec[0]
    if kind == "value":
        return spec[1]
    if kind == "path":
        found = _ref_get(old, spec[1])
        if found is None:
            raise _RefError(MISSING)
        return found
    if kind == "plus":
        base = _ref_value(("path", spec[1]), old)
        if "N" not in base:
            raise _RefError(BAD_TYPE)
        return {"N": _ref_format(_ref_number(base["N"]) + _ref_number(spec[2]["N"]))}
    if kind == "if_not_exists":
        found = _ref_get(old, spec[1])
        return found if found is not None else spec[2]
    assert kind == "list_append"
    base = _ref_value(("path", spec[1]), old)
    if "L" not in base:
        raise _RefError(BAD_TYPE)
    return {"L": base["L"] + spec[2]["L"]}


def _set_key(kind: str, member: str) -> Any:
    return _ref_number(member) if kind == "NS" else member


def _reference(actions: list[tuple[str, tuple[Any, ...], Any]], item: dict[str, Any] | None) -> Any:
    """The expected item, or the expected error message."""
    try:
        rhs = [_ref_value(spec, item) if clause == "SET" else None for clause, _, spec in actions]
        work = {k: _mark(v) for k, v in (item or {}).items()}
        emptied: list[tuple[Any, ...]] = []
        for (clause, path, spec), value in zip(actions, rhs, strict=True):
            if clause == "SET":
                _ref_put(work, path, value)
            elif clause == "ADD":
                current = _ref_current(work, path)
                if current is None:
                    _ref_put(work, path, spec)
                elif "N" in current and "N" in spec:
                    _ref_put(
                        work, path, {"N": _ref_format(_ref_number(current["N"]) + _ref_number(spec["N"]))}
                    )
                elif ("SS" in current and "SS" in spec) or ("NS" in current and "NS" in spec):
                    kind = "SS" if "SS" in spec else "NS"
                    members = list(current[kind])
                    for member in spec[kind]:
                        if _set_key(kind, member) not in {_set_key(kind, m) for m in members}:
                            members.append(member)
                    _ref_put(work, path, {kind: members})
                else:
                    raise _RefError(BAD_TYPE)
            elif clause == "DELETE":
                current = _ref_current(work, path)
                if current is None:
                    continue
                kind = "SS" if "SS" in spec else "NS"
                if kind not in current:
                    raise _RefError(BAD_TYPE)
                gone = {_set_key(kind, m) for m in spec[kind]}
                left = [m for m in current[kind] if _set_key(kind, m) not in gone]
                if left:
                    _ref_put(work, path, {kind: left})
                else:
                    emptied.append(path)
        if item is not None:
            for clause, path, _ in actions:
                if clause == "REMOVE":
                    _ref_remove(work, path)
            for path in emptied:
                _ref_remove(work, path)
        return {k: _unmark(v) for k, v in work.items()}
    except _RefError as error:
        return str(error)


_NAMES = ["a", "b", "c", "m", "l", "zz"]
_CANDIDATE_PATHS: list[tuple[Any, ...]] = [
    ("a",), ("b",), ("c",), ("m",), ("l",), ("zz",),
    ("m", "x"), ("m", "y"), ("m", "sb"), ("m", "sb", "q"),
    ("l", 0), ("l", 1), ("l", 2), ("l", 4), ("l", 6), ("l", 1, "q"), ("l", 0, 1),
    ("zz", "q"), ("a", "q"), ("b", 0),
]  # fmt: skip

_scalars = st.one_of(
    st.integers(-5, 5).map(n),
    st.sampled_from(["x", "y"]).map(s),
    st.sampled_from([["a"], ["a", "b"], ["c"]]).map(lambda m: {"SS": m}),
    st.sampled_from([["1"], ["1", "2"], ["3"]]).map(lambda m: {"NS": m}),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.sampled_from(["q", "x", "y", "sb"]), inner, max_size=3).map(lambda v: {"M": v}),
    ),
    max_leaves=6,
)


def _map(entries: dict[str, Any]) -> dict[str, Any]:
    return {"M": entries}


def _list(elements: list[Any]) -> dict[str, Any]:
    return {"L": elements}


# Mostly items shaped like the candidate paths expect, so that updates succeed often
# enough to compare results and not only error messages.
_shaped_items = st.fixed_dictionaries(
    {
        "a": _scalars,
        "m": st.fixed_dictionaries(
            {},
            optional={
                "x": _values,
                "y": st.integers(0, 9).map(n),
                "sb": st.fixed_dictionaries({}, optional={"q": _scalars}).map(_map),
            },
        ).map(_map),
        "l": st.lists(
            st.one_of(
                _scalars,
                st.fixed_dictionaries({"q": _scalars}).map(_map),
                st.lists(_scalars, min_size=2, max_size=3).map(_list),
            ),
            min_size=2,
            max_size=7,
        ).map(_list),
    },
    optional={"b": _values, "c": st.integers(-9, 9).map(n), "zz": _values},
)
_items = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(_NAMES), _values, max_size=6), _shaped_items, _shaped_items
)


def _overlaps(one: tuple[Any, ...], two: tuple[Any, ...]) -> bool:
    for x, y in zip(one, two, strict=False):
        if isinstance(x, int) is not isinstance(y, int):
            return True  # a conflict: rejected before evaluation, not what this test is about
        if x != y:
            return False
    return True


_LIST_PATHS: list[tuple[Any, ...]] = [("l", i) for i in range(7)] + [
    ("l", 1, "q"),
    ("l", 2, 0),
    ("l", 3, "q"),
]
_LIKELY_SOURCES: list[tuple[Any, ...]] = [("a",), ("m",), ("l",), ("l", 0), ("m", "y"), ("c",), ("m", "x")]


@st.composite
def _updates(draw: st.DrawFn) -> list[tuple[str, tuple[Any, ...], Any]]:
    # Half the updates work on one list, where index bookkeeping is easiest to get wrong.
    pool = draw(st.sampled_from([_CANDIDATE_PATHS, _LIST_PATHS]))
    chosen: list[tuple[Any, ...]] = []
    for path in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5)):
        if not any(_overlaps(path, other) for other in chosen):
            chosen.append(path)
    actions = []
    for path in chosen:
        clause = draw(st.sampled_from(["SET", "SET", "REMOVE", "REMOVE", "ADD", "DELETE"]))
        if clause == "SET":
            source = draw(st.sampled_from(_LIKELY_SOURCES + _CANDIDATE_PATHS))
            spec = draw(
                st.one_of(
                    _values.map(lambda v: ("value", v)),
                    st.just(("path", source)),
                    st.integers(-3, 3).map(lambda k, source=source: ("plus", source, n(k))),
                    _values.map(lambda v, source=source: ("if_not_exists", source, v)),
                    st.lists(_scalars, max_size=2).map(
                        lambda v, source=source: ("list_append", source, {"L": v})
                    ),
                )
            )
        elif clause == "REMOVE":
            spec = None
        elif clause == "ADD":
            spec = draw(
                st.one_of(st.integers(-3, 3).map(n), _scalars.filter(lambda v: "SS" in v or "NS" in v))
            )
        else:
            spec = draw(_scalars.filter(lambda v: "SS" in v or "NS" in v))
        actions.append((clause, path, spec))
    return actions


def _path_text(path: tuple[Any, ...]) -> str:
    text = path[0]
    for element in path[1:]:
        text += f"[{element}]" if isinstance(element, int) else f".{element}"
    return str(text)


def _expression(actions: list[tuple[str, tuple[Any, ...], Any]]) -> tuple[str, dict[str, Any]]:
    values: dict[str, Any] = {}
    clauses: dict[str, list[str]] = {}
    for i, (clause, path, spec) in enumerate(actions):
        target = _path_text(path)
        if clause == "REMOVE":
            clauses.setdefault(clause, []).append(target)
            continue
        if clause in ("ADD", "DELETE"):
            values[f":v{i}"] = spec
            clauses.setdefault(clause, []).append(f"{target} :v{i}")
            continue
        kind = spec[0]
        if kind == "value":
            values[f":v{i}"] = spec[1]
            rhs = f":v{i}"
        elif kind == "path":
            rhs = _path_text(spec[1])
        elif kind == "plus":
            values[f":v{i}"] = spec[2]
            rhs = f"{_path_text(spec[1])} + :v{i}"
        else:
            values[f":v{i}"] = spec[2]
            rhs = f"{kind}({_path_text(spec[1])}, :v{i})"
        clauses.setdefault(clause, []).append(f"{target} = {rhs}")
    text = " ".join(f"{clause} {', '.join(parts)}" for clause, parts in clauses.items())
    return text, values


def _in_expression_order(
    actions: list[tuple[str, tuple[Any, ...], Any]],
) -> list[tuple[str, tuple[Any, ...], Any]]:
    """The actions in the order the expression text lists them: clauses grouped, in order
    of first appearance. When several actions fail, the first failing one in that order
    names the error (as Alternator evaluates actions in parse order)."""
    clauses = list(dict.fromkeys(clause for clause, _, _ in actions))
    return [action for clause in clauses for action in actions if action[0] == clause]


def test_the_first_failing_action_in_expression_order_names_the_error() -> None:
    # Found by the random test below: `l[1].q` cannot be set (l[1] is not a map) and
    # `m` cannot take ADD of a number (it is a map). The SET clause comes first in the
    # text, so its error is the answer, whatever order the clauses were generated in.
    item = {"a": n(1), "m": {"M": {}}, "l": {"L": [n(0), n(1)]}}
    with pytest.raises(DynamoError) as error:
        run("SET a = :v0, l[1].q = a ADD m :v1", item, {":v0": n(2), ":v1": n(1)})
    assert error.value.message == BAD_PATH
    with pytest.raises(DynamoError) as error:
        run("ADD m :v1 SET a = :v0, l[1].q = a", item, {":v0": n(2), ":v1": n(1)})
    assert error.value.message == BAD_TYPE


@settings(max_examples=400, deadline=None)
@given(_items, _updates())
def test_random_updates_match_the_reference_model(
    item: dict[str, Any] | None, actions: list[tuple[str, tuple[Any, ...], Any]]
) -> None:
    text, values = _expression(actions)
    expected = _reference(_in_expression_order(actions), item)
    try:
        got: Any = run(text, item, values or None).item
    except DynamoError as error:
        got = error.message
    assert got == expected, text
