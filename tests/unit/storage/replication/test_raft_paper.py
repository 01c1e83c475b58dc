"""The Raft paper's guarantees (Ongaro & Ousterhout, section 5), one test group per
property, against the sans-I/O core on an in-memory cluster."""

from __future__ import annotations

import pytest

from partita.storage.replication import (
    EntryKind,
    HardState,
    Message,
    MsgKind,
    PersistedState,
    Replica,
    Role,
    State,
    make_entry,
)
from partita.storage.replication.types import snapshot_meta
from tests.unit.storage.replication.harness import CONFIG, Cluster

THREE = ["a", "b", "c"]

# ---------------------------------------------------------------- 5.2 election safety


def test_election_safety_a_leader_is_elected_with_a_majority_and_others_follow_it() -> None:
    c = Cluster(THREE)
    c.elect("a")
    assert c.leaders() == ["a"]
    assert {c[n].leader for n in THREE} == {"a"}
    assert {c[n].term for n in THREE} == {1}


def test_election_safety_a_minority_cannot_elect_a_leader() -> None:
    c = Cluster(THREE)
    c.isolate("a")
    c["a"].election_deadline = c.now
    c["a"].tick(c.now)
    c.advance(5.0)
    assert not c["a"].is_leader
    # Pre-vote: the isolated node never even raised its term.
    assert c["a"].term == 0


def test_election_safety_at_most_one_leader_per_term_across_many_elections() -> None:
    c = Cluster(["a", "b", "c", "d", "e"])
    seen: dict[int, str] = {}
    for round_ in range(12):
        victim = ["a", "b", "c", "d", "e"][round_ % 5]
        c.isolate(victim)
        c.advance(4.0)
        c.heal()
        c.advance(1.0)
        for name in c.leaders():
            assert seen.setdefault(c[name].term, name) == name


def test_election_safety_a_voter_grants_one_vote_per_term() -> None:
    c = Cluster(THREE)
    c.advance(0.0)
    voter = c["c"]
    voter.promise_until = c.now  # no leader to be loyal to
    for candidate in ("a", "b"):
        voter.step(Message(MsgKind.VOTE, "g", candidate, "c", 1, index=0, log_term=0), c.now)
    replies = [m for m in voter.ready().messages if m.kind == MsgKind.VOTE_RESP]
    assert [m.reject for m in replies] == [False, True]
    assert voter.vote == "a"


def test_pre_vote_keeps_a_rejoining_node_from_disturbing_the_leader() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.isolate("c")
    c.advance(6.0)  # c times out over and over, but only pre-votes
    c.heal()
    c.advance(1.0)
    assert c.leaders() == ["a"]
    assert c["a"].term == 1


# ---------------------------------------------------------------- 5.3 log matching


def _follower(entries_terms: list[int]) -> Replica:
    members = {"a": Role.FULL, "b": Role.FULL, "c": Role.FULL}
    entries = [
        make_entry(t, i, EntryKind.NORMAL, f"{i}@{t}".encode()) for i, t in enumerate(entries_terms, 1)
    ]
    state = PersistedState(
        HardState(term=max(entries_terms, default=0)), snapshot_meta(0, 0, members), entries
    )
    return Replica("g", "b", state, CONFIG, 0.0, seed=1)


LOG_MATCHING = [
    # (follower log terms, prev index, prev term, new entry terms, accepted, resulting log terms)
    ([], 0, 0, [1], True, [1]),
    ([1, 1], 2, 1, [2], True, [1, 1, 2]),
    ([1, 1], 3, 1, [2], False, [1, 1]),  # gap: prev beyond the log
    ([1, 1], 2, 2, [2], False, [1, 1]),  # prev term mismatch
    ([1, 1, 1], 1, 1, [3], True, [1, 3]),  # conflict at 2: truncated and replaced
    ([1, 2, 2], 1, 1, [2], True, [1, 2, 2]),  # duplicate of what is there: nothing truncated
    ([1, 2, 2], 0, 0, [1, 2], True, [1, 2, 2]),  # a delayed, shorter APPEND keeps newer entries
]


@pytest.mark.parametrize(("log", "prev", "prev_term", "new", "accepted", "after"), LOG_MATCHING)
def test_log_matching_appends_only_after_a_matching_entry(
    log: list[int], prev: int, prev_term: int, new: list[int], accepted: bool, after: list[int]
) -> None:
    f = _follower(log)
    leader_term = max([*log, *new, prev_term])
    entries = tuple(
        make_entry(t, prev + i, EntryKind.NORMAL, f"{prev + i}@{t}".encode()) for i, t in enumerate(new, 1)
    )
    f.step(
        Message(MsgKind.APPEND, "g", "a", "b", leader_term, index=prev, log_term=prev_term, entries=entries),
        0.1,
    )
    (reply,) = [m for m in f.ready().messages if m.kind == MsgKind.APPEND_RESP]
    assert reply.reject is (not accepted)
    assert [e.term for e in f.log.entries] == after


def test_log_matching_followers_end_with_the_leaders_log_after_churn() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"x1")
    c.isolate("a")
    c["a"].propose(b"lost", c.now)  # never reaches a majority
    c.advance(5.0)
    (new_leader,) = [n for n in c.leaders() if n != "a"]
    c.propose(new_leader, b"x2")
    c.heal()
    c.advance(2.0)
    logs = {n: [(e.term, e.index, e.data) for e in c[n].log.entries] for n in THREE}
    assert logs["a"] == logs["b"] == logs["c"]
    assert b"lost" not in [e[2] for e in logs["a"]]


# ---------------------------------------------------------------- 5.4.1 leader completeness

UP_TO_DATE = [
    # (voter last term, voter last index, candidate last term, candidate last index, grant)
    (1, 5, 2, 1, True),  # higher last term wins whatever the length
    (2, 1, 1, 5, False),
    (2, 3, 2, 3, True),
    (2, 3, 2, 4, True),
    (2, 3, 2, 2, False),
]


@pytest.mark.parametrize(("v_term", "v_index", "c_term", "c_index", "grant"), UP_TO_DATE)
def test_leader_completeness_votes_only_for_an_up_to_date_log(
    v_term: int, v_index: int, c_term: int, c_index: int, grant: bool
) -> None:
    voter = _follower([1] * (v_index - 1) + [v_term])
    voter.promise_until = 0.0
    voter.step(Message(MsgKind.VOTE, "g", "c", "b", 10, index=c_index, log_term=c_term), 5.0)
    (reply,) = voter.ready().messages
    assert reply.reject is (not grant)


def test_an_abstaining_replica_grants_no_vote_and_never_campaigns() -> None:
    """A replica whose log was emptied by an install cut short (the host sets it) is as
    good as down for elections: with an empty log it would vote for anyone."""
    voter = _follower([])
    voter.promise_until = 0.0
    voter.abstaining = True
    for kind in (MsgKind.PRE_VOTE, MsgKind.VOTE):
        voter.step(Message(kind, "g", "c", "b", 10, index=0, log_term=0), 5.0)
    assert [m.reject for m in voter.ready().messages] == [True, True]
    assert voter.vote is None
    voter.election_deadline = 5.0
    voter.tick(6.0)
    assert voter.state == State.FOLLOWER and not voter.ready().messages
    voter.abstaining = False
    voter.step(Message(MsgKind.VOTE, "g", "c", "b", 10, index=0, log_term=0), 7.0)
    assert [m.reject for m in voter.ready().messages] == [False]


def test_leader_completeness_a_new_leader_holds_every_committed_entry() -> None:
    c = Cluster(THREE)
    c.elect("a")
    for i in range(5):
        c.propose("a", f"w{i}".encode())
    committed = [e for e in c["a"].log.entries if e.index <= c["a"].commit]
    c.crash("a")
    c.advance(5.0)
    (leader,) = c.leaders()
    assert [c[leader].log.entry(e.index) for e in committed] == committed


# ---------------------------------------------------------------- 5.4.2 committing entries from previous terms


def test_a_leader_commits_earlier_terms_entries_only_through_an_entry_of_its_own_term() -> None:
    """Raft 5.4.2 (Figure 8): an entry of term 1 stored on a majority is not committed by
    a term-2 leader counting replicas; it commits once the leader's own entry does."""
    c = Cluster(THREE)
    old = [make_entry(1, 1, EntryKind.NOOP, b""), make_entry(1, 2, EntryKind.NORMAL, b"old")]
    members = {n: Role.FULL for n in THREE}
    c.nodes["b"].disk = PersistedState(HardState(term=1, commit=1), snapshot_meta(0, 0, members), list(old))
    c.restart("b")
    c.crash("a")
    c["b"].promise_until = c["c"].promise_until = c.now
    c["b"].election_deadline = c.now
    c["b"].tick(c.now)
    c.deliver(drop={"APPEND_RESP"})
    assert c["b"].is_leader and c["b"].term == 2
    c.in_flight.clear()
    # c now holds index 2 (term 1), so a majority (b, c) has it...
    c["b"].step(Message(MsgKind.APPEND_RESP, "g", "c", "b", 2, index=2), c.now)
    assert c["b"].commit == 1
    # ...but it commits only with the leader's own no-op at index 3.
    c["b"].step(Message(MsgKind.APPEND_RESP, "g", "c", "b", 2, index=3), c.now)
    assert c["b"].commit == 3


def test_a_new_leader_commits_its_noop_before_anything_counts_as_committed_in_its_term() -> None:
    c = Cluster(THREE)
    c.elect("a")
    noop = c["a"].log.entry(1)
    assert noop.kind == EntryKind.NOOP and noop.term == 1
    assert c["a"].commit == 1


# ---------------------------------------------------------------- 5.4.3 state machine safety


def test_state_machine_safety_every_replica_applies_the_same_entries_in_the_same_order() -> None:
    c = Cluster(THREE)
    c.elect("a")
    for round_ in range(6):
        (leader,) = c.leaders() or [None]
        if leader is not None:
            for i in range(3):
                c[leader].propose(f"{round_}-{i}".encode(), c.now)
            c.deliver()
        c.isolate(THREE[round_ % 3])
        c.advance(4.0)
        c.heal()
        c.advance(2.0)
    applied = {n: [(e.index, e.term, e.data) for e in c.nodes[n].applied] for n in THREE}
    shortest = min(len(a) for a in applied.values())
    assert shortest > 5
    assert applied["a"][:shortest] == applied["b"][:shortest] == applied["c"][:shortest]


def test_state_machine_safety_a_restarted_replica_reapplies_its_committed_log_exactly() -> None:
    c = Cluster(THREE)
    c.elect("a")
    for i in range(4):
        c.propose("a", f"w{i}".encode())
    c.advance(0.5)
    before = c.applied_data("b")
    c.crash("b")
    c.restart("b")
    c.advance(1.0)
    assert c.applied_data("b") == before
    assert c["b"].state == State.FOLLOWER
