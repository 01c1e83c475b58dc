"""A group's log in memory: entries after the last snapshot, and the base it starts from.

The host keeps the same entries in its WAL; this copy is what the core reads to
replicate, and `compact` drops the prefix a snapshot covers (per group, so one slow
group never pins another's log).
"""

from __future__ import annotations

import bisect

from .types import Entry, EntryKind, Members, SnapshotMeta, decode_membership


class RaftLog:
    __slots__ = ("base", "entries", "membership_indexes")

    def __init__(self, base: SnapshotMeta, entries: list[Entry]) -> None:
        self.base = base
        self.entries: list[Entry] = []
        # Indexes of MEMBERSHIP entries still in the log, ascending.
        self.membership_indexes: list[int] = []
        for expected, entry in enumerate(entries, start=base.index + 1):
            if entry.index != expected:
                raise ValueError(f"log has a hole: expected index {expected}, found {entry.index}")
            entry.verify()
            self.append(entry)

    @property
    def first_index(self) -> int:
        return self.base.index + 1

    @property
    def last_index(self) -> int:
        return self.base.index + len(self.entries)

    @property
    def last_term(self) -> int:
        return self.entries[-1].term if self.entries else self.base.term

    def term_at(self, index: int) -> int | None:
        """The term of entry `index`, or None if it is compacted away or beyond the end."""
        if index == self.base.index:
            return self.base.term
        if index < self.base.index or index > self.last_index:
            return None
        return self.entries[index - self.base.index - 1].term

    def entry(self, index: int) -> Entry:
        return self.entries[index - self.base.index - 1]

    def slice(self, lo: int, hi: int) -> list[Entry]:
        """Entries lo..hi inclusive (both within the log)."""
        return self.entries[lo - self.base.index - 1 : hi - self.base.index]

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """Raft 5.4.1: a candidate's log is at least as up to date as ours."""
        return last_term > self.last_term or (last_term == self.last_term and last_index >= self.last_index)

    def append(self, entry: Entry) -> None:
        assert entry.index == self.last_index + 1
        self.entries.append(entry)
        if entry.kind == EntryKind.MEMBERSHIP:
            self.membership_indexes.append(entry.index)

    def merge(self, prev_index: int, entries: tuple[Entry, ...]) -> int | None:
        """Append a leader's entries after prev_index (whose term already matched).

        Returns the first index written (the host persists from there), or None if every
        entry was already present. An existing entry is replaced only on a term conflict
        (Raft 5.3), so a delayed, duplicated APPEND never truncates newer entries.
        """
        for offset, entry in enumerate(entries):
            index = prev_index + 1 + offset
            if index <= self.base.index:
                continue
            existing = self.term_at(index)
            if existing == entry.term:
                continue
            self._truncate_from(index)
            for new in entries[offset:]:
                self.append(new)
            return index
        return None

    def _truncate_from(self, index: int) -> None:
        del self.entries[index - self.base.index - 1 :]
        del self.membership_indexes[bisect.bisect_left(self.membership_indexes, index) :]

    def compact(self, base: SnapshotMeta) -> None:
        """Drop entries up to base.index (covered by a snapshot taken there)."""
        assert self.base.index <= base.index <= self.last_index
        del self.entries[: base.index - self.base.index]
        del self.membership_indexes[: bisect.bisect_right(self.membership_indexes, base.index)]
        self.base = base

    def reset(self, base: SnapshotMeta) -> None:
        """Replace the whole log with a snapshot's base (snapshot install)."""
        self.base = base
        self.entries = []
        self.membership_indexes = []

    def members_at(self, index: int) -> Members:
        """The membership in force at `index`: the last MEMBERSHIP entry at or before it
        (a membership takes effect when appended, Raft dissertation 4.1)."""
        at = bisect.bisect_right(self.membership_indexes, index)
        if at == 0:
            return self.base.member_map()
        return decode_membership(self.entry(self.membership_indexes[at - 1]).data)

    def newest_membership_index(self) -> int:
        """Index of the newest MEMBERSHIP entry in the log (0 if only the base's)."""
        return self.membership_indexes[-1] if self.membership_indexes else 0
