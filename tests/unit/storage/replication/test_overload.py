"""An overloaded node must not start elections because it is slow itself: the host
passes its event-loop lag into the core, which stretches election timeouts by it and
keeps a late leader from stepping down for want of a quorum."""

from __future__ import annotations

from partita.storage.replica_host import LoopLag
from partita.storage.replication import (
    Message,
    MultiReplica,
    ReplicationConfig,
    Role,
    bootstrap_state,
    coalesce,
    expand,
)
from tests.unit.storage.replication.harness import CONFIG, Cluster

THREE = ["a", "b", "c"]


def _tick_all(c: Cluster, names: list[str], seconds: float, loop_lag: float) -> None:
    for _ in range(round(seconds / 0.05)):
        c.now += 0.05
        for n in names:
            if n not in c.down:
                c[n].tick(c.now, loop_lag)
        c.deliver()


def test_a_late_loop_stretches_the_election_timeout_by_its_lag() -> None:
    c = Cluster(THREE)
    c.elect("a")
    c.propose("a", b"w")  # in use: awake, so followers time out on missing heartbeats
    c.crash("a")
    # Without lag a new leader comes within 2 election timeouts (test_leases_and_reads);
    # with 3 s of lag nobody campaigns for at least election_timeout + 3 s.
    _tick_all(c, ["b", "c"], CONFIG.election_timeout + 2.9, loop_lag=3.0)
    assert c.leaders() == []
    assert c["b"].counters.elections_started == c["c"].counters.elections_started == 0
    _tick_all(c, ["b", "c"], 2 * CONFIG.election_timeout + 0.5, loop_lag=3.0)
    assert len(c.leaders()) == 1


def test_a_leader_whose_loop_is_late_does_not_step_down_for_want_of_a_quorum() -> None:
    for loop_lag, still_leads in ((0.0, False), (0.5, True)):
        c = Cluster(THREE)
        c.elect("a")
        c.propose("a", b"w")
        c.isolate("a")  # its followers' answers do not arrive (as if unread, overloaded)
        _tick_all(c, ["a"], 3 * CONFIG.election_timeout, loop_lag)
        assert c["a"].is_leader == still_leads


def _multi(node: str, groups: int, config: ReplicationConfig) -> MultiReplica:
    host = MultiReplica(node, config)
    members = {n: Role.FULL for n in THREE}
    for g in range(groups):
        host.add_group(f"g{g}", bootstrap_state(members), now=-10.0, seed=g * 10 + THREE.index(node))
    return host


def test_groups_on_overloaded_nodes_keep_their_leaders_when_the_lag_is_passed_in() -> None:
    """Every message takes 1.5 s to be read (more than the election timeout), as on a
    machine whose nodes get a fraction of a core. Told their loops' lag, the nodes keep
    every group's leader and term; not told, they depose leaders and terms climb: the
    storm that kept 4,000 restarted groups from settling (docs/benchmarks.md)."""
    config = ReplicationConfig(quiesce_when_elected=False, quiesce_after=100.0)
    delay = 1.5
    outcomes = {}
    for lag_known in (False, True):
        hosts = {n: _multi(n, 30, config) for n in THREE}
        now = 0.0
        queue: list[tuple[float, Message]] = []
        for _ in range(round(20.0 / 0.05)):
            now += 0.05
            slow = now > 5.0  # settle first with prompt delivery, then overload
            lag = delay if (slow and lag_known) else 0.0
            for host in hosts.values():
                host.tick(now, lag)
            for _ in range(20):
                sent = [m for host in hosts.values() for rd in host.ready() for m in rd.messages]
                for env in coalesce(sent):
                    queue.extend((now + (delay if slow else 0.0), m) for m in expand(env))
                due = [m for at, m in queue if at <= now]
                queue = [(at, m) for at, m in queue if at > now]
                if not due:
                    break
                for m in due:
                    hosts[m.dst].step(m, now)
            if now <= 5.0:
                terms_before = {g: r.term for g, r in hosts["a"].replicas.items()}
        terms_after = {g: r.term for g, r in hosts["a"].replicas.items()}
        outcomes[lag_known] = sum(terms_after[g] - terms_before[g] for g in terms_before)
    assert outcomes[True] == 0, outcomes
    assert outcomes[False] > 0, outcomes


def test_the_loop_lag_is_the_worst_lateness_of_the_recent_ticks() -> None:
    lag = LoopLag(interval=0.05, window=2.0)
    assert lag.sample(0.0) == 0.0
    assert lag.sample(0.05) == 0.0  # on time
    assert abs(lag.sample(1.55) - 1.45) < 1e-9  # a 1.5 s stall
    assert abs(lag.sample(1.6) - 1.45) < 1e-9  # remembered
    now = 1.6
    while now < 3.5:
        now += 0.05
        lag.sample(now)
    assert lag.sample(now + 0.05) < 0.01  # forgotten after the window
