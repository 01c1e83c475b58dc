"""A partition's data as a stream of chunks, for a follower behind its leader's log base
or a full member being built (docs/replication.md, "Snapshots").

The leader reads the partition's key range from a RocksDB snapshot taken at its applied
index, and cuts the (key, value) pairs into chunks of at most `CHUNK_BYTES`; each chunk
rides a SNAPSHOT message of the group (its `snapshot_data`), numbered from 0, the last
one flagged final. Each chunk carries a CRC32C of its bytes, checked before anything in
it is used. The receiver stages the chunks on disk as they come (memory stays bounded
by one chunk), starting again at chunk 0 if one is missing, damaged or from another
snapshot; once the final one is in, the snapshot is installed from the staging file in
RocksDB batches of about one chunk (`Engine.install_snapshot`): the first empties the
range and marks the install under way, the last sets the applied position and removes
the mark, so memory stays bounded by a chunk and a crash in between leaves the range
empty and unserved until the install is done again.

Pure except for `Staging`, which owns one file.

Chunk layout (big-endian): version u8, seq u32, final u8, pair count u32, then each pair
as key length u32, key, value length u32, value; then CRC32C u32 of all that precedes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import google_crc32c

VERSION = 1
# A chunk's pairs stop at this many bytes (one pair larger than that is a chunk alone).
CHUNK_BYTES = 256 * 1024

_HEAD = struct.Struct(">BIBI")
_LEN = struct.Struct(">I")


class SnapshotError(ValueError):
    """A chunk that is damaged, truncated or out of order."""


@dataclass(frozen=True, slots=True)
class Chunk:
    seq: int
    final: bool
    pairs: list[tuple[bytes, bytes]] = field(default_factory=list)


def encode_chunk(chunk: Chunk) -> bytes:
    out = bytearray(_HEAD.pack(VERSION, chunk.seq, 1 if chunk.final else 0, len(chunk.pairs)))
    for key, value in chunk.pairs:
        out += _LEN.pack(len(key))
        out += key
        out += _LEN.pack(len(value))
        out += value
    out += _LEN.pack(google_crc32c.value(bytes(out)))
    return bytes(out)


def decode_chunk(data: bytes) -> Chunk:
    if len(data) < _HEAD.size + _LEN.size:
        raise SnapshotError("truncated snapshot chunk")
    (crc,) = _LEN.unpack_from(data, len(data) - _LEN.size)
    body = data[: -_LEN.size]
    if google_crc32c.value(body) != crc:
        raise SnapshotError("snapshot chunk fails its CRC32C")
    version, seq, final, count = _HEAD.unpack_from(body)
    if version != VERSION:
        raise SnapshotError(f"unknown snapshot chunk version {version}")
    offset = _HEAD.size
    pairs = []
    for _ in range(count):
        key, offset = _field(body, offset)
        value, offset = _field(body, offset)
        pairs.append((key, value))
    if offset != len(body):
        raise SnapshotError("trailing bytes in a snapshot chunk")
    return Chunk(seq, bool(final), pairs)


def _field(body: bytes, offset: int) -> tuple[bytes, int]:
    if offset + _LEN.size > len(body):
        raise SnapshotError("truncated snapshot chunk")
    (length,) = _LEN.unpack_from(body, offset)
    start = offset + _LEN.size
    if start + length > len(body):
        raise SnapshotError("truncated snapshot chunk")
    return body[start : start + length], start + length


def chunks(pairs: Iterable[tuple[bytes, bytes]], limit: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """The pairs cut into chunks of at most `limit` bytes of keys and values; the last
    chunk is final (an empty range is one empty final chunk)."""
    seq = 0
    batch: list[tuple[bytes, bytes]] = []
    size = 0
    for key, value in pairs:
        if batch and size + len(key) + len(value) > limit:
            yield Chunk(seq, False, batch)
            seq, batch, size = seq + 1, [], 0
        batch.append((key, value))
        size += len(key) + len(value)
    yield Chunk(seq, True, batch)


class Staging:
    """The chunks of one snapshot received so far, in a file (one chunk in memory at a
    time). `add` takes chunks in order; anything else restarts or is refused."""

    def __init__(self, path: Path, index: int, term: int) -> None:
        self.path = path
        self.index = index
        self.term = term
        self.next_seq = 0
        self.complete = False
        self.bytes = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()/complete

    def add(self, data: bytes) -> None:
        """Stage one chunk (raises SnapshotError if damaged or not the next one)."""
        chunk = decode_chunk(data)
        if chunk.seq != self.next_seq or self.complete:
            raise SnapshotError(f"snapshot chunk {chunk.seq} where {self.next_seq} was expected")
        self._file.write(_LEN.pack(len(data)))
        self._file.write(data)
        self.bytes += len(data)
        self.next_seq += 1
        if chunk.final:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self.complete = True

    def pairs(self) -> Iterator[tuple[bytes, bytes]]:
        """Every staged pair, in order, read back one chunk at a time."""
        with open(self.path, "rb") as f:
            while header := f.read(_LEN.size):
                (length,) = _LEN.unpack(header)
                yield from decode_chunk(f.read(length)).pairs

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        self.path.unlink(missing_ok=True)
