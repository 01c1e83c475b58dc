"""Apply a ProjectionExpression (or any list of document paths) to an item.

DynamoDB's result keeps the structure of nested paths: `a.b, a.c[2]` on an item yields
`{"a": {"M": {"b": ..., "c": {"L": [...]}}}}`. Elements taken from one list come back
compacted, in index order, whatever order the paths were written in. Paths that name
nothing in the item are left out; an item with none of the paths projects to `{}`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from partita.api.expressions import ast
from partita.api.expressions.paths import ResolvedPath, get_value
from partita.api.values import AttributeValue, Item


def project(item: Item, projection: ast.Projection) -> Item:
    """The attributes of `item` a resolved projection asks for, in DynamoDB's shape."""
    return project_paths(item, (p.elements for p in projection.paths))


def project_paths(item: Item, paths: Iterable[ResolvedPath]) -> Item:
    """The values at `paths`, nested as in the item. The paths must not overlap."""
    result: dict[str, Any] = {}
    for path in paths:
        value = get_value(item, path)
        if value is None:
            continue
        name = path[0]
        assert isinstance(name, str)
        if len(path) == 1:
            result[name] = value
            continue
        node = result.get(name)
        if not isinstance(node, _Skeleton):
            node = result[name] = _Skeleton()
        for element in path[1:-1]:
            child = node.get(element)
            if not isinstance(child, _Skeleton):
                child = node[element] = _Skeleton()
            node = child
        node[path[-1]] = value
    return {name: v.finish() if isinstance(v, _Skeleton) else v for name, v in result.items()}


class _Skeleton(dict[ast.PathElement, Any]):
    """A container under construction: name keys for a map, index keys for a list."""

    def finish(self) -> AttributeValue:
        children = {k: v.finish() if isinstance(v, _Skeleton) else v for k, v in self.items()}
        if all(isinstance(k, int) for k in children):
            return {"L": [children[k] for k in sorted(children)]}
        return {"M": children}
