"""The replication core: a sans-I/O Raft-style consensus protocol for many groups per
node (docs/replication.md describes the API and how the storage node wires it in).
"""

from .coalesce import Beat, BeatAck, Envelope, coalesce, expand
from .config import ReplicationConfig
from .core import MembershipChangeRefused, NotLeader, Replica, State
from .multi import MultiReplica
from .types import (
    SENDABLE_BEFORE_PERSIST,
    ChecksumMismatch,
    Entry,
    EntryKind,
    HardState,
    Message,
    MsgKind,
    PersistedState,
    ReadRefused,
    ReadState,
    Ready,
    Role,
    SnapshotMeta,
    bootstrap_state,
    make_entry,
)

__all__ = [
    "SENDABLE_BEFORE_PERSIST",
    "Beat",
    "BeatAck",
    "ChecksumMismatch",
    "Entry",
    "EntryKind",
    "Envelope",
    "HardState",
    "MembershipChangeRefused",
    "Message",
    "MsgKind",
    "MultiReplica",
    "NotLeader",
    "PersistedState",
    "ReadRefused",
    "ReadState",
    "Ready",
    "Replica",
    "ReplicationConfig",
    "Role",
    "SnapshotMeta",
    "State",
    "bootstrap_state",
    "coalesce",
    "expand",
    "make_entry",
]
