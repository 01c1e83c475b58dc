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
    c.propose("a", b"w0")  # a group in use: awake, so no wake-up heartbeats below
    c.sent.clear()
    c["a"].propose(b"w1", c.now)
    c["a"].propose(b"w2", c.now)  # two proposals of one round share their messages
    c.deliver()
    appends = [m for m in c.sent if m.kind == MsgKind.APPEND]
    # One APPEND carrying both entries, then one carrying only the new commit index.
    assert sorted((m.dst, len(m.entries)) for m in appends) == [("b", 0), ("b", 2), ("c", 0), ("c", 2)]
    assert {m.commit for m in appends if not m.entries} == {c["a"].commit}
    assert c.applied_data("b") == c.applied_data("c") == [b"w0", b"w1", b"w2"]


def test_a_commit_notice_is_not_answered_but_new_entries_are() -> None:
    """The follower's answer to the entries told the leader all a commit notice could:
    the notice costs one message per follower, not two."""
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w0")  # a group in use: awake, so no wake-up heartbeats below
    c.sent.clear()
    c.propose("a", b"w1")
    responses = [m for m in c.sent if m.kind == MsgKind.APPEND_RESP]
    assert sorted(m.src for m in responses) == ["b", "c"]  # one each: for the entry only
    assert all(m.index == c["a"].log.last_index for m in responses)
    assert c.applied_data("b") == c.applied_data("c") == [b"w0", b"w1"]
    # The leader still knows both followers hold everything, and keeps committing.
    assert {p: pr.match for p, pr in c["a"].progress.items()} == {"b": 3, "c": 3}
    c.propose("a", b"w2")
    assert c.applied_data("b") == c.applied_data("c") == [b"w0", b"w1", b"w2"]
