"""The replication core alone, in memory, on one core: no disk, no network.

Run: .venv/bin/python bench/bench_replication_core.py [--seconds 3] [--payload-bytes 200]
     [--batches 1,16,128] [--groups 4000]

1. Proposals per CPU-second through one 3-replica group, all three replicas in this
   process: the leader proposes `batch` entries, the messages of all three replicas are
   coalesced into envelopes, expanded and stepped on the other side, until the batch is
   committed and applied on the leader. This is the protocol's own CPU cost per write
   (checksums included, three replicas' worth), measured in CPU time so the machine's
   other load does not decide it.
2. 4,000 groups per node, three nodes, one leader node: after the groups go idle and
   quiesce, the cost of the node's tick (every 50 ms) as a share of one core; and, for
   comparison, one simulated second of the same groups kept awake (heartbeats every
   200 ms), with the number of messages and of coalesced envelopes that second needs;
   then node `a` dies and node liveness tells b and c: the simulated time until every
   group has a new leader, and the CPU that takes (a lower bound on real failover time
   is the larger of the two, the CPU split over the two nodes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

from partita.storage.replication import (
    Message,
    MultiReplica,
    ReplicationConfig,
    Role,
    bootstrap_state,
    coalesce,
    expand,
)

NODES = ("a", "b", "c")
TICK = 0.05


def _cluster(groups: int, config: ReplicationConfig) -> dict[str, MultiReplica]:
    members = {n: Role.FULL for n in NODES}
    hosts = {n: MultiReplica(n, config) for n in NODES}
    for g in range(groups):
        for i, node in enumerate(NODES):
            hosts[node].add_group(f"g{g}", bootstrap_state(members), now=-10.0, seed=g * 3 + i)
    return hosts


def _pump(hosts: dict[str, MultiReplica], now: float, max_rounds: int = 100) -> tuple[int, int]:
    """Deliver until quiet; returns (messages, envelopes) carried. Messages to a node not
    in `hosts` (a dead one) are lost."""
    messages = envelopes = 0
    for _ in range(max_rounds):
        out: list[Message] = [m for host in hosts.values() for rd in host.ready() for m in rd.messages]
        if not out:
            return messages, envelopes
        messages += len(out)
        for env in coalesce(out):
            envelopes += 1
            if env.dst not in hosts:
                continue
            for m in expand(env):
                hosts[m.dst].step(m, now)
    raise RuntimeError("messages still flowing")


def _elect_a(hosts: dict[str, MultiReplica], now: float) -> None:
    for group in hosts["a"].replicas:
        hosts["a"].campaign(group, now)
    _pump(hosts, now)
    assert len(hosts["a"].leading()) == len(hosts["a"].replicas)


def proposals_per_second(batch: int, seconds: float, payload: bytes) -> tuple[float, int]:
    config = ReplicationConfig(quiesce_after=1e9)
    hosts = _cluster(1, config)
    now = 0.0
    _elect_a(hosts, now)
    leader = hosts["a"]
    committed = 0
    # CPU time, not wall time: the figure is the protocol's cost per write, and this
    # shared machine's other load would otherwise decide it.
    start = time.process_time()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(batch):
            leader.propose("g0", payload, now)
        _pump(hosts, now)
        committed += batch
    elapsed = time.process_time() - start
    replica = leader.replicas["g0"]
    assert replica.commit == replica.log.last_index  # every proposal committed
    return committed / elapsed, replica.commit


def idle_groups(groups: int) -> dict[str, float]:
    config = ReplicationConfig(heartbeat_interval=0.2, quiesce_after=2.0)
    hosts = _cluster(groups, config)
    now = 0.0
    _elect_a(hosts, now)
    # Awake: one simulated second of heartbeats for every group.
    messages = envelopes = 0
    awake_cpu = 0.0
    for _ in range(round(1.0 / TICK)):
        now += TICK
        t0 = time.process_time()
        for host in hosts.values():
            host.tick(now)
        m, e = _pump(hosts, now)
        awake_cpu += time.process_time() - t0
        messages += m
        envelopes += e
    # Let them go quiet.
    for _ in range(round(3.0 / TICK)):
        now += TICK
        for host in hosts.values():
            host.tick(now)
        _pump(hosts, now)
    assert all(host.active_groups == 0 for host in hosts.values()), "groups did not quiesce"
    ticks = 2000
    t0 = time.process_time()
    for _ in range(ticks):
        now += TICK
        for host in hosts.values():
            host.tick(now)
        _pump(hosts, now)
    idle_cpu = (time.process_time() - t0) / len(hosts)  # per node
    # Node a dies: b and c hear it from node liveness and elect a leader for every group.
    survivors = {n: hosts[n] for n in ("b", "c")}
    died = now
    t0 = time.process_time()
    for host in survivors.values():
        host.node_liveness("a", False, now)
    failover_messages = 0
    while sum(len(h.leading()) for h in survivors.values()) < groups and now - died < 30:
        now += TICK
        for host in survivors.values():
            host.tick(now)
        failover_messages += _pump(survivors, now)[0]
    failover_cpu = time.process_time() - t0
    assert sum(len(h.leading()) for h in survivors.values()) == groups, "failover did not finish"
    return {
        "failover_simulated_s": now - died,
        "failover_cpu_s_2_nodes": failover_cpu,
        "failover_messages": failover_messages,
        "awake_cpu_share_3_nodes": awake_cpu / 1.0,
        "awake_messages_per_s": messages,
        "awake_envelopes_per_s": envelopes,
        "idle_tick_us_per_node": idle_cpu / ticks * 1e6,
        "idle_cpu_share_per_node": idle_cpu / ticks / TICK,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--payload-bytes", type=int, default=200)
    parser.add_argument("--batches", default="1,16,128")
    parser.add_argument("--groups", type=int, default=4000)
    args = parser.parse_args()
    payload = bytes(args.payload_bytes)
    for batch in (int(b) for b in args.batches.split(",")):
        rate, committed = proposals_per_second(batch, args.seconds, payload)
        print(
            f"3-replica group, batch {batch:>4}: {rate:>9,.0f} proposals committed per CPU-second "
            f"({committed:,} entries)"
        )
    figures = idle_groups(args.groups)
    print(
        f"{args.groups} groups x 3 nodes, awake for 1 s: {figures['awake_cpu_share_3_nodes']:.1%} of a core for all "
        f"three nodes, {figures['awake_messages_per_s']:,} messages in {figures['awake_envelopes_per_s']:,} envelopes"
    )
    print(
        f"{args.groups} groups quiesced: {figures['idle_tick_us_per_node']:.1f} us per node per tick "
        f"({TICK * 1000:.0f} ms) = {figures['idle_cpu_share_per_node']:.3%} of a core per node"
    )
    print(
        f"node a dies, {args.groups} groups fail over to b and c: every group has a leader after "
        f"{figures['failover_simulated_s']:.2f} s of (simulated) time, {figures['failover_cpu_s_2_nodes']:.2f} CPU-s "
        f"for both nodes, {figures['failover_messages']:,} messages"
    )


if __name__ == "__main__":
    main()
