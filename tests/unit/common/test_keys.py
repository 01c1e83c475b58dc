"""Key hashing and the order-preserving storage-key encoding."""

from __future__ import annotations

import base64
import collections
import hashlib
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from partita.common import errors, keys
from partita.common.numbers import canonical, format_number

# --- strategies ----------------------------------------------------------------------

# Any code point except surrogates (which JSON text decoded by orjson cannot hold),
# astral planes included.
texts = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=24)
blobs = st.binary(min_size=1, max_size=24)


@st.composite
def dynamo_decimals(draw: st.DrawFn) -> Decimal:
    """Numbers DynamoDB can store: <= 38 significant digits, adjusted exponent -130..125."""
    if draw(st.integers(0, 20)) == 0:
        return Decimal(0)
    ndigits = draw(st.integers(1, 38))
    # Few distinct digits make equal prefixes (1.2 vs 1.23) common, the hard cases.
    digits = draw(st.lists(st.sampled_from("0129"), min_size=ndigits - 1, max_size=ndigits - 1))
    coefficient = draw(st.sampled_from("129")) + "".join(digits)
    adjusted = draw(st.one_of(st.integers(-130, 125), st.sampled_from([-130, -1, 0, 1, 125])))
    sign = "-" if draw(st.booleans()) else ""
    return Decimal(f"{sign}{coefficient[0]}.{coefficient[1:]}E{adjusted}")


@st.composite
def number_texts(draw: st.DrawFn) -> tuple[str, Decimal]:
    """A number and one of the many texts a client may write it as."""
    value = draw(dynamo_decimals())
    style = draw(st.sampled_from(["plain", "sci", "padded"]))
    if style == "plain":
        text = format(value, "f")
    elif style == "sci":
        text = format(value, "E")
    else:
        text = format(value, "f") + ("" if "." in format(value, "f") else ".") + "000"
    return text, value


def enc_n(value: Decimal) -> bytes:
    return keys.encode_sort_key({"N": str(value)}, "N")


def cmp(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- sort-key order ------------------------------------------------------------------


@given(texts, texts)
def test_string_sort_keys_order_by_code_point_like_dynamodb(a: str, b: str) -> None:
    # Python compares str by code point, which is UTF-8 byte order: DynamoDB's order.
    assert cmp(keys.encode_sort_key({"S": a}, "S"), keys.encode_sort_key({"S": b}, "S")) == cmp(a, b)


def test_astral_characters_sort_after_bmp_characters() -> None:
    # UTF-16 code-unit order (Java's, JavaScript's) would put U+1F600 before U+FFFD.
    assert keys.encode_sort_key({"S": "\ufffd"}, "S") < keys.encode_sort_key({"S": "\U0001f600"}, "S")


@given(blobs, blobs)
def test_binary_sort_keys_order_as_unsigned_bytes(a: bytes, b: bytes) -> None:
    ea = keys.encode_sort_key({"B": b64(a)}, "B")
    eb = keys.encode_sort_key({"B": b64(b)}, "B")
    assert cmp(ea, eb) == cmp(a, b)


@given(dynamo_decimals(), dynamo_decimals())
def test_number_sort_keys_order_numerically(a: Decimal, b: Decimal) -> None:
    assert cmp(enc_n(a), enc_n(b)) == cmp(a, b)


@given(st.lists(dynamo_decimals(), min_size=2, max_size=30))
def test_sorting_number_encodings_sorts_the_numbers(values: list[Decimal]) -> None:
    assert sorted(values, key=enc_n) == sorted(values)


def test_number_edge_values_encode_in_numeric_order() -> None:
    ascending = [
        "-9.9999999999999999999999999999999999999E+125",
        "-1E+125",
        "-12345678901234567890123456789012345678",
        "-100",
        "-99.1",
        "-10",
        "-1.23",
        "-1.2",
        "-1",
        "-0.999",
        "-1E-129",
        "-1E-130",
        "0",
        "1E-130",
        "1.1E-130",
        "1E-129",
        "0.5",
        "1",
        "1.2",
        "1.23",
        "1.3",
        "9.9999999999999999999999999999999999999",
        "10",
        "99.1",
        "100",
        "1E+125",
        "9.9999999999999999999999999999999999999E+125",
    ]
    encoded = [enc_n(Decimal(v)) for v in ascending]
    assert encoded == sorted(encoded)
    assert len(set(encoded)) == len(encoded)


@given(dynamo_decimals(), dynamo_decimals())
def test_number_sort_keys_are_equal_only_for_equal_numbers(a: Decimal, b: Decimal) -> None:
    assert (enc_n(a) == enc_n(b)) == (a == b)


# --- round trips and canonical forms -------------------------------------------------


@given(number_texts())
def test_number_sort_key_decodes_to_canonical_text(case: tuple[str, Decimal]) -> None:
    text, value = case
    decoded = keys.decode_sort_key(keys.encode_sort_key({"N": text}, "N"), "N")
    assert decoded == {"N": format_number(value)}
    assert Decimal(decoded["N"]) == value


@pytest.mark.parametrize(
    "text",
    ["1E-130", "-1.5E-130", "0.5", "-0.0015", "1.5", "123.456", "100", "-1E+125", "9.87E+125"],
)
def test_number_sort_key_edge_values_decode_to_canonical_text(text: str) -> None:
    decoded = keys.decode_sort_key(keys.encode_sort_key({"N": text}, "N"), "N")
    assert decoded == {"N": canonical(text)}


@given(texts)
def test_string_sort_key_round_trips(s: str) -> None:
    assert keys.decode_sort_key(keys.encode_sort_key({"S": s}, "S"), "S") == {"S": s}


@given(blobs)
def test_binary_sort_key_round_trips(data: bytes) -> None:
    assert keys.decode_sort_key(keys.encode_sort_key({"B": b64(data)}, "B"), "B") == {"B": b64(data)}


@pytest.mark.parametrize("text", ["1", "1.0", "1E0", "10E-1", "0.1E1", "1.000000", "+1"])
def test_equal_numbers_written_differently_are_one_key(text: str) -> None:
    assert keys.key_bytes({"N": text}, "N") == b"1"
    assert keys.encode_sort_key({"N": text}, "N") == keys.encode_sort_key({"N": "1"}, "N")


@given(st.integers(-(10**38) + 1, 10**38 - 1), st.sampled_from(["", ".0", "E0", "00E-2"]))
def test_integer_keys_take_the_same_bytes_whatever_their_spelling(n: int, suffix: str) -> None:
    # Plain integers skip Decimal; every other spelling of the same number goes through
    # it, so the two paths must agree byte for byte.
    text = str(n) + suffix
    assert keys.key_bytes({"N": text}, "N") == format_number(Decimal(n)).encode()
    assert keys.encode_sort_key({"N": text}, "N") == keys._encode_number(Decimal(n))


@pytest.mark.parametrize(("text", "raw"), [("007", b"7"), ("-0", b"0"), ("+5", b"5"), ("-1000.0", b"-1000")])
def test_integer_like_texts_off_the_fast_path_are_canonicalised(text: str, raw: bytes) -> None:
    assert keys.key_bytes({"N": text}, "N") == raw


def test_integer_of_39_significant_digits_is_rejected() -> None:
    with pytest.raises(errors.DynamoError) as info:
        keys.key_bytes({"N": "1" * 39}, "N")
    assert info.value.message == "Attempting to store more than 38 significant digits in a Number"


def test_negative_zero_is_zero() -> None:
    assert keys.key_bytes({"N": "-0"}, "N") == b"0"
    assert keys.encode_sort_key({"N": "-0.0"}, "N") == keys.encode_sort_key({"N": "0"}, "N")


@pytest.mark.parametrize(
    ("av", "key_type", "raw"),
    [
        ({"S": "h\u00e9"}, "S", "h\u00e9".encode()),
        ({"B": "AAH/"}, "B", b"\x00\x01\xff"),
        ({"N": "-12.50"}, "N", b"-12.5"),
        ({"N": "1E+3"}, "N", b"1000"),
    ],
)
def test_key_bytes_are_canonical_and_key_value_inverts_them(
    av: dict[str, str], key_type: keys.KeyType, raw: bytes
) -> None:
    assert keys.key_bytes(av, key_type) == raw
    assert keys.key_bytes(keys.key_value(raw, key_type), key_type) == raw


def test_invalid_number_key_raises_dynamodb_validation_error() -> None:
    with pytest.raises(errors.DynamoError) as info:
        keys.encode_sort_key({"N": "1e126"}, "N")
    assert info.value.code == "ValidationException"
    assert "overflow" in info.value.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("AAA", "Base64 encoded length is expected a multiple of 4 bytes but found: 3"),
        ("AA*=", "Unexpected value type in payload"),
    ],
)
def test_malformed_base64_key_raises_serialization_error(text: str, message: str) -> None:
    with pytest.raises(errors.DynamoError) as info:
        keys.key_bytes({"B": text}, "B")
    assert (info.value.code, info.value.message) == ("SerializationException", message)


@pytest.mark.parametrize("data", [b"", b"\x03", b"\x07" + bytes(17), b"\x03\x00" + bytes(16)])
def test_decoding_a_corrupt_number_sort_key_fails_loudly(data: bytes) -> None:
    with pytest.raises(ValueError):
        keys.decode_sort_key(data, "N")


# --- hashing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key_type", "raw", "expected"),
    [
        ("S", b"hello", 18003022765176766763),
        ("S", b"", 4642674337318973567),
        ("N", b"1", 12018623943982946627),
        ("B", b"\x00\x01", 4382248154588478012),
    ],
)
def test_key_hash_is_pinned_forever(key_type: keys.KeyType, raw: bytes, expected: int) -> None:
    # Partition boundaries are persisted in this hash space: a changed value would
    # route existing keys to partitions that do not hold them.
    assert keys.key_hash(key_type, raw) == expected
    tag = key_type.encode()
    assert expected == int.from_bytes(hashlib.blake2b(tag + raw, digest_size=8).digest(), "big")


@given(number_texts())
def test_equal_numbers_hash_equally_whatever_their_text(case: tuple[str, Decimal]) -> None:
    text, value = case
    assert keys.key_hash("N", keys.key_bytes({"N": text}, "N")) == keys.key_hash(
        "N", keys.key_bytes({"N": str(value)}, "N")
    )


def test_key_hash_depends_on_the_type_tag() -> None:
    assert keys.key_hash("S", b"1") != keys.key_hash("N", b"1")
    assert keys.key_hash("S", b"1") != keys.key_hash("B", b"1")


@given(st.binary(max_size=64))
def test_key_hash_is_an_unsigned_64_bit_integer(raw: bytes) -> None:
    assert 0 <= keys.key_hash("B", raw) < 2**64


def chi_square(buckets: list[int]) -> float:
    expected = sum(buckets) / len(buckets)
    return sum((b - expected) ** 2 / expected for b in buckets)


# Chi-square with 15 degrees of freedom exceeds 37.7 with probability 0.001.
CHI_SQUARE_BOUND = 37.7


def sequential_keys() -> list[bytes]:
    # Sequential ids are the common real-world pattern and the one bad hashes fail on.
    return [f"user#{i}".encode() for i in range(10_000)]


def test_chi_square_bound_rejects_a_bad_hash() -> None:
    # Proves the bound below can fail: a hash of the leading bytes puts every
    # "user#..." key into one bucket.
    bad = collections.Counter(int.from_bytes(k[:8].ljust(8, b"\0"), "big") >> 60 for k in sequential_keys())
    assert chi_square([bad[i] for i in range(16)]) > CHI_SQUARE_BOUND


@pytest.mark.parametrize(
    ("name", "bucket_of"),
    [("top bits (partition ranges)", lambda h: h >> 60), ("low bits", lambda h: h & 15)],
)
def test_hash_spreads_sequential_keys_evenly_over_16_buckets(name: str, bucket_of: object) -> None:
    counts = collections.Counter(
        bucket_of(keys.key_hash("S", k))  # type: ignore[operator]
        for k in sequential_keys()
    )
    assert chi_square([counts[i] for i in range(16)]) < CHI_SQUARE_BOUND, name


# --- size and emptiness checks -------------------------------------------------------

HASH_TOO_BIG = (
    "One or more parameter values were invalid: "
    "Size of hashkey has exceeded the maximum size limit of2048 bytes"
)
RANGE_TOO_BIG = (
    "One or more parameter values were invalid: "
    "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
)


def validation_message(fn: object, *args: object) -> str:
    with pytest.raises(errors.DynamoError) as info:
        fn(*args)  # type: ignore[operator]
    assert info.value.code == "ValidationException"
    assert info.value.namespace == errors.VALIDATE_NS
    return info.value.message


def test_partition_key_of_2048_bytes_is_accepted_and_2049_rejected() -> None:
    assert len(keys.partition_key_bytes("pk", {"S": "x" * 2048}, "S")) == 2048
    assert validation_message(keys.partition_key_bytes, "pk", {"S": "x" * 2049}, "S") == HASH_TOO_BIG


def test_partition_key_size_counts_utf8_bytes_not_characters() -> None:
    emoji = "\U0001f603"  # one character, four UTF-8 bytes
    keys.partition_key_bytes("pk", {"S": emoji * 512}, "S")
    assert validation_message(keys.partition_key_bytes, "pk", {"S": "x" + emoji * 512}, "S") == (HASH_TOO_BIG)


def test_binary_key_size_counts_decoded_bytes_not_base64_text() -> None:
    keys.partition_key_bytes("pk", {"B": b64(b"\x7b" * 2048)}, "B")
    assert validation_message(keys.partition_key_bytes, "pk", {"B": b64(b"\x7b" * 2049)}, "B") == (
        HASH_TOO_BIG
    )
    keys.sort_key_bytes("sk", {"B": b64(b"\x7b" * 1024)}, "B")
    assert validation_message(keys.sort_key_bytes, "sk", {"B": b64(b"\x7b" * 1025)}, "B") == (RANGE_TOO_BIG)


def test_sort_key_of_1024_bytes_is_accepted_and_1025_rejected() -> None:
    assert keys.sort_key_bytes("sk", {"S": "y" * 1024}, "S") == b"y" * 1024
    assert validation_message(keys.sort_key_bytes, "sk", {"S": "y" * 1025}, "S") == RANGE_TOO_BIG


@pytest.mark.parametrize(("av", "key_type", "what"), [({"S": ""}, "S", "string"), ({"B": ""}, "B", "binary")])
@pytest.mark.parametrize("check", [keys.partition_key_bytes, keys.sort_key_bytes])
def test_empty_key_values_are_rejected_with_the_key_name(
    av: dict[str, str], key_type: keys.KeyType, what: str, check: object
) -> None:
    assert validation_message(check, "forum_name", av, key_type) == (
        "One or more parameter values are not valid. The AttributeValue for a key attribute "
        f"cannot contain an empty {what} value. Key: forum_name"
    )


def test_number_keys_are_never_too_big() -> None:
    big = "-9.9999999999999999999999999999999999999E-130"
    assert keys.partition_key_bytes("pk", {"N": big}, "N") == keys.key_bytes({"N": big}, "N")
    assert keys.sort_key_bytes("sk", {"N": big}, "N") == keys.encode_sort_key({"N": big}, "N")


# --- storage keys --------------------------------------------------------------------

# Bytes that exercise the escaping: NUL, the terminator byte, 0xFF, and one plain byte.
tricky_bytes = st.binary(max_size=6).map(lambda b: bytes(b"\x00\x01\xff\x61"[x % 4] for x in b))
tables = st.integers(0, 3)
hashes = st.one_of(st.integers(0, 3), st.sampled_from([2**64 - 2, 2**64 - 1]))
pks = tricky_bytes.filter(bool)
sks = st.one_of(st.none(), tricky_bytes.filter(bool))


@given(tables, hashes, tricky_bytes, sks)
def test_parse_item_key_inverts_item_key(t: int, h: int, pk: bytes, sk: bytes | None) -> None:
    assert keys.parse_item_key(keys.item_key(t, h, pk, sk)) == (t, h, pk, sk)


@given(st.tuples(tables, hashes, pks, sks), st.tuples(tables, hashes, pks, sks))
def test_item_keys_order_by_table_then_hash_then_partition_key_then_sort_key(
    a: tuple[int, int, bytes, bytes | None], b: tuple[int, int, bytes, bytes | None]
) -> None:
    def as_tuple(k: tuple[int, int, bytes, bytes | None]) -> tuple[int, int, bytes, bytes]:
        return (k[0], k[1], k[2], k[3] or b"")

    assert cmp(keys.item_key(*a), keys.item_key(*b)) == cmp(as_tuple(a), as_tuple(b))


@given(tables, hashes, pks, st.tuples(tables, hashes, pks, sks))
def test_item_collection_bounds_hold_exactly_that_partition_keys_items(
    t: int, h: int, pk: bytes, other: tuple[int, int, bytes, bytes | None]
) -> None:
    lo, hi = keys.item_collection_bounds(t, h, pk)
    inside = lo <= keys.item_key(*other) < hi
    assert inside == (other[:3] == (t, h, pk))


@given(tables, st.integers(0, 2**64 - 1), st.integers(1, 2**64), st.tuples(tables, hashes, pks, sks))
def test_hash_range_bounds_hold_exactly_the_hashes_in_range(
    t: int, start: int, end: int, other: tuple[int, int, bytes, bytes | None]
) -> None:
    assume(start < end)
    lo, hi = keys.hash_range_bounds(t, start, end)
    inside = lo <= keys.item_key(*other) < hi
    assert inside == (other[0] == t and start <= other[1] < end)


def test_last_hash_range_holds_the_highest_possible_key() -> None:
    lo, hi = keys.hash_range_bounds(7, 2**63, 2**64)
    assert lo <= keys.item_key(7, 2**64 - 1, b"\xff" * 2048, b"\xff" * 1024) < hi
    assert not lo <= keys.item_key(8, 0, b"\x00", None) < hi


@given(tables, st.tuples(tables, hashes, pks, sks))
def test_table_bounds_hold_exactly_the_tables_keys(
    t: int, other: tuple[int, int, bytes, bytes | None]
) -> None:
    lo, hi = keys.table_bounds(t)
    assert (lo <= keys.item_key(*other) < hi) == (other[0] == t)
    assert keys.table_prefix(t) == lo


@pytest.mark.parametrize(("start", "end"), [(5, 5), (6, 5), (-1, 5), (0, 2**64 + 1)])
def test_hash_range_bounds_reject_empty_or_out_of_space_ranges(start: int, end: int) -> None:
    with pytest.raises(ValueError):
        keys.hash_range_bounds(1, start, end)


@pytest.mark.parametrize(
    "data",
    [b"", bytes(17), bytes(16) + b"ab", bytes(16) + b"a\x00", bytes(16) + b"a\x00\x07b"],
)
def test_parse_item_key_rejects_malformed_keys(data: bytes) -> None:
    with pytest.raises(ValueError):
        keys.parse_item_key(data)


# --- sort-key conditions -------------------------------------------------------------

T, H, PK = 9, 12345, b"p\x00k"


def in_bounds(bounds: tuple[bytes, bytes], sk: bytes) -> bool:
    lo, hi = bounds
    return lo <= keys.item_key(T, H, PK, sk) < hi


ORACLES = {
    "=": lambda v, a, b: v == a,
    "<": lambda v, a, b: v < a,
    "<=": lambda v, a, b: v <= a,
    ">": lambda v, a, b: v > a,
    ">=": lambda v, a, b: v >= a,
    "BETWEEN": lambda v, a, b: a <= v <= b,
}


@settings(max_examples=200)
@given(
    st.sampled_from(sorted(ORACLES)),
    dynamo_decimals(),
    dynamo_decimals(),
    st.lists(dynamo_decimals(), min_size=1, max_size=12),
)
def test_number_sort_conditions_select_exactly_the_matching_items(
    op: keys.SortOp, a: Decimal, b: Decimal, values: list[Decimal]
) -> None:
    a, b = min(a, b), max(a, b)
    values += [a, b]
    bounds = keys.sort_key_bounds(T, H, PK, op, enc_n(a), enc_n(b))
    for v in values:
        assert in_bounds(bounds, enc_n(v)) == ORACLES[op](v, a, b), (op, v, a, b)


@given(st.sampled_from(sorted(ORACLES)), texts, texts, st.lists(texts, max_size=12))
def test_string_sort_conditions_select_exactly_the_matching_items(
    op: keys.SortOp, a: str, b: str, values: list[str]
) -> None:
    a, b = min(a, b), max(a, b)
    values += [a, b, a + "\x00", a + "\U0010ffff"]

    def enc(s: str) -> bytes:
        return keys.encode_sort_key({"S": s}, "S")

    bounds = keys.sort_key_bounds(T, H, PK, op, enc(a), enc(b))
    for v in values:
        assert in_bounds(bounds, enc(v)) == ORACLES[op](v, a, b), (op, v, a, b)


@given(texts, st.lists(st.tuples(st.booleans(), texts), max_size=12))
def test_begins_with_on_strings_selects_exactly_the_values_with_that_prefix(
    prefix: str, candidates: list[tuple[bool, str]]
) -> None:
    values = [prefix + s if extend else s for extend, s in candidates] + [prefix]
    bounds = keys.sort_key_bounds(T, H, PK, "begins_with", keys.encode_sort_key({"S": prefix}, "S"))
    for v in values:
        assert in_bounds(bounds, keys.encode_sort_key({"S": v}, "S")) == v.startswith(prefix)


@given(tricky_bytes.filter(bool), st.lists(st.tuples(st.booleans(), tricky_bytes.filter(bool)), max_size=12))
def test_begins_with_on_binary_selects_exactly_the_values_with_that_prefix(
    prefix: bytes, candidates: list[tuple[bool, bytes]]
) -> None:
    # Prefixes ending in 0xFF have no simple successor: the edge case for the bounds.
    values = [prefix + s if extend else s for extend, s in candidates] + [prefix, b"\xff" * 8]
    bounds = keys.sort_key_bounds(T, H, PK, "begins_with", prefix)
    for v in values:
        assert in_bounds(bounds, v) == v.startswith(prefix)


def test_begins_with_all_ff_prefix_runs_to_the_end_of_the_collection() -> None:
    bounds = keys.sort_key_bounds(T, H, PK, "begins_with", b"\xff\xff")
    assert in_bounds(bounds, b"\xff\xff" + b"\xff" * 100)
    assert not in_bounds(bounds, b"\xff\xfe")
    assert bounds[1] == keys.item_collection_bounds(T, H, PK)[1]


def test_sort_conditions_never_leave_the_item_collection() -> None:
    lo, hi = keys.item_collection_bounds(T, H, PK)
    for op in ORACLES:
        b_lo, b_hi = keys.sort_key_bounds(T, H, PK, op, b"\x00", b"\xff" * 4)  # type: ignore[arg-type]
        assert lo <= b_lo and b_hi <= hi


def test_between_without_upper_bound_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        keys.sort_key_bounds(T, H, PK, "BETWEEN", b"a")


# --- DynamoDB's key hash ---------------------------------------------------------------
# dynalite's scan tests, run against DynamoDB: the order a Scan returns fourteen string
# keys and fourteen number keys in, and the segments of 4,096 some keys fall in.


def _dynamodb_order(values: list[str], kind: keys.KeyType) -> list[str]:
    return sorted(
        values, key=lambda v: keys.key_hash(kind, keys.key_bytes({kind: v}, kind), keys.KEY_HASH_DYNAMODB)
    )


def _segment(value: str, kind: keys.KeyType, total: int = 4096) -> int:
    return keys.key_hash(kind, keys.key_bytes({kind: value}, kind), keys.KEY_HASH_DYNAMODB) * total >> 64


def test_string_keys_hash_in_dynamodbs_scan_order() -> None:
    values = [str(i) for i in range(10)] + ["aardman", "hello", "zapf", "äáöü"]
    assert _dynamodb_order(values, "S") == [
        "2", "8", "9", "1", "6", "hello", "0", "5", "4", "äáöü", "aardman", "7", "3", "zapf",
    ]  # fmt: skip
    # moto's and LocalStack's AWS-recorded Scans.
    assert _dynamodb_order(["B", "A"], "S") == ["A", "B"]
    assert _dynamodb_order(["user02", "user01"], "S") == ["user01", "user02"]


def test_number_keys_hash_in_dynamodbs_scan_order() -> None:
    values = [str(i) for i in range(10)] + ["-0.09", "999.9", "0.012345", "-999.9"]
    assert _dynamodb_order(values, "N") == [
        "7", "999.9", "8", "3", "2", "-999.9", "9", "4", "-0.09", "6", "1", "0", "0.012345", "5",
    ]  # fmt: skip
    # A number hashes as its value, however it is written.
    assert _segment("1.50", "N") == _segment("15e-1", "N")


def test_keys_fall_in_dynamodbs_parallel_scan_segments() -> None:
    assert [_segment(v, "S") for v in ("3635", "228", "1668", "3435")] == [0, 0, 1, 4]
    assert [_segment(v, "N") for v in ("251", "2388")] == [1, 4095]


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("0", "80"),
        ("1", "c102"),
        ("10", "c10b"),
        ("100", "c202"),
        ("12.5", "c10d33"),
        ("0.012345", "c002182e"),
        ("-1", "3e6466"),
        ("-999.9", "3d5c020b66"),
    ],
)
def test_a_number_is_hashed_in_dynamodbs_own_encoding(text: str, encoded: str) -> None:
    assert keys.number_bytes(keys.key_bytes({"N": text}, "N")).hex() == encoded


def test_tables_older_than_dynamodbs_key_hash_keep_theirs() -> None:
    raw = keys.key_bytes({"S": "hello"}, "S")
    assert keys.key_hash("S", raw) == keys.key_hash("S", raw, keys.KEY_HASH_BLAKE2B)
    assert keys.key_hash("S", raw, keys.KEY_HASH_BLAKE2B) != keys.key_hash("S", raw, keys.KEY_HASH_DYNAMODB)
