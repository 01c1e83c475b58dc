"""A leader tells its followers of a commit at once, not with the next heartbeat:
followers serve eventually consistent reads, and a read right after an acknowledged
write should find it applied there (docs/replication.md, "Fresh eventual reads")."""

from __future__ import annotations

from partita.storage.replication import MsgKind
from tests.unit.storage.replication.harness import Cluster

THREE = ["a", "b", "c"]


def test_followers_apply_a_write_without_waiting_for_a_heartbeat() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w1")  # delivered until quiet, and the clock never moves: no heartbeat
    assert c.applied_data("a") == [b"w1"]
    assert c.applied_data("b") == [b"w1"] and c.applied_data("c") == [b"w1"]
    assert not any(m.kind == MsgKind.HEARTBEAT for m in c.sent[-6:])


def test_the_commit_notice_is_one_append_per_follower_per_commit() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.sent.clear()
    c["a"].propose(b"w1", c.now)
    c["a"].propose(b"w2", c.now)  # two proposals of one round share their messages
    c.deliver()
    appends = [m for m in c.sent if m.kind == MsgKind.APPEND]
    # One APPEND carrying both entries, then one carrying only the new commit index.
    assert sorted((m.dst, len(m.entries)) for m in appends) == [("b", 0), ("b", 2), ("c", 0), ("c", 2)]
    assert {m.commit for m in appends if not m.entries} == {c["a"].commit}
    assert c.applied_data("b") == c.applied_data("c") == [b"w1", b"w2"]
