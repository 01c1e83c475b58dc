"""Document paths over wire-format items: lookup, DynamoDB's path notation, overlaps.

A resolved path is a tuple of attribute names (str) and list indexes (int).
"""

from __future__ import annotations

from collections.abc import Sequence

from partita.api.expressions.ast import PathElement
from partita.api.values import AttributeValue, Item
from partita.common import errors

ResolvedPath = tuple[PathElement, ...]


def get_value(item: Item | None, path: ResolvedPath) -> AttributeValue | None:
    """The value at `path`, or None if any step is missing or of the wrong type."""
    if item is None:
        return None
    value = item.get(path[0])  # type: ignore[arg-type]  # the first element is a name
    for element in path[1:]:
        if value is None:
            return None
        if isinstance(element, str):
            children = value.get("M")
            if children is None:
                return None
            value = children.get(element)
        else:
            elements = value.get("L")
            if elements is None or element >= len(elements):
                return None
            value = elements[element]
    return value


def format_path(path: Sequence[PathElement]) -> str:
    """DynamoDB's notation in messages: `[a, b, [3], c]`."""
    return "[" + ", ".join(f"[{e}]" if isinstance(e, int) else e for e in path) + "]"


def check_no_overlap(paths: Sequence[ResolvedPath], kind: str) -> None:
    """Reject two paths where one is a prefix of the other, or that disagree on a type.

    Every pair is examined, and an overlap is reported in preference to a conflict
    (as DynamoDB does): `a.b` with `a[1]` conflicts (map vs list), `a` with `a.b`
    overlaps. The earlier path is "path one".
    """
    conflict: tuple[ResolvedPath, ResolvedPath] | None = None
    for j, later in enumerate(paths):
        for earlier in paths[:j]:
            relation = _relation(earlier, later)
            if relation == "overlap":
                raise errors.validation(
                    f"Invalid {kind}: Two document paths overlap with each other; must remove or "
                    f"rewrite one of these paths; path one: {format_path(earlier)}, "
                    f"path two: {format_path(later)}"
                )
            if relation == "conflict" and conflict is None:
                conflict = (earlier, later)
    if conflict is not None:
        raise errors.validation(
            f"Invalid {kind}: Two document paths conflict with each other; must remove or "
            f"rewrite one of these paths; path one: {format_path(conflict[0])}, "
            f"path two: {format_path(conflict[1])}"
        )


def _relation(one: ResolvedPath, two: ResolvedPath) -> str:
    for a, b in zip(one, two, strict=False):
        if isinstance(a, int) is not isinstance(b, int):
            return "conflict"
        if a != b:
            return "distinct"
    return "overlap"
