"""Envelopes as bytes: what one node sends another in one frame of their node-pair
stream (`coalesce` makes the envelopes, `expand` undoes them on the far side).

A compact binary layout rather than protobuf or pickle: heartbeats of thousands of
groups travel in every envelope, so each costs a few integers; and nothing decoded
from the network is ever executed. The whole envelope carries a CRC32C, checked before
anything is decoded; each entry keeps its own CRC32C, which the core verifies when it
steps the message (and again before it sends one), so an entry is checked on every hop.
Pure: bytes in, values out.

Layout (big-endian): version u8, crc32c u32 of the rest, src, dst, then the beats,
the acks and the messages, each list as a u32 count and its items. Strings are a u16
length and UTF-8; byte strings a u32 length and the bytes. A message's src and dst are
the envelope's.
"""

from __future__ import annotations

import struct

import google_crc32c

from .coalesce import Beat, BeatAck, Envelope
from .types import Entry, EntryKind, Message, MsgKind, Role, SnapshotMeta

VERSION = 1

_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">BI")
_BEAT = struct.Struct(">QQQQB")
_ACK = struct.Struct(">QQ")
_MSG = struct.Struct(">BQQQQQB")
_ENTRY = struct.Struct(">QQBII")  # term, index, kind, crc, data length
_SNAPSHOT = struct.Struct(">QQH")

_REJECT, _LEADER_ALIVE, _FORCE, _QUIESCE, _HAS_SNAPSHOT = 1, 2, 4, 8, 16


class WireError(ValueError):
    """Bytes that are not a well-formed envelope (damaged, truncated, or foreign)."""


def encode_envelope(envelope: Envelope) -> bytes:
    out = bytearray()
    _str(out, envelope.src)
    _str(out, envelope.dst)
    # Beats and acks inline, with their packers bound once: thousands per envelope.
    u16, beat, ack = _U16.pack, _BEAT.pack, _ACK.pack
    out += _U32.pack(len(envelope.beats))
    for b in envelope.beats:
        raw = b.group.encode()
        out += u16(len(raw))
        out += raw
        out += beat(b.term, b.commit, b.round, b.index, b.quiesce)
    out += _U32.pack(len(envelope.acks))
    for a in envelope.acks:
        raw = a.group.encode()
        out += u16(len(raw))
        out += raw
        out += ack(a.term, a.round)
    out += _U32.pack(len(envelope.messages))
    for m in envelope.messages:
        _message(out, m)
    body = bytes(out)
    return _HEAD.pack(VERSION, google_crc32c.value(body)) + body


def _str(out: bytearray, text: str) -> None:
    raw = text.encode()
    out += _U16.pack(len(raw))
    out += raw


def _message(out: bytearray, m: Message) -> None:
    flags = (
        (_REJECT if m.reject else 0)
        | (_LEADER_ALIVE if m.leader_alive else 0)
        | (_FORCE if m.force else 0)
        | (_QUIESCE if m.quiesce else 0)
        | (_HAS_SNAPSHOT if m.snapshot is not None else 0)
    )
    out += _MSG.pack(m.kind, m.term, m.index, m.log_term, m.commit, m.round, flags)
    _str(out, m.group)
    out += _U32.pack(len(m.entries))
    for e in m.entries:
        out += _ENTRY.pack(e.term, e.index, e.kind, e.crc, len(e.data))
        out += e.data
    if m.snapshot is not None:
        s = m.snapshot
        out += _SNAPSHOT.pack(s.index, s.term, len(s.members))
        for node, role in s.members:
            _str(out, node)
            out += _U8.pack(role)
    out += _U32.pack(len(m.snapshot_data))
    out += m.snapshot_data


class _Reader:
    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def take(self, fmt: struct.Struct) -> tuple[int, ...]:
        if self.offset + fmt.size > len(self.data):
            raise WireError("truncated envelope")
        values = fmt.unpack_from(self.data, self.offset)
        self.offset += fmt.size
        return tuple(values)

    def raw(self, length: int) -> bytes:
        end = self.offset + length
        if end > len(self.data):
            raise WireError("truncated envelope")
        out = self.data[self.offset : end]
        self.offset = end
        return out

    def text(self) -> str:
        (length,) = self.take(_U16)
        try:
            return self.raw(length).decode()
        except UnicodeDecodeError:
            raise WireError("a string that is not UTF-8") from None

    def count(self) -> int:
        (n,) = self.take(_U32)
        return n


def decode_envelope(data: bytes) -> Envelope:
    if len(data) < _HEAD.size:
        raise WireError("truncated envelope")
    version, crc = _HEAD.unpack_from(data)
    if version != VERSION:
        raise WireError(f"unknown envelope version {version}")
    if google_crc32c.value(data[_HEAD.size :]) != crc:
        raise WireError("envelope fails its CRC32C")
    r = _Reader(data, _HEAD.size)
    try:
        src, dst = r.text(), r.text()
        beats, r.offset = _read_beats(data, r.offset)
        acks, r.offset = _read_acks(data, r.offset)
        messages = [_read_message(r, src, dst) for _ in range(r.count())]
    except struct.error:  # a fixed-size field past the end
        raise WireError("truncated envelope") from None
    except ValueError as exc:  # an unknown enum value, a string that is not UTF-8
        if isinstance(exc, WireError):
            raise
        raise WireError(str(exc)) from None
    if r.offset != len(data):
        raise WireError("trailing bytes after the envelope")
    return Envelope(src, dst, tuple(beats), tuple(acks), tuple(messages))


def _read_beats(data: bytes, offset: int) -> tuple[list[Beat], int]:
    """The beats from `offset`, and the offset after them. Not through `_Reader`: a
    method call per field was most of an envelope's decoding at thousands of beats."""
    (n,) = _U32.unpack_from(data, offset)
    offset += 4
    end = len(data)
    u16, beat, size = _U16.unpack_from, _BEAT.unpack_from, _BEAT.size
    beats = []
    for _ in range(n):
        (length,) = u16(data, offset)
        start = offset + 2
        offset = start + length
        if offset > end:
            raise WireError("truncated envelope")
        term, commit, round_, index, quiesce = beat(data, offset)
        beats.append(Beat(data[start:offset].decode(), term, commit, round_, index, bool(quiesce)))
        offset += size
    return beats, offset


def _read_acks(data: bytes, offset: int) -> tuple[list[BeatAck], int]:
    (n,) = _U32.unpack_from(data, offset)
    offset += 4
    end = len(data)
    u16, ack, size = _U16.unpack_from, _ACK.unpack_from, _ACK.size
    acks = []
    for _ in range(n):
        (length,) = u16(data, offset)
        start = offset + 2
        offset = start + length
        if offset > end:
            raise WireError("truncated envelope")
        term, round_ = ack(data, offset)
        acks.append(BeatAck(data[start:offset].decode(), term, round_))
        offset += size
    return acks, offset


def _read_message(r: _Reader, src: str, dst: str) -> Message:
    kind, term, index, log_term, commit, round_, flags = r.take(_MSG)
    group = r.text()
    entries = []
    for _ in range(r.count()):
        e_term, e_index, e_kind, e_crc, length = r.take(_ENTRY)
        entries.append(Entry(e_term, e_index, EntryKind(e_kind), r.raw(length), e_crc))
    snapshot = None
    if flags & _HAS_SNAPSHOT:
        s_index, s_term, n = r.take(_SNAPSHOT)
        members = []
        for _ in range(n):
            node = r.text()
            (role,) = r.take(_U8)
            members.append((node, Role(role)))
        snapshot = SnapshotMeta(s_index, s_term, tuple(members))
    snapshot_data = r.raw(r.count())
    return Message(
        MsgKind(kind),
        group,
        src,
        dst,
        term,
        index=index,
        log_term=log_term,
        entries=tuple(entries),
        commit=commit,
        reject=bool(flags & _REJECT),
        round=round_,
        leader_alive=bool(flags & _LEADER_ALIVE),
        force=bool(flags & _FORCE),
        quiesce=bool(flags & _QUIESCE),
        snapshot=snapshot,
        snapshot_data=snapshot_data,
    )
