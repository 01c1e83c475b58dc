"""Node-pair coalescing: the messages all groups send in one tick become one envelope per
destination node, with heartbeats and their responses shrunk to a few integers each
(cockroach's coalesced heartbeats), so thousands of groups mean one message per peer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import GroupId, Message, MsgKind, NodeId


@dataclass(frozen=True, slots=True)
class Beat:
    """A HEARTBEAT without the fields it never uses."""

    group: GroupId
    term: int
    commit: int
    round: int
    index: int
    quiesce: bool


@dataclass(frozen=True, slots=True)
class BeatAck:
    group: GroupId
    term: int
    round: int


@dataclass(frozen=True, slots=True)
class Envelope:
    src: NodeId
    dst: NodeId
    beats: tuple[Beat, ...]
    acks: tuple[BeatAck, ...]
    messages: tuple[Message, ...]

    def __len__(self) -> int:
        return len(self.beats) + len(self.acks) + len(self.messages)


def coalesce(messages: list[Message]) -> list[Envelope]:
    """One envelope per (source, destination) pair, in first-seen order; the messages of
    each group keep their relative order inside each of the three lists."""
    beats: dict[tuple[NodeId, NodeId], list[Beat]] = {}
    acks: dict[tuple[NodeId, NodeId], list[BeatAck]] = {}
    others: dict[tuple[NodeId, NodeId], list[Message]] = {}
    order: dict[tuple[NodeId, NodeId], None] = {}
    for m in messages:
        pair = (m.src, m.dst)
        order.setdefault(pair, None)
        if m.kind == MsgKind.HEARTBEAT:
            beats.setdefault(pair, []).append(Beat(m.group, m.term, m.commit, m.round, m.index, m.quiesce))
        elif m.kind == MsgKind.HEARTBEAT_RESP:
            acks.setdefault(pair, []).append(BeatAck(m.group, m.term, m.round))
        else:
            others.setdefault(pair, []).append(m)
    return [
        Envelope(
            src,
            dst,
            tuple(beats.get((src, dst), ())),
            tuple(acks.get((src, dst), ())),
            tuple(others.get((src, dst), ())),
        )
        for src, dst in order
    ]


def expand(envelope: Envelope) -> list[Message]:
    """The messages an envelope stands for, as the receiving groups step them."""
    src, dst = envelope.src, envelope.dst
    out = [
        Message(
            MsgKind.HEARTBEAT,
            b.group,
            src,
            dst,
            b.term,
            commit=b.commit,
            round=b.round,
            index=b.index,
            quiesce=b.quiesce,
        )
        for b in envelope.beats
    ]
    out.extend(
        Message(MsgKind.HEARTBEAT_RESP, a.group, src, dst, a.term, round=a.round) for a in envelope.acks
    )
    out.extend(envelope.messages)
    return out
