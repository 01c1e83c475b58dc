"""Envelopes on the node-pair stream: every field survives the round trip, and damage
or truncation is refused before anything is decoded."""

from __future__ import annotations

import pytest

from partita.storage.replication.coalesce import Beat, BeatAck, Envelope, coalesce, expand
from partita.storage.replication.types import EntryKind, Message, MsgKind, Role, make_entry, snapshot_meta
from partita.storage.replication.wire import WireError, decode_envelope, encode_envelope


def sample_messages() -> list[Message]:
    entries = (make_entry(3, 8, EntryKind.NORMAL, b"effects"), make_entry(3, 9, EntryKind.NOOP, b""))
    return [
        Message(MsgKind.HEARTBEAT, "1/p0", "a", "b", 3, commit=7, round=11, index=9, quiesce=True),
        Message(MsgKind.HEARTBEAT_RESP, "1/p0", "a", "b", 3, round=11),
        Message(MsgKind.APPEND, "1/p1", "a", "b", 3, index=7, log_term=2, entries=entries, commit=7, round=4),
        Message(MsgKind.PRE_VOTE_RESP, "2/p0", "a", "b", 5, reject=True, leader_alive=True),
        Message(MsgKind.VOTE, "2/p1", "a", "b", 6, index=4, log_term=5, force=True),
        Message(
            MsgKind.SNAPSHOT,
            "2/p2",
            "a",
            "b",
            6,
            snapshot=snapshot_meta(40, 5, {"a": Role.FULL, "b": Role.FULL, "c#1": Role.LOG}),
            snapshot_data=b"\x00checkpoint bytes",
        ),
    ]


def test_every_message_kind_survives_coalescing_encoding_and_expansion() -> None:
    messages = sample_messages()
    (envelope,) = coalesce(messages)
    decoded = decode_envelope(encode_envelope(envelope))
    assert decoded == envelope
    assert sorted(expand(decoded), key=repr) == sorted(messages, key=repr)


def test_an_empty_envelope_round_trips() -> None:
    envelope = Envelope("node-a", "node-ü", (), (), ())
    assert decode_envelope(encode_envelope(envelope)) == envelope


def test_a_flipped_bit_anywhere_fails_the_envelope_checksum() -> None:
    raw = encode_envelope(coalesce(sample_messages())[0])
    for position in (1, 7, len(raw) // 2, len(raw) - 1):
        damaged = bytearray(raw)
        damaged[position] ^= 0x10
        with pytest.raises(WireError):
            decode_envelope(bytes(damaged))


def test_truncated_or_foreign_bytes_are_refused() -> None:
    raw = encode_envelope(coalesce(sample_messages())[0])
    for bad in (b"", raw[:3], raw[:-1], b"\x09" + raw[1:], raw + b"x"):
        with pytest.raises(WireError):
            decode_envelope(bad)


def test_heartbeats_of_many_groups_cost_a_few_dozen_bytes_each() -> None:
    beats = tuple(Beat(f"{t}/p{p}", 4, 100, 7, 100, False) for t in range(250) for p in range(4))
    acks = tuple(BeatAck(f"{t}/p{p}", 4, 7) for t in range(250) for p in range(4))
    raw = encode_envelope(Envelope("a", "b", beats, acks, ()))
    assert decode_envelope(raw).beats == beats
    assert len(raw) < 1000 * (48 + 8) + 1000 * (16 + 8) + 64
