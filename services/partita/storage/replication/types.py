"""The values that cross the consensus core's boundary: log entries, messages, the
persisted state a replica restarts from, and the Ready it hands its host.

Everything here is plain data (frozen where it travels), so the same values run under
the deterministic simulator and over the real transport.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

import google_crc32c

NodeId = str
GroupId = str


class ChecksumMismatch(ValueError):
    """A log entry whose CRC32C does not match its contents (corrupted on disk or wire)."""


class EntryKind(enum.IntEnum):
    NORMAL = 1  # the host's payload (a write's effects)
    NOOP = 2  # appended by a new leader to commit the entries of earlier terms
    MEMBERSHIP = 3  # data = encode_membership(new members)


class Role(enum.IntEnum):
    FULL = 1  # WAL + state machine; may lead
    LOG = 2  # WAL only: votes and acks for durability, applies nothing, never leads


_ENTRY_HEADER = struct.Struct(">QQB")


def entry_checksum(term: int, index: int, kind: EntryKind, data: bytes) -> int:
    header = _ENTRY_HEADER.pack(term, index, kind)
    return int(google_crc32c.extend(google_crc32c.value(header), data))


@dataclass(frozen=True, slots=True)
class Entry:
    term: int
    index: int
    kind: EntryKind
    data: bytes
    crc: int

    def verify(self) -> None:
        if entry_checksum(self.term, self.index, self.kind, self.data) != self.crc:
            raise ChecksumMismatch(f"entry {self.index} (term {self.term}) fails its CRC32C")


def make_entry(term: int, index: int, kind: EntryKind, data: bytes) -> Entry:
    return Entry(term, index, kind, data, entry_checksum(term, index, kind, data))


Members = dict[NodeId, Role]


def encode_membership(members: Members) -> bytes:
    return ",".join(f"{node}={role.name}" for node, role in sorted(members.items())).encode()


def decode_membership(data: bytes) -> Members:
    members: Members = {}
    for part in data.decode().split(","):
        node, _, role = part.partition("=")
        members[node] = Role[role]
    return members


def quorum(members: Members) -> int:
    """Every member votes and counts toward the write quorum, log replicas included."""
    return len(members) // 2 + 1


@dataclass(frozen=True, slots=True)
class HardState:
    """What must be on disk before any message that depends on it is sent."""

    term: int = 0
    vote: NodeId | None = None
    commit: int = 0
    # The leader of `term` as this replica last knew it (None: none known). A hint for
    # a restart, written without waiting; a replica that finds itself here resumes
    # leading `term` (it was elected in it, and no one else can be).
    leader: NodeId | None = None


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """The log position a snapshot stands for, and the membership in force there.

    The bytes of the snapshot (a RocksDB checkpoint of the range) are the host's: the
    core only says when one must be sent or installed.
    """

    index: int
    term: int
    members: tuple[tuple[NodeId, Role], ...]

    def member_map(self) -> Members:
        return dict(self.members)


def snapshot_meta(index: int, term: int, members: Members) -> SnapshotMeta:
    return SnapshotMeta(index, term, tuple(sorted(members.items())))


@dataclass(slots=True)
class PersistedState:
    """What a replica finds on its disk at start: survives crashes, unlike the rest."""

    hard_state: HardState
    snapshot: SnapshotMeta
    entries: list[Entry] = field(default_factory=list)


def bootstrap_state(members: Members) -> PersistedState:
    """A brand-new group: an empty log whose base (index 0) carries the first membership."""
    return PersistedState(HardState(), snapshot_meta(0, 0, members), [])


def inherited_state(members: Members) -> PersistedState:
    """A split child's group: its members start from data they already hold, which
    index 1 (term 1) stands for, so a member whose log starts at 0 is sent a snapshot."""
    return PersistedState(HardState(), snapshot_meta(1, 1, members), [])


class MsgKind(enum.IntEnum):
    APPEND = 1
    APPEND_RESP = 2
    HEARTBEAT = 3
    HEARTBEAT_RESP = 4
    PRE_VOTE = 5
    PRE_VOTE_RESP = 6
    VOTE = 7
    VOTE_RESP = 8
    SNAPSHOT = 9
    TIMEOUT_NOW = 10


# A leader's appends and heartbeats need nothing of its own write (Raft dissertation
# 10.2.1): the leader counts itself in the quorum at once, but what a round commits
# reaches a Ready only once the host has persisted the rounds before (it drains them one
# at a time), so nothing is applied, answered or told before the leader's own write. A
# leader sent entries its disk may then lack after a crash: it may resume its term after
# a restart only if it stopped cleanly (`Replica._restart_as`).
SENDABLE_BEFORE_PERSIST = frozenset({MsgKind.APPEND, MsgKind.HEARTBEAT})


@dataclass(frozen=True, slots=True)
class Message:
    kind: MsgKind
    group: GroupId
    src: NodeId
    dst: NodeId
    term: int
    # APPEND: the entry before `entries`; votes: the candidate's last entry;
    # APPEND_RESP: the follower's last matching index (or its hint when rejecting).
    index: int = 0
    log_term: int = 0
    entries: tuple[Entry, ...] = ()
    commit: int = 0
    reject: bool = False
    # Heartbeat round of the leader's lease and read-index; echoed by the follower.
    round: int = 0
    # PRE_VOTE_RESP: rejected because the voter still hears the leader (gray-failure check).
    leader_alive: bool = False
    # VOTE after TIMEOUT_NOW: the old leader gave its lease up, ignore promises to it.
    force: bool = False
    # HEARTBEAT: the group goes quiet until the next proposal (quiescence).
    quiesce: bool = False
    snapshot: SnapshotMeta | None = None
    # The host's snapshot bytes ride along SNAPSHOT messages; the core never reads them.
    snapshot_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ReadState:
    """A read may be served once the state machine has applied `index`."""

    request_id: int
    index: int


@dataclass(frozen=True, slots=True)
class ReadRefused:
    """This replica cannot serve the read; `leader` is its best guess (NOT_LEADER hint)."""

    request_id: int
    leader: NodeId | None


@dataclass(slots=True)
class Ready:
    """One batch of work for the host, in this order: persist `entries` (they replace the
    log from entries[0].index on) and `hard_state` and install `snapshot`; then send
    `messages`; then apply `committed`; then serve `reads`. Messages of the kinds in
    `SENDABLE_BEFORE_PERSIST` may leave before the persist.
    """

    group: GroupId
    entries: list[Entry] = field(default_factory=list)
    hard_state: HardState | None = None
    snapshot: SnapshotMeta | None = None
    messages: list[Message] = field(default_factory=list)
    committed: list[Entry] = field(default_factory=list)
    reads: list[ReadState] = field(default_factory=list)
    refused_reads: list[ReadRefused] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (
            self.entries
            or self.hard_state
            or self.snapshot
            or self.messages
            or self.committed
            or self.reads
            or self.refused_reads
        )
