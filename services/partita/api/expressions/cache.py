"""An LRU cache of parsed expressions, keyed by grammar and expression text.

Applications send the same few expression texts over and over with different
ExpressionAttributeValues, so parsing once per distinct text takes the parser off the
hot path. Raw trees are immutable and hold no placeholder values, so one cached tree
serves every request. Failed parses are not cached: they are rare and must still
raise every time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from partita.api.expressions import ast, parser

T = TypeVar("T")

DEFAULT_MAX_ENTRIES = 4096  # distinct expression texts kept; a few MB at most


class ParseCache:
    """Least-recently-used map from (grammar kind, text, limits held) to a parsed tree."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str, bool], object] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, kind: str, text: str, parse: Callable[[str, str, bool], T], limited: bool = True) -> T:
        key = (kind, text, limited)
        entries = self._entries
        tree = entries.get(key)
        if tree is not None:
            self.hits += 1
            entries.move_to_end(key)
            return tree  # type: ignore[return-value]  # stored by this method under this key
        self.misses += 1
        parsed = parse(text, kind, limited)
        entries[key] = parsed
        if len(entries) > self.max_entries:
            entries.popitem(last=False)
        return parsed

    def clear(self) -> None:
        self._entries.clear()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


CACHE = ParseCache()


def condition(text: str, kind: str, limited: bool = True) -> ast.Condition:
    """A ConditionExpression, FilterExpression or KeyConditionExpression.

    The kind is part of the key because error messages name it; the trees are equal.
    `limited=False` for a translation of legacy parameters (`parser.parse_condition`).
    """
    return CACHE.get(kind, text, parser.parse_condition, limited)


def update(text: str, limited: bool = True) -> ast.Update:
    return CACHE.get("UpdateExpression", text, parser.parse_update, limited)


def projection(text: str, limited: bool = True) -> ast.Projection:
    return CACHE.get("ProjectionExpression", text, parser.parse_projection, limited)
