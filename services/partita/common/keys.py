"""Key hashing and order-preserving storage-key encoding (pure; runs on every request).

A partition key's place in the cluster is a stable 64-bit hash of its canonical bytes;
partitions own contiguous ranges of that hash space. Tables created since the key hash
became DynamoDB's (`KEY_HASH_DYNAMODB`) hash as DynamoDB does: MD5 of "Outliers" and
the key's bytes (a number in DynamoDB's own encoding), as dynalite matched production
(its scan tests, run against DynamoDB, give the order of fourteen string and fourteen
number keys and the parallel-scan segments of six): a Scan then returns items in
DynamoDB's order and a Segment holds the keys DynamoDB's does. Older tables keep the
BLAKE2b hash they were placed by (`KEY_HASH_BLAKE2B`). On disk every item lives under
one byte string whose bytewise order is the order Query and Scan need:

    table_id (8, big-endian) | hash (8, big-endian) | escaped partition key | sort key

- The partition key is escaped (0x00 -> 0x00 0xFF) and terminated by 0x00 0x01, so the
  component is prefix-free: one key's collection can never swallow a longer key's.
  Escaping also keeps bytewise order, though only grouping matters there.
- The sort key comes last, in an encoding whose bytewise order is DynamoDB's order.
  S and B are their raw bytes: UTF-8 order is code point order (what DynamoDB uses),
  and a prefix of the value is a prefix of the encoding, so begins_with is a range.
  N is a fixed-width sign/exponent/mantissa encoding (see `_encode_number`).

Nothing here looks at a whole item or a table schema: callers pass the key type, and
type mismatches against the schema are reported by the item model, whose messages
depend on the operation.
"""

from __future__ import annotations

import binascii
import hashlib
import re
import struct
from collections.abc import Iterable
from decimal import Decimal
from typing import Literal

from partita.common import errors, numbers

KeyType = Literal["S", "N", "B"]
SortOp = Literal["=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"]

HASH_SPACE = 1 << 64
# Limits on the raw value (UTF-8 bytes of S, decoded bytes of B); numbers are never
# checked because a valid number is at most 21 bytes in DynamoDB's own encoding.
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024

_HEAD = struct.Struct(">QQ")
_U64 = struct.Struct(">Q")
# One hasher per type, already fed its tag byte: copying a primed hasher costs a third
# of constructing blake2b with keyword arguments, and this runs on every request.
_HASHERS = {tag: hashlib.blake2b(tag.encode(), digest_size=8) for tag in ("S", "N", "B")}
# Integers of up to 38 digits without leading zeros are already canonical and always
# storable: the usual numeric keys (ids, timestamps) skip Decimal entirely.
_PLAIN_INT = re.compile(r"-?[1-9][0-9]{0,37}")
_PK_END = b"\x00\x01"

# Number sort-key layout: marker, exponent byte, 16-byte mantissa. The adjusted exponent
# of a storable number lies in [-130, 125], exactly 256 values, so it fits one byte.
_NEG, _ZERO, _POS = 0x01, 0x02, 0x03
_MIN_EXP, _MAX_EXP = -130, 125
_DIGITS = numbers.MAX_DIGITS
_MANTISSA_LIMIT: int = 10**_DIGITS
_POW10 = [10**i for i in range(_DIGITS)]
_N_WIDTH = 18
_ZERO_KEY = bytes([_ZERO])

_HASH_TOO_BIG = (
    "One or more parameter values were invalid: "
    "Size of hashkey has exceeded the maximum size limit of2048 bytes"
)
_RANGE_TOO_BIG = (
    "One or more parameter values were invalid: "
    "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
)
_EMPTY = (
    "One or more parameter values are not valid. "
    "The AttributeValue for a key attribute cannot contain an empty {what} value. Key: {name}"
)


# --- canonical bytes and hashing -----------------------------------------------------


def _b64decode(text: str) -> bytes:
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        # The request decoder owns Base64 validation; this only keeps a malformed value
        # that slipped past it from becoming a crash or a silently different key.
        if len(text) % 4:
            raise errors.serialization(
                f"Base64 encoded length is expected a multiple of 4 bytes but found: {len(text)}"
            ) from None
        raise errors.serialization("Unexpected value type in payload") from None


def key_bytes(av: dict[str, str], key_type: KeyType) -> bytes:
    """Canonical bytes of a key value: what is hashed and stored as the partition key.

    S -> UTF-8, B -> decoded bytes, N -> canonical number text, so "1.0", "1" and
    "1E0" are one key. `av` must hold `key_type` (the item model checks the schema).
    """
    if key_type == "S":
        return av["S"].encode()
    if key_type == "B":
        return _b64decode(av["B"])
    text = av["N"]
    if type(text) is str and _PLAIN_INT.fullmatch(text):
        return text.encode()
    return numbers.canonical(text).encode()


def key_value(raw: bytes, key_type: KeyType) -> dict[str, str]:
    """The attribute value whose canonical bytes are `raw` (inverse of `key_bytes`)."""
    if key_type == "S":
        return {"S": raw.decode()}
    if key_type == "B":
        return {"B": binascii.b2a_base64(raw, newline=False).decode()}
    return {"N": raw.decode()}


# A table's key hash: how its partition keys are placed in the hash space. Fixed when
# the table is created, for as long as it lives.
KEY_HASH_BLAKE2B = "blake2b"  # tables created before the key hash was DynamoDB's
KEY_HASH_DYNAMODB = "dynamodb"
_DYNAMODB_HASHER = hashlib.md5(b"Outliers")


def key_hash(type_tag: KeyType, canonical: bytes, scheme: str = KEY_HASH_BLAKE2B) -> int:
    """Stable unsigned 64-bit position of a partition key in the hash space.

    Both hashes are specified byte for byte, so the value is the same in every process,
    version and machine: partition boundaries persisted today stay valid forever.
    """
    if scheme == KEY_HASH_DYNAMODB:
        # dynamodb_digest of one part, inline: this runs on every request.
        md5 = _DYNAMODB_HASHER.copy()
        md5.update(number_bytes(canonical) if type_tag == "N" else canonical)
        position: int = _U64.unpack_from(md5.digest())[0]
        return position
    hasher = _HASHERS[type_tag].copy()
    hasher.update(canonical)
    value: int = _U64.unpack(hasher.digest())[0]
    return value


def dynamodb_digest(parts: Iterable[tuple[KeyType, bytes]]) -> bytes:
    """MD5 of "Outliers" and key values' bytes as DynamoDB hashes them ((type, canonical
    bytes) each; a number in DynamoDB's own encoding): a partition key's place, or with
    its sort key, the order of index entries that share an index key."""
    md5 = _DYNAMODB_HASHER.copy()
    for type_tag, canonical in parts:
        md5.update(number_bytes(canonical) if type_tag == "N" else canonical)
    return md5.digest()


def number_bytes(canonical: bytes) -> bytes:
    """A number in DynamoDB's own encoding, from its canonical text (plain notation, no
    trailing zeros): an exponent byte, then the significant digits two to a byte, each
    pair stored plus one; a negative number's bytes complemented, and ended by 102 when
    short. What DynamoDB hashes for a number key (dynalite's numToBuffer)."""
    text = canonical.decode()
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    whole, _, fraction = text.partition(".")
    if whole != "0":
        exponent = len(whole)
        digits = (whole + fraction).rstrip("0")
    else:
        significant = fraction.lstrip("0")
        if not significant:
            return b"\x80"  # zero
        exponent = len(significant) - len(fraction)
        digits = significant.rstrip("0")
    odd = exponent % 2
    if odd:
        digits = "0" + digits
    if len(digits) % 2:
        digits += "0"
    head = (exponent + odd) // 2 - 64
    out = bytearray([(~head if negative else head) & 0xFF])
    for i in range(0, len(digits), 2):
        pair = int(digits[i : i + 2])
        out.append((101 - pair if negative else pair + 1) & 0xFF)
    if negative and len(out) - 1 < 20:
        out.append(102)
    return bytes(out)


# --- size and emptiness checks -------------------------------------------------------


def check_key_value(name: str, key_type: KeyType, raw: bytes, *, partition: bool) -> None:
    """Raise DynamoDB's ValidationException if a key value is empty or too large.

    `raw` is the output of `key_bytes`; its length is what DynamoDB measures (UTF-8
    bytes for S, decoded bytes for B). Applies to reads as well as writes.
    """
    if key_type == "N":
        return
    size = len(raw)
    if size == 0:
        what = "string" if key_type == "S" else "binary"
        raise errors.validation(_EMPTY.format(what=what, name=name))
    if partition:
        if size > MAX_PARTITION_KEY_BYTES:
            raise errors.validation(_HASH_TOO_BIG)
    elif size > MAX_SORT_KEY_BYTES:
        raise errors.validation(_RANGE_TOO_BIG)


def partition_key_bytes(name: str, av: dict[str, str], key_type: KeyType) -> bytes:
    """Canonical bytes of a partition key value, checked against DynamoDB's limits."""
    raw = key_bytes(av, key_type)
    check_key_value(name, key_type, raw, partition=True)
    return raw


def sort_key_bytes(name: str, av: dict[str, str], key_type: KeyType) -> bytes:
    """Order-preserving encoding of a sort key value, checked against DynamoDB's limits."""
    if key_type == "N":
        return _encode_number_text(av["N"])
    raw = key_bytes(av, key_type)
    check_key_value(name, key_type, raw, partition=False)
    return raw


# --- order-preserving sort-key encoding ----------------------------------------------


def _encode_number(value: Decimal) -> bytes:
    """Fixed-width encoding whose bytewise order is numeric order.

    [marker][exponent][mantissa]: marker orders negatives < zero < positives. For a
    positive number the exponent byte is adjusted+130 and the mantissa the 38 digits
    left-aligned as a 16-byte integer, so a bigger exponent wins, then bigger digits.
    Negatives store both complemented so that larger magnitudes sort first. A fixed
    width needs no terminator, and `int` arithmetic beats per-digit loops by far.
    """
    if value.is_zero():
        return _ZERO_KEY
    adjusted = value.adjusted()
    mantissa = int(value.copy_abs().scaleb(_DIGITS - 1 - adjusted, numbers.CONTEXT))
    return _pack_number(value.is_signed(), adjusted, mantissa)


def _pack_number(negative: bool, adjusted: int, mantissa: int) -> bytes:
    if negative:
        return bytes((_NEG, _MAX_EXP - adjusted)) + (_MANTISSA_LIMIT - 1 - mantissa).to_bytes(16, "big")
    return bytes((_POS, adjusted - _MIN_EXP)) + mantissa.to_bytes(16, "big")


def _encode_number_text(text: str) -> bytes:
    if type(text) is str and _PLAIN_INT.fullmatch(text):
        negative = text[0] == "-"
        digits = text[1:] if negative else text
        # Left-align the digits in 38 places, as the Decimal path does.
        return _pack_number(negative, len(digits) - 1, int(digits) * _POW10[_DIGITS - len(digits)])
    return _encode_number(numbers.parse_number(text))


def _decode_number(data: bytes) -> str:
    if data == _ZERO_KEY:
        return "0"
    if len(data) != _N_WIDTH or data[0] not in (_NEG, _POS):
        raise ValueError(f"not an encoded number sort key: {data.hex()}")
    mantissa = int.from_bytes(data[2:], "big")
    if data[0] == _NEG:
        sign, adjusted, mantissa = "-", _MAX_EXP - data[1], _MANTISSA_LIMIT - 1 - mantissa
    else:
        sign, adjusted = "", data[1] + _MIN_EXP
    if not _POW10[-1] <= mantissa < _MANTISSA_LIMIT:
        raise ValueError(f"not an encoded number sort key: {data.hex()}")
    # Plain notation without trailing zeros, as `numbers.format_number` writes it,
    # built from the digits directly (Decimal would triple the cost).
    digits = str(mantissa).rstrip("0")
    point = adjusted + 1  # digits before the decimal point
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    if point > 0:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}0.{'0' * -point}{digits}"


def encode_sort_key(av: dict[str, str], key_type: KeyType) -> bytes:
    """Bytes whose bytewise order is DynamoDB's order of sort key values of one type.

    S: UTF-8 bytes; B: the bytes; N: see `_encode_number`. For S and B a prefix of the
    value is a prefix of the encoding. Numbers are validated (and may raise).
    """
    if key_type == "N":
        return _encode_number_text(av["N"])
    return key_bytes(av, key_type)


def decode_sort_key(data: bytes, key_type: KeyType) -> dict[str, str]:
    """The canonical attribute value of an encoded sort key."""
    if key_type == "N":
        return {"N": _decode_number(data)}
    return key_value(data, key_type)


# --- storage keys --------------------------------------------------------------------


def table_prefix(table_id: int) -> bytes:
    """The first 8 bytes of every storage key of a table."""
    return _U64.pack(table_id)


def _table_end(table_id: int) -> bytes:
    # Keys of the last hash value can continue with any number of 0xFF bytes, so no
    # bound built inside the table's prefix is above all of them: use the next table's.
    if table_id >= HASH_SPACE - 1:
        raise ValueError("table id 2**64-1 is reserved so that every table has an upper bound")
    return _U64.pack(table_id + 1)


def table_bounds(table_id: int) -> tuple[bytes, bytes]:
    """[lo, hi) holding every storage key of a table (to drop or copy it)."""
    return table_prefix(table_id), _table_end(table_id)


def item_key(table_id: int, h: int, pk: bytes, sk: bytes | None) -> bytes:
    """The storage key of an item: `pk` from `key_bytes`, `sk` from `encode_sort_key`."""
    key = _HEAD.pack(table_id, h) + pk.replace(b"\x00", b"\x00\xff") + _PK_END
    return key + sk if sk else key


def parse_item_key(data: bytes) -> tuple[int, int, bytes, bytes | None]:
    """(table_id, hash, partition key bytes, encoded sort key or None) of a storage key."""
    if len(data) < 18:
        raise ValueError("storage key too short")
    table_id, h = _HEAD.unpack_from(data)
    pos = 16
    pieces: list[bytes] = []
    while True:
        zero = data.find(0, pos)
        if zero < 0 or zero + 1 >= len(data):
            raise ValueError("storage key has an unterminated partition key")
        marker = data[zero + 1]
        if marker == 0x01:
            pieces.append(data[pos:zero])
            rest = data[zero + 2 :]
            pk = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            return table_id, h, pk, rest or None
        if marker != 0xFF:
            raise ValueError("storage key has a bad escape in its partition key")
        pieces.append(data[pos : zero + 1])
        pos = zero + 2


# A transaction's lock on an item (storage/transactions.py) is stored beside it, inside
# its partition's key range (so replication, snapshots and splits carry it), under the
# item key with this marker after the table id and hash. No item key has it there: an
# escaped partition key never starts with 0x00 0x03.
_LOCK_MARK = b"\x00\x03"


def lock_key(item_storage_key: bytes) -> bytes:
    return item_storage_key[:16] + _LOCK_MARK + item_storage_key[16:]


def is_lock_key(key: bytes) -> bool:
    return key[16:18] == _LOCK_MARK


# A partition's stream records (DynamoDB Streams, api/streams.py) are stored inside its
# key range too, at its first hash, so they follow its data through replication,
# snapshots, migration and splits:
#     table_id | partition start hash | 0x00 0x04 | stream time (ms, 8) |
#     length (1) | partition id | log index (8) | position in the entry (4)
# A split leaves a parent's records in its lower child's range, still under the parent's
# id, so the closed parent shard stays readable.
_STREAM_MARK = b"\x00\x04"
STREAM_TIME = struct.Struct(">Q")
STREAM_POSITION = struct.Struct(">QI")


def stream_shard_prefix(table_id: int, start_hash: int, stream_ms: int, partition_id: str) -> bytes:
    """Every stream record of one shard (a partition's records for one stream) starts so."""
    pid = partition_id.encode()
    if len(pid) > 255:
        raise ValueError("partition id too long for a stream key")
    return (
        _HEAD.pack(table_id, start_hash)
        + _STREAM_MARK
        + STREAM_TIME.pack(stream_ms)
        + bytes((len(pid),))
        + pid
    )


# A table's point-in-time recovery history (api/point_in_time.py) is kept as the records
# of a stream of its own, never listed by DynamoDB Streams' operations: its stream time
# is the time recovery was turned on (ms) with the top bit set.
_HISTORY_BIT = 1 << 63


def history_stream_ms(enabled_ms: int) -> int:
    """The stream time that names a point-in-time recovery history's shards."""
    if not 0 <= enabled_ms < _HISTORY_BIT:
        raise ValueError("history time out of range")
    return _HISTORY_BIT | enabled_ms


def is_history(stream_ms: int) -> bool:
    """Whether a stream time names a recovery history rather than a DynamoDB stream."""
    return bool(stream_ms & _HISTORY_BIT)


def stream_time_prefix(table_id: int, start_hash: int, stream_ms: int) -> bytes:
    """Every record stored at a partition's first hash for one stream (or history),
    whichever partition's shard it is in: the partition's own, and its split ancestors'."""
    return _HEAD.pack(table_id, start_hash) + _STREAM_MARK + STREAM_TIME.pack(stream_ms)


def stream_time_of(shard_prefix: bytes) -> int:
    """The stream time in a shard prefix (`stream_shard_prefix`)."""
    value: int = STREAM_TIME.unpack_from(shard_prefix, 18)[0]
    return value


def stream_area(table_id: int, start_hash: int) -> tuple[bytes, bytes]:
    """[lo, hi) of every stream record stored at a partition's first hash: its own
    shards of every stream, and a split parent's when it is the lower child."""
    head = _HEAD.pack(table_id, start_hash)
    return head + _STREAM_MARK, head + b"\x00\x05"


def shard_prefix_of(key: bytes) -> bytes:
    """The shard prefix (`stream_shard_prefix`) of a stream record's key."""
    return key[: 26 + 1 + key[26]]


def is_item_key(key: bytes) -> bool:
    """Whether a storage key is an item's, not a record kept beside the items (a
    transaction's lock, a stream record). An escaped partition key starts with a byte
    other than 0x00, or with 0x00 0xFF."""
    return key[16] != 0 or key[17] == 0xFF


def hash_range_bounds(table_id: int, start_hash: int, end_hash: int) -> tuple[bytes, bytes]:
    """[lo, hi) of every storage key of a table whose hash is in [start_hash, end_hash).

    `end_hash` may be 2**64 (the last partition).
    """
    if not 0 <= start_hash < end_hash <= HASH_SPACE:
        raise ValueError(f"bad hash range [{start_hash}, {end_hash})")
    lo = _HEAD.pack(table_id, start_hash)
    hi = _table_end(table_id) if end_hash == HASH_SPACE else _HEAD.pack(table_id, end_hash)
    return lo, hi


def item_collection_bounds(table_id: int, h: int, pk: bytes) -> tuple[bytes, bytes]:
    """[lo, hi) of every item with this partition key (Query without a sort condition)."""
    lo = item_key(table_id, h, pk, None)
    # The key ends in the terminator 0x00 0x01; 0x00 0x02 is the first byte string
    # above every extension of it, and no other partition key starts that way.
    return lo, lo[:-1] + b"\x02"


def _successor_of_prefix(prefix: bytes) -> bytes | None:
    """The least byte string above every string starting with `prefix`; None if none."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


def sort_key_bounds(
    table_id: int,
    h: int,
    pk: bytes,
    op: SortOp,
    sk: bytes,
    sk2: bytes | None = None,
) -> tuple[bytes, bytes]:
    """[lo, hi) of the items of one partition key whose sort key meets a key condition.

    `sk` (and `sk2`, the upper bound of BETWEEN) are `encode_sort_key` outputs. An
    encoding followed by 0x00 is the least byte string above it, which turns inclusive
    bounds into exclusive ones. begins_with applies to S and B only (the expression
    layer rejects it for N). A BETWEEN with sk > sk2 yields lo >= hi (an empty scan);
    DynamoDB rejects it before this point.
    """
    lo, hi = item_collection_bounds(table_id, h, pk)
    at = lo + sk
    if op == "=":
        return at, at + b"\x00"
    if op == "<":
        return lo, at
    if op == "<=":
        return lo, at + b"\x00"
    if op == ">":
        return at + b"\x00", hi
    if op == ">=":
        return at, hi
    if op == "BETWEEN":
        if sk2 is None:
            raise ValueError("BETWEEN needs an upper bound")
        return at, lo + sk2 + b"\x00"
    if op == "begins_with":
        after = _successor_of_prefix(sk)
        return at, hi if after is None else lo + after
    raise ValueError(f"unknown sort key operator {op!r}")
