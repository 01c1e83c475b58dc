"""Leader leases, read-index reads, the gray-failure check and leadership transfer."""

from __future__ import annotations

import pytest

from partita.storage.replication import Message, MsgKind, NotLeader, ReplicationConfig
from tests.unit.storage.replication.harness import CONFIG, Cluster

THREE = ["a", "b", "c"]


def test_the_lease_runs_from_when_the_acknowledged_round_was_sent_shortened_for_drift() -> None:
    c = Cluster(THREE)
    c.elect("a")
    sent_at = c.now
    assert c["a"].has_lease(c.now)
    rho = CONFIG.max_clock_drift
    assert c["a"].lease_until == pytest.approx(sent_at + CONFIG.lease_duration * (1 - rho) / (1 + rho))
    # Responses arriving later do not move the start: it is the send time that counts.
    c.now += 0.05
    c.deliver()
    assert c["a"].lease_until == pytest.approx(sent_at + CONFIG.lease_duration * (1 - rho) / (1 + rho))


def test_no_lease_without_a_majority_acknowledging_a_round() -> None:
    c = Cluster(THREE)
    c["a"].election_deadline = c.now
    c["a"].tick(c.now)
    c.deliver(drop={"HEARTBEAT_RESP", "APPEND_RESP"})
    assert c["a"].is_leader
    assert not c["a"].has_lease(c.now)


def test_no_lease_before_the_leader_commits_an_entry_of_its_term() -> None:
    c = Cluster(THREE)
    c["a"].election_deadline = c.now
    c["a"].tick(c.now)
    c.deliver(drop={"APPEND_RESP"})  # heartbeats acked, the no-op never acknowledged
    assert c["a"].is_leader and c["a"].commit == 0
    assert not c["a"].has_lease(c.now)


def test_a_cut_off_leader_loses_its_lease_before_a_new_leader_can_be_elected() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w")  # in use: awake, holding a lease from its heartbeats
    c.isolate("a")
    first_new_leader_at = None
    lease_end = None
    for _ in range(100):
        c.advance(0.05)
        if lease_end is None and not c["a"].has_lease(c.now):
            lease_end = c.now
        if first_new_leader_at is None and [n for n in c.leaders() if n != "a"]:
            first_new_leader_at = c.now
    assert lease_end is not None and first_new_leader_at is not None
    assert lease_end < first_new_leader_at


def test_a_follower_refuses_votes_while_it_promised_the_leader_and_says_why() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.flush()
    c.in_flight.clear()
    c["b"].step(_vote("c", "b", 2), c.now)
    (reply,) = c["b"].ready().messages
    assert reply.kind == MsgKind.VOTE_RESP and reply.reject and reply.leader_alive
    assert c["b"].term == 1  # the request's term was not adopted


def _vote(src: str, dst: str, term: int) -> Message:
    return Message(MsgKind.VOTE, "g", src, dst, term, index=99, log_term=99)


def test_a_restarted_replica_promises_a_full_lease_before_voting() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.crash("b")
    c.restart("b")
    c["b"].step(_vote("c", "b", 5), c.now)
    (reply,) = c["b"].ready().messages
    assert reply.reject and reply.leader_alive
    c.now += CONFIG.lease_duration
    c["b"].step(_vote("c", "b", 5), c.now)
    (reply,) = c["b"].ready().messages
    assert not reply.reject


def test_gray_failure_a_follower_cut_from_the_leader_alone_does_not_start_an_election() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w")  # in use: awake
    c.cut.add(frozenset(("a", "c")))  # a and b fine, b and c fine, a-c broken
    c.advance(8.0)
    assert c.leaders() == ["a"]
    assert {c[n].term for n in THREE} == {1}
    assert c["c"].counters.elections_avoided > 0
    assert c["c"].counters.elections_started == 0


def test_read_index_waits_for_a_heartbeat_round_when_there_is_no_lease() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.now += CONFIG.lease_duration  # the lease ran out (no ticks)
    assert not c["a"].has_lease(c.now)
    c["a"].read(7, c.now)
    c.flush()
    assert c.nodes["a"].reads == []  # not before a majority confirmed leadership
    assert any(m.kind == MsgKind.HEARTBEAT for m in c.in_flight)
    c.deliver()
    assert [r.request_id for r in c.nodes["a"].reads] == [7]
    assert c["a"].counters.read_index_reads == 1


def test_lease_reads_are_answered_at_once_at_the_commit_index() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w")
    c["a"].read(1, c.now)
    c.flush()
    (read,) = c.nodes["a"].reads
    assert read.index == c["a"].commit == 2
    assert c["a"].counters.lease_reads == 1


def test_a_follower_refuses_strong_reads_with_a_leader_hint() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c["b"].read(3, c.now)
    c.flush()
    (refused,) = c.nodes["b"].refused
    assert refused.request_id == 3 and refused.leader == "a"


def test_pending_reads_are_refused_when_the_leader_steps_down() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.now += CONFIG.lease_duration
    c["a"].read(9, c.now)
    c.isolate("a")
    c.advance(5.0)
    assert [r.request_id for r in c.nodes["a"].refused] == [9]


def test_leadership_transfer_moves_the_leader_in_one_round_trip_and_forfeits_the_lease() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w")
    c["a"].transfer_leadership("b", c.now)
    assert not c["a"].has_lease(c.now)  # forfeited the moment TIMEOUT_NOW went out
    with pytest.raises(NotLeader) as refused:
        c["a"].propose(b"during", c.now)
    assert refused.value.leader == "b"
    c.deliver()  # no time passes
    assert c.leaders() == ["b"]
    assert c["b"].term == 2


def test_leadership_transfer_catches_a_lagging_target_up_first() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.isolate("c")
    for i in range(5):
        c.propose("a", f"w{i}".encode())
    c.heal()
    c["a"].transfer_leadership("c", c.now)
    c.deliver()
    assert c.leaders() == ["c"]
    assert c["c"].log.last_index >= 6


def test_leadership_transfer_refuses_a_log_replica_or_itself() -> None:
    c = Cluster(THREE)
    c.elect("a")
    with pytest.raises(ValueError):
        c["a"].transfer_leadership("a", c.now)
    with pytest.raises(ValueError):
        c["a"].transfer_leadership("zz", c.now)


def test_the_unsafe_knob_takes_the_whole_lease_and_the_safe_default_does_not() -> None:
    safe = ReplicationConfig(lease_duration=1.0, election_timeout=1.0, max_clock_drift=0.1)
    unsafe = ReplicationConfig(
        lease_duration=1.0, election_timeout=1.0, max_clock_drift=0.1, unsafe_ignore_clock_drift=True
    )
    assert safe.lease_duration_at_leader == pytest.approx(0.9 / 1.1)
    assert unsafe.lease_duration_at_leader == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_clock_drift": 1.0},
        {"max_clock_drift": -0.1},
        {"lease_duration": 2.0, "election_timeout": 1.0},
        {"heartbeat_interval": 1.0, "lease_duration": 1.0},
    ],
)
def test_config_refuses_timings_that_break_the_lease_argument(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ReplicationConfig(**kwargs)  # type: ignore[arg-type]


def test_with_the_default_timings_a_dead_leader_is_replaced_within_two_election_timeouts() -> None:
    """Failover with the default timings, the leader dying at different points of its
    heartbeat cycle: the first pre-vote finds every promise run out, so the new leader
    comes within the first candidate's timeout plus a round trip."""
    config = ReplicationConfig()
    for seed_shift in range(5):
        c = Cluster(["a", "b", "c"], config=config)
        c.elect("a")
        c.propose("a", b"w")  # in use, so not quiesced: followers time out on heartbeats
        c.advance(0.3 + 0.07 * seed_shift, step=0.01)
        c.crash("a")
        died = c.now
        for _ in range(400):
            c.advance(0.01, step=0.01)
            if c.leaders():
                break
        assert c.leaders(), "no new leader"
        assert c.now - died < 2 * config.election_timeout + 0.1


def test_a_group_of_one_commits_and_serves_reads_on_its_own() -> None:
    c = Cluster(["a"])
    c.elect("a")
    _, index = c.propose("a", b"solo")
    assert c["a"].commit == index
    c.now += 10 * CONFIG.lease_duration  # no lease left: the read goes by read-index
    c["a"].read(1, c.now)
    c.flush()
    assert [r.request_id for r in c.nodes["a"].reads] == [1]


def test_reads_of_one_batch_share_one_heartbeat_round() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.now += CONFIG.lease_duration
    for request_id in range(5):
        c["a"].read(request_id, c.now)
    c.flush()
    assert len([m for m in c.in_flight if m.kind == MsgKind.HEARTBEAT]) == 2  # one round, two peers
    c.deliver()
    assert sorted(r.request_id for r in c.nodes["a"].reads) == [0, 1, 2, 3, 4]


def _resumed_leader(c: Cluster) -> tuple[int, int]:
    """`a` led, answered by its followers for a while, then restarted and resumed its
    term: the newest round its last life sent, and the term."""
    c.elect("a")
    for i in range(10):
        c.propose("a", b"w%d" % i)
        c.advance(0.2)  # heartbeat rounds of a group in use
    old_round, term = c["a"].round, c["a"].term
    assert old_round >= 10
    c.crash("a")
    c.restart("a")
    assert c["a"].is_leader and c["a"].term == term
    return old_round, term


def _late_acks(c: Cluster, old_round: int, term: int) -> None:
    for peer in ("b", "c"):
        c["a"].step(Message(MsgKind.HEARTBEAT_RESP, "g", peer, "a", term, round=old_round), c.now)


def test_a_resumed_leader_takes_no_lease_from_answers_to_its_last_lifes_rounds() -> None:
    """Answers to rounds its previous process sent (queued on a peer's link while it
    was down, or late) are of the same term, but prove nothing about the rounds it
    sends now: counted, the first gave it a lease no follower had promised."""
    c = Cluster(THREE)
    old_round, term = _resumed_leader(c)
    c.in_flight.clear()  # its first round after the restart has not arrived anywhere yet
    _late_acks(c, old_round, term)
    assert not c["a"].has_lease(c.now)
    c.advance(0.2)
    assert c["a"].has_lease(c.now)


def test_a_resumed_leader_serves_strong_reads_whatever_answers_to_its_last_life_arrive() -> None:
    """Counted, a late answer named a round the new process had not sent: the newest
    round a majority acknowledged stayed one it never sent, its lease was never renewed
    and strong reads waited until its new rounds caught up (seconds of heartbeats in an
    idle group, far longer in a busy one)."""
    c = Cluster(THREE)
    old_round, term = _resumed_leader(c)
    c.deliver()
    _late_acks(c, old_round, term)
    c.advance(CONFIG.lease_duration + 0.1)
    c["a"].read(1, c.now)
    c.deliver()
    assert [r.request_id for r in c.nodes["a"].reads] == [1]
    assert c["a"].has_lease(c.now)
