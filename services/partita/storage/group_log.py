"""The WAL payload of a replication group: a log entry, a hard state or an erasure,
tagged with its group.

The node keeps one physical WAL for every group it hosts (one group commit, one fsync
for all of them); each record says which group's log it belongs to, so the log can be
read back by (group, index) and truncated per group. An entry record carries the
consensus core's `Entry` whole, its CRC32C included, and the CRC is verified when the
record is decoded (on replay and on every read for a follower), on top of the WAL's own
per-record checksum. Pure: bytes in, values out.

Layout (big-endian)::

    0  1  format: ENTRY_FORMAT or HARD_STATE_FORMAT
    1  2  group id length g
    3  g  group id (UTF-8)
    entry:      term u64, index u64, kind u8, crc u32, then the entry's data
    hard state: term u64, commit u64, then the vote (UTF-8, empty for none), and if a
                leader is known, a NUL byte and the leader (UTF-8; records written
                before the leader was kept end with the vote)
    erasure:    range count u32, then each key range as lo length u32, lo, hi length
                u32, hi

An erasure ends the group's replica on this node: every record of the group before it
is ignored on replay, and the key ranges it names are deleted from RocksDB (again, if
the crash came before the deletion was flushed; `Engine.erase_group`).

A group with no hard-state record is a single-member local log (replication factor 1,
or the node-local group): every entry in it was committed when it was appended.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from partita.storage.replication.types import Entry, EntryKind, GroupId, HardState

# Bytes 0xA1/0xA2 never start a bare effects record (its first byte is an effect kind,
# 1..4), which is what the WAL held before groups: `decode_record` tells them apart.
ENTRY_FORMAT = 0xA1
HARD_STATE_FORMAT = 0xA2
ERASE_FORMAT = 0xA3

# Node-local writes that belong to no partition's group: dropping the data of a table
# that left this node is done by each replica on its own, never replicated.
LOCAL_GROUP: GroupId = "local"

_GROUP_HEADER = struct.Struct(">BH")
_ENTRY = struct.Struct(">QQBI")
_HARD_STATE = struct.Struct(">QQ")
_LEN = struct.Struct(">I")


class RecordError(ValueError):
    """A WAL payload that is not a well-formed group record."""


def group_of(table_id: int, partition_id: str) -> GroupId:
    """The replication group of a table's partition."""
    return f"{table_id}/{partition_id}"


@dataclass(frozen=True, slots=True)
class EntryRecord:
    group: GroupId
    entry: Entry


@dataclass(frozen=True, slots=True)
class HardStateRecord:
    group: GroupId
    hard_state: HardState


@dataclass(frozen=True, slots=True)
class EraseRecord:
    group: GroupId
    ranges: tuple[tuple[bytes, bytes], ...]  # [lo, hi) key ranges


def _group_header(kind: int, group: GroupId) -> bytes:
    raw = group.encode()
    return _GROUP_HEADER.pack(kind, len(raw)) + raw


def encode_entry(group: GroupId, entry: Entry) -> bytes:
    return b"".join(
        (
            _group_header(ENTRY_FORMAT, group),
            _ENTRY.pack(entry.term, entry.index, entry.kind, entry.crc),
            entry.data,
        )
    )


def encode_hard_state(group: GroupId, state: HardState) -> bytes:
    tail = (state.vote or "").encode()
    if state.leader is not None:
        tail += b"\0" + state.leader.encode()
    return _group_header(HARD_STATE_FORMAT, group) + _HARD_STATE.pack(state.term, state.commit) + tail


def encode_erase(group: GroupId, ranges: tuple[tuple[bytes, bytes], ...]) -> bytes:
    out = [_group_header(ERASE_FORMAT, group), _LEN.pack(len(ranges))]
    for lo, hi in ranges:
        out += [_LEN.pack(len(lo)), lo, _LEN.pack(len(hi)), hi]
    return b"".join(out)


def is_group_record(payload: bytes) -> bool:
    return bool(payload) and payload[0] in (ENTRY_FORMAT, HARD_STATE_FORMAT, ERASE_FORMAT)


def decode_record(payload: bytes) -> EntryRecord | HardStateRecord | EraseRecord:
    """The record in `payload`; raises RecordError if malformed and ChecksumMismatch if
    an entry fails its CRC32C."""
    if len(payload) < _GROUP_HEADER.size:
        raise RecordError("truncated group record")
    kind, glen = _GROUP_HEADER.unpack_from(payload)
    body = _GROUP_HEADER.size + glen
    if len(payload) < body:
        raise RecordError("truncated group id")
    group = payload[_GROUP_HEADER.size : body].decode()
    if kind == ENTRY_FORMAT:
        if len(payload) < body + _ENTRY.size:
            raise RecordError("truncated entry header")
        term, index, entry_kind, crc = _ENTRY.unpack_from(payload, body)
        try:
            kind_value = EntryKind(entry_kind)
        except ValueError:
            raise RecordError(f"unknown entry kind {entry_kind}") from None
        entry = Entry(term, index, kind_value, payload[body + _ENTRY.size :], crc)
        entry.verify()
        return EntryRecord(group, entry)
    if kind == HARD_STATE_FORMAT:
        if len(payload) < body + _HARD_STATE.size:
            raise RecordError("truncated hard state")
        term, commit = _HARD_STATE.unpack_from(payload, body)
        vote_bytes, _, leader_bytes = payload[body + _HARD_STATE.size :].partition(b"\0")
        vote = vote_bytes.decode() or None
        leader = leader_bytes.decode() or None
        return HardStateRecord(group, HardState(term, vote, commit, leader))
    if kind == ERASE_FORMAT:
        return EraseRecord(group, _decode_ranges(payload, body))
    raise RecordError(f"unknown group record format {kind:#x}")


def _decode_ranges(payload: bytes, at: int) -> tuple[tuple[bytes, bytes], ...]:
    def field(at: int) -> tuple[bytes, int]:
        if len(payload) < at + _LEN.size:
            raise RecordError("truncated erasure")
        (length,) = _LEN.unpack_from(payload, at)
        start = at + _LEN.size
        if len(payload) < start + length:
            raise RecordError("truncated erasure")
        return payload[start : start + length], start + length

    if len(payload) < at + _LEN.size:
        raise RecordError("truncated erasure")
    (count,) = _LEN.unpack_from(payload, at)
    at += _LEN.size
    ranges = []
    for _ in range(count):
        lo, at = field(at)
        hi, at = field(at)
        ranges.append((lo, hi))
    if at != len(payload):
        raise RecordError("trailing bytes in an erasure")
    return tuple(ranges)


class GroupLocations:
    """Where a group's entries are in the WAL: (index, lsn) pairs in index order.

    An entry appended again at an index replaces it and everything after (log
    matching); compaction drops the pairs at or below an index. Gaps are allowed: a
    local write whose append was cancelled before it reached the log never happened.
    """

    __slots__ = ("indexes", "lsns")

    def __init__(self) -> None:
        self.indexes: list[int] = []
        self.lsns: list[int] = []

    def record(self, index: int, lsn: int) -> None:
        if self.indexes and index <= self.indexes[-1]:
            cut = bisect.bisect_left(self.indexes, index)
            del self.indexes[cut:], self.lsns[cut:]
        self.indexes.append(index)
        self.lsns.append(lsn)

    def lsn_of(self, index: int) -> int | None:
        i = bisect.bisect_left(self.indexes, index)
        if i < len(self.indexes) and self.indexes[i] == index:
            return self.lsns[i]
        return None

    def first_lsn_after(self, index: int) -> int | None:
        """The lsn of the first entry above `index` (None if there is none)."""
        i = bisect.bisect_right(self.indexes, index)
        return self.lsns[i] if i < len(self.lsns) else None

    def between(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """(index, lsn) of the entries with lo <= index <= hi."""
        a, b = bisect.bisect_left(self.indexes, lo), bisect.bisect_right(self.indexes, hi)
        return list(zip(self.indexes[a:b], self.lsns[a:b], strict=True))

    def compact(self, index: int) -> None:
        cut = bisect.bisect_right(self.indexes, index)
        del self.indexes[:cut], self.lsns[:cut]

    @property
    def last_index(self) -> int:
        return self.indexes[-1] if self.indexes else 0
