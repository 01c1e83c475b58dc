"""Shard suffixes (the seed's methods 2 and 3) and DynamoDB's sort-key order."""

from __future__ import annotations

import hashlib
import random
from collections import Counter

import pytest

from partita.client.sharding.keys import (
    canonical_bytes,
    computed_shard,
    logical_key,
    random_shard,
    sharded_key,
    sort_position,
)


def test_the_physical_key_is_the_logical_key_and_the_shard_joined_by_an_underscore() -> None:
    assert sharded_key("/shared/firetvGen2.txt", 3) == "/shared/firetvGen2.txt_3"
    assert logical_key("/shared/firetvGen2.txt_3") == ("/shared/firetvGen2.txt", 3)
    # A logical key may itself contain underscores: the last one separates the shard.
    assert logical_key(sharded_key("a_b_7", 12)) == ("a_b_7", 12)


@pytest.mark.parametrize("bad", ["plain", "x_", "x_0", "x_-1", "x_a"])
def test_a_key_without_a_shard_number_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        logical_key(bad)


def test_shards_are_numbered_from_one() -> None:
    with pytest.raises(ValueError):
        sharded_key("k", 0)
    with pytest.raises(ValueError):
        random_shard(0, random.Random(1))


def test_random_suffix_covers_1_to_n_evenly() -> None:
    rng = random.Random(7)
    counts = Counter(random_shard(10, rng) for _ in range(20_000))
    assert set(counts) == set(range(1, 11))
    assert all(1_800 < c < 2_200 for c in counts.values()), counts


def test_computed_suffix_is_md5_of_key_and_sort_key_mod_n_plus_one() -> None:
    sk = {"N": "123456789101"}
    digest = hashlib.md5(b"/shared/firetvGen2.txt" + b"N123456789101").digest()
    expected = int.from_bytes(digest[:8], "big") % 10 + 1
    assert computed_shard("/shared/firetvGen2.txt", sk, 10) == expected
    assert 1 <= expected <= 10


def test_computed_suffix_is_stable_and_spreads_distinct_sort_keys() -> None:
    shards = [computed_shard("/f", {"N": str(ts)}, 10) for ts in range(5_000)]
    assert shards == [computed_shard("/f", {"N": str(ts)}, 10) for ts in range(5_000)]
    counts = Counter(shards)
    assert set(counts) == set(range(1, 11))
    assert all(400 < c < 600 for c in counts.values()), counts


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ({"N": "1"}, {"N": "1.0"}),
        ({"N": "100"}, {"N": "1E2"}),
        ({"N": "-0.50"}, {"N": "-.5"}),
        ({"N": "0"}, {"N": "-0.0"}),
    ],
)
def test_equal_numbers_land_in_the_same_computed_shard(written: dict[str, str], read: dict[str, str]) -> None:
    assert canonical_bytes(written) == canonical_bytes(read)
    assert computed_shard("k", written, 97) == computed_shard("k", read, 97)


def test_a_38_digit_number_is_not_rounded_into_its_neighbour() -> None:
    a = {"N": "12345678901234567890123456789012345678"}
    b = {"N": "12345678901234567890123456789012345679"}
    assert canonical_bytes(a) != canonical_bytes(b)


def test_types_are_distinct_in_the_hash() -> None:
    assert canonical_bytes({"S": "1"}) != canonical_bytes({"N": "1"})
    assert canonical_bytes({"B": b"1"}) == canonical_bytes({"B": "MQ=="})  # bytes or base64 text


@pytest.mark.parametrize("bad", [{"BOOL": True}, {"S": "a", "N": "1"}])
def test_only_scalar_key_types_are_accepted(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        canonical_bytes(bad)


def test_sort_order_is_dynamodbs_utf8_bytes_numbers_by_value_binary_unsigned() -> None:
    strings = [{"S": s} for s in ["b", "a", "\u00e9", "Z", "\U0001f600", "\uffff"]]
    assert [v["S"] for v in sorted(strings, key=sort_position)] == [
        "Z",
        "a",
        "b",
        "\u00e9",
        "\uffff",
        "\U0001f600",
    ]
    numbers = [{"N": n} for n in ["10", "9", "-1", "1e2", "0.5"]]
    assert [v["N"] for v in sorted(numbers, key=sort_position)] == ["-1", "0.5", "9", "10", "1e2"]
    binary = [{"B": b} for b in [b"\xff", b"\x00\x01", b"\x7f", b""]]
    assert [v["B"] for v in sorted(binary, key=sort_position)] == [b"", b"\x00\x01", b"\x7f", b"\xff"]
