"""The parse cache: reuse by text, LRU eviction, no caching of failures."""

from __future__ import annotations

import pytest

from partita.api.expressions import cache
from partita.api.expressions.cache import ParseCache
from partita.api.expressions.parser import parse_condition
from partita.common.errors import DynamoError


def test_same_text_returns_the_same_tree_without_parsing_again() -> None:
    lru = ParseCache(max_entries=4)
    first = lru.get("ConditionExpression", "a = :v", parse_condition)
    second = lru.get("ConditionExpression", "a = :v", parse_condition)
    assert first is second
    assert (lru.hits, lru.misses) == (1, 1)


def test_kind_is_part_of_the_key_because_messages_name_it() -> None:
    lru = ParseCache()
    lru.get("ConditionExpression", "a = :v", parse_condition)
    lru.get("FilterExpression", "a = :v", parse_condition)
    assert lru.misses == 2


def test_least_recently_used_entry_is_evicted() -> None:
    lru = ParseCache(max_entries=2)
    lru.get("ConditionExpression", "a = :v", parse_condition)
    lru.get("ConditionExpression", "b = :v", parse_condition)
    lru.get("ConditionExpression", "a = :v", parse_condition)  # a is now the most recent
    lru.get("ConditionExpression", "c = :v", parse_condition)  # evicts b
    assert len(lru) == 2
    lru.get("ConditionExpression", "a = :v", parse_condition)
    assert lru.misses == 3
    lru.get("ConditionExpression", "b = :v", parse_condition)
    assert lru.misses == 4


def test_failed_parses_raise_every_time_and_are_not_stored() -> None:
    lru = ParseCache()
    for _ in range(2):
        with pytest.raises(DynamoError):
            lru.get("ConditionExpression", "a b", parse_condition)
    assert len(lru) == 0


def test_module_level_helpers_share_one_cache() -> None:
    tree = cache.update("SET cached_one = :v")
    assert cache.update("SET cached_one = :v") is tree
