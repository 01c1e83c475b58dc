"""ProjectionExpression: DynamoDB's result shape for top-level and nested paths."""

from __future__ import annotations

from typing import Any

from partita.api.expressions import project, resolve_request

ITEM: dict[str, Any] = {
    "p": {"S": "k"},
    "a": {
        "M": {
            "b": {"N": "1"},
            "c": {"L": [{"S": "c0"}, {"S": "c1"}, {"M": {"x": {"N": "2"}, "y": {"N": "3"}}}]},
        }
    },
    "d": {"S": "cat"},
    "dotted.name": {"BOOL": True},
}


def projected(expression: str, names: dict[str, str] | None = None) -> dict[str, Any]:
    resolved = resolve_request(projection=expression, names=names)
    assert resolved.projection is not None
    return project(ITEM, resolved.projection)


def test_top_level_attributes_are_copied_whole() -> None:
    assert projected("p, d") == {"p": {"S": "k"}, "d": {"S": "cat"}}


def test_nested_paths_keep_their_structure() -> None:
    assert projected("a.b") == {"a": {"M": {"b": {"N": "1"}}}}
    assert projected("a.c[2].y, a.b") == {
        "a": {"M": {"c": {"L": [{"M": {"y": {"N": "3"}}}]}, "b": {"N": "1"}}}
    }


def test_list_elements_are_compacted_in_index_order() -> None:
    assert projected("a.c[2].x, a.c[0]") == {
        "a": {"M": {"c": {"L": [{"S": "c0"}, {"M": {"x": {"N": "2"}}}]}}}
    }


def test_missing_paths_are_left_out() -> None:
    assert projected("nope, a.nope, a.c[7], d.x, p[0]") == {}
    assert projected("nope, d") == {"d": {"S": "cat"}}


def test_a_name_placeholder_may_hold_a_dot() -> None:
    assert projected("#n", {"#n": "dotted.name"}) == {"dotted.name": {"BOOL": True}}
