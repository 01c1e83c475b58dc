"""A leader keeps one append in flight per follower: what is proposed while a follower's
answer is on its way leaves with that answer, in one message (docs/replication.md,
"One append in flight"). A lost append or answer costs a heartbeat, never the entries."""

from __future__ import annotations

from partita.storage.replication import Message, MsgKind, Role
from tests.unit.storage.replication.harness import Cluster

THREE = ["a", "b", "c"]


def _in_use(c: Cluster) -> Cluster:
    """`a` leads with a committed write in its term: awake, every follower caught up."""
    c.elect("a")
    c.propose("a", b"w0")
    c.sent.clear()
    return c


def _appends(c: Cluster, dst: str) -> list[Message]:
    return [m for m in c.sent if m.kind == MsgKind.APPEND and m.dst == dst]


def _deliver_one(c: Cluster, m: Message) -> None:
    c.in_flight.remove(m)
    c.nodes[m.dst].replica.step(m, c.now)
    c.flush()


def test_proposals_made_while_an_append_is_unanswered_wait_for_its_answer() -> None:
    c = _in_use(Cluster(THREE))
    c["a"].propose(b"w1", c.now)
    c.flush()
    assert [len(m.entries) for m in _appends(c, "b")] == [1]
    c["a"].propose(b"w2", c.now)
    c.flush()
    c["a"].propose(b"w3", c.now)
    c.flush()
    # Still one append each: w2 and w3 wait for the answers to w1.
    assert [len(m.entries) for m in _appends(c, "b")] == [1]
    assert [len(m.entries) for m in _appends(c, "c")] == [1]
    c.deliver()
    # The answer to w1 sent w2 and w3 together; then only the commit notice followed.
    assert [len(m.entries) for m in _appends(c, "b")] == [1, 2, 0]
    assert [len(m.entries) for m in _appends(c, "c")] == [1, 2, 0]
    assert c.applied_data("b") == c.applied_data("c") == [b"w0", b"w1", b"w2", b"w3"]
    assert c["a"].commit == c["a"].log.last_index


def test_a_lost_append_is_sent_again_after_the_next_heartbeat() -> None:
    c = _in_use(Cluster(THREE))
    c["a"].propose(b"w1", c.now)
    c.flush()
    lost = next(m for m in c.in_flight if m.kind == MsgKind.APPEND and m.dst == "b")
    c.in_flight.remove(lost)
    c["a"].propose(b"w2", c.now)
    c.deliver()
    # c answered and holds both; b waits for its answer to an append it never got.
    assert c.applied_data("c") == [b"w0", b"w1", b"w2"]
    assert c.applied_data("b") == [b"w0"]
    c.advance(c.config.heartbeat_interval * 2)
    assert c.applied_data("b") == [b"w0", b"w1", b"w2"]
    assert c["a"].progress["b"].match == c["a"].log.last_index


def test_a_follower_answering_after_the_commit_still_gets_the_commit_notice() -> None:
    """Its answer was on its way when the other follower's made the commit: the notice
    of that commit waits for the answer instead of being lost."""
    c = _in_use(Cluster(THREE))
    c["a"].propose(b"w1", c.now)
    c.flush()
    for follower in ("b", "c"):
        _deliver_one(c, next(m for m in c.in_flight if m.dst == follower))
    # b's answer first: the leader commits w1 and tells b; c's answer is still on its way.
    _deliver_one(c, next(m for m in c.in_flight if m.src == "b"))
    assert c["a"].commit == c["a"].log.last_index
    assert c.applied_data("c") == [b"w0"]
    c.deliver()  # c's answer, then the notice it brings about; the clock never moves
    assert c.applied_data("c") == [b"w0", b"w1"]
    assert not any(m.kind == MsgKind.HEARTBEAT for m in c.sent)
    # One notice each, no append without news.
    assert [len(m.entries) for m in _appends(c, "b")] == [1, 0]
    assert [len(m.entries) for m in _appends(c, "c")] == [1, 0]


def test_a_new_member_is_probed_at_once() -> None:
    """A member just added has had no append yet: proposals reach it without waiting."""
    c = _in_use(Cluster(["a", "b", "c", "d"], members={n: Role.FULL for n in THREE}))
    c["a"].propose_membership({n: Role.FULL for n in ["a", "b", "c", "d"]}, c.now)
    c.deliver()
    c.propose("a", b"w1")
    assert c.applied_data("d")[-1:] == [b"w1"]
