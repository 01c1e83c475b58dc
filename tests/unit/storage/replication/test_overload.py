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


def _failover_under_delay(delay: float, groups: int) -> tuple[float | None, int, int]:
    """Groups settle and quiesce with prompt delivery; then the node leading the most
    dies, node liveness tells the survivors at once, and from then on every message
    between them takes `delay` to be read (their loops are that late, and they know:
    the lag is passed in). Returns (seconds from the verdict until every group the dead
    node led has a new leader, None if not within 10 s; elections started; groups the
    dead node led)."""
    config = ReplicationConfig()
    hosts = {n: _multi(n, groups, config) for n in THREE}
    now = 0.0
    for _ in range(round(10.0 / 0.05)):  # settle: elected and quiesced
        now += 0.05
        for host in hosts.values():
            host.tick(now)
        for _ in range(20):
            sent = [m for host in hosts.values() for rd in host.ready() for m in rd.messages]
            if not sent:
                break
            for m in sent:
                hosts[m.dst].step(m, now)
    assert all(h.active_groups == 0 for h in hosts.values())
    dead = max(hosts, key=lambda n: len(hosts[n].leading()))
    led = set(hosts[dead].leading())
    survivors = {n: h for n, h in hosts.items() if n != dead}

    def elections() -> int:
        return sum(r.counters.elections_started for h in survivors.values() for r in h.replicas.values())

    before = elections()
    for host in survivors.values():
        host.node_liveness(dead, False, now)
    verdict = now
    queue: list[tuple[float, Message]] = []
    while now < verdict + 10.0:
        now += 0.05
        for host in survivors.values():
            host.tick(now, delay)
        for _ in range(20):
            sent = [m for host in survivors.values() for rd in host.ready() for m in rd.messages]
            queue.extend((now + delay, m) for m in sent if m.dst in survivors)
            due = [m for at, m in queue if at <= now]
            queue = [(at, m) for at, m in queue if at > now]
            if not due:
                break
            for m in due:
                survivors[m.dst].step(m, now)
        if led <= {g for h in survivors.values() for g in h.leading()}:
            return now - verdict, elections() - before, len(led)
    return None, elections() - before, len(led)


def test_a_dead_nodes_groups_fail_over_without_split_votes_however_late_the_loops() -> None:
    """With every message between the two survivors read 0.6 s late (the lag passed in),
    a pre-vote and a vote round take 2.4 s, and the second successor's turn (half an
    election timeout plus the lag) comes while the first's are in flight: both are
    pre-candidates and grant each other. The one later in the stable order steps back
    when it grants the other's pre-vote, so every group elects once, in about those two
    round trips. Without that, both campaigned in the same term and split the vote, again
    and again: the 29 groups were not all led after 10 s, with 138 elections."""
    delay = 0.6
    took, elections, led = _failover_under_delay(delay, groups=60)
    assert led >= 15
    assert took is not None and took <= 5 * delay + 0.3, (took, elections, led)  # lag + 2 round trips
    assert elections == led  # one election per group: no split votes
