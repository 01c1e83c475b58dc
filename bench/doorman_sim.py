"""Virtual-time simulation of a Doorman tree, and the report in docs/doorman.md.

    python -m bench.doorman_sim            # runs every scenario, writes docs/doorman.md + PNGs

The servers are the real `ServerCore` (the same code `partita doorman` runs), driven
by a discrete-event loop with a virtual clock; RPCs are direct calls (no latency);
clients behave as the client library does (refresh at the granted interval, send
`has` while the lease lasts, back off exponentially when their server is down, and
use nothing once a lease lapses: pessimistic mode). Scenarios follow seed 002's
"收敛和缺口" section: one root with five drifting clients, and a three-level tree of
45 clients for one simulated hour with demand spikes, global demand shifts and server
crashes.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from partita._proto import doorman_pb2 as pb
from partita.doorman.connection import Backoff
from partita.doorman.core import ServerCore
from partita.doorman.repository import ResourceRepository, template

RESOURCE = "resource0"
SAMPLE_EVERY = 0.25
CONVERGED_WITHIN = 0.02  # of capacity: |allocated - achievable| below this is "converged"
CONVERGED_FOR = 5.0  # ... for this long


@dataclass(frozen=True)
class Config:
    name: str
    capacity: float = 500.0
    shape: tuple[int, ...] = ()  # children per level below the root; () = clients on the root
    clients_per_leaf: int = 5
    base_wants: float = 100.0
    drift: float = 0.1  # relative step of each client's random walk, every drift_every s
    drift_every: float = 10.0
    duration: float = 1800.0
    warmup: float = 120.0  # the first learning mode (nothing to learn) is not measured
    refresh_interval: int = 4  # at the root; halved at every level towards the clients
    lease_length: int = 60
    spikes: int = 0  # a client wants 100 more, for 2-5 minutes
    crashes: int = 0  # a master dies; a standby with empty state takes over (learning mode)
    failover: float = 10.0  # seconds without a master: election TTL 5 s plus detection
    shifts: tuple[tuple[float, float], ...] = ()  # (time, factor) on region 0's clients
    seed: int = 1


@dataclass
class Node:
    name: str
    parent: Node | None
    repository: ResourceRepository | None
    core: ServerCore
    up: bool = True
    upstream_scheduled: bool = False


@dataclass
class SimClient:
    name: str
    server: Node
    base: float
    wants: float
    capacity: float = 0.0
    expiry: float = 0.0
    backoff: Backoff = field(default_factory=Backoff)
    spike: float = 0.0
    factor: float = 1.0

    def demand(self) -> float:
        return self.wants * self.factor + self.spike

    def has(self, now: float) -> float:
        return self.capacity if self.expiry > now else 0.0


@dataclass
class Result:
    config: Config
    times: list[float]
    allocated: list[float]
    demand: list[float]
    capacity: list[float]
    per_client: dict[str, list[float]]
    events: list[tuple[float, str]]

    def achievable(self, i: int) -> float:
        return min(self.capacity[i], self.demand[i])

    def measured(self) -> list[int]:
        return [i for i, t in enumerate(self.times) if t >= self.config.warmup]

    def share_allocated(self) -> float:
        """Mean of allocated / achievable (= capacity whenever demand exceeds it)."""
        idx = self.measured()
        return sum(min(self.allocated[i], self.achievable(i)) / self.achievable(i) for i in idx) / len(idx)

    def shortfalls(self) -> tuple[int, float, float]:
        """(episodes, peak, mean during episodes) of allocation above capacity, in %."""
        over = [i for i in self.measured() if self.allocated[i] > self.capacity[i] + 1e-6]
        if not over:
            return 0, 100.0, 100.0
        episodes = 1 + sum(1 for a, b in itertools.pairwise(over) if b != a + 1)
        ratios = [100 * self.allocated[i] / self.capacity[i] for i in over]
        return episodes, max(ratios), sum(ratios) / len(ratios)

    def convergence(self) -> list[tuple[float, str, float]]:
        """Seconds from each event until allocation stays within CONVERGED_WITHIN of
        what is achievable for CONVERGED_FOR seconds (inf: never)."""
        out = []
        tolerance = CONVERGED_WITHIN * self.config.capacity
        need = round(CONVERGED_FOR / SAMPLE_EVERY)
        for at, what in self.events:
            if at < self.config.warmup or what.endswith(" back"):
                continue  # a failover is measured from the crash
            start = next((i for i, t in enumerate(self.times) if t >= at), None)
            if start is None:
                continue
            run = 0
            converged = math.inf
            for i in range(start, len(self.times)):
                if abs(self.allocated[i] - self.achievable(i)) <= tolerance:
                    run += 1
                    if run >= need:
                        converged = self.times[i - need + 1] - at
                        break
                else:
                    run = 0
            out.append((at, what, converged))
        return out

    def slowest(self, crashes: bool) -> float:
        return max((s for _, what, s in self.convergence() if ("crashed" in what) == crashes), default=0.0)

    def mean_gap(self) -> float:
        """Mean |allocated - achievable| over capacity: how closely grants track wants."""
        idx = self.measured()
        return sum(abs(self.achievable(i) - self.allocated[i]) for i in idx) / len(idx) / self.config.capacity


class Simulation:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.events: list[tuple[float, str]] = []
        root_repo = ResourceRepository(
            pb.ResourceRepository(
                resources=[
                    template(
                        "*",
                        config.capacity,
                        pb.Algorithm.FAIR_SHARE,
                        lease_length=config.lease_length,
                        refresh_interval=config.refresh_interval,
                    )
                ]
            )
        )
        self.root = self._node("root", None, root_repo)
        self.nodes = [self.root]
        level = [self.root]
        for depth, fanout in enumerate(config.shape):
            below = []
            for parent in level:
                for k in range(fanout):
                    child = self._node(f"{parent.name}/{depth}.{k}", parent, None)
                    below.append(child)
            self.nodes += below
            level = below
        self.leaves = level
        self.clients = [
            SimClient(f"{leaf.name}/c{j}", leaf, config.base_wants, config.base_wants)
            for leaf in self.leaves
            for j in range(config.clients_per_leaf)
        ]
        self.region0 = [c for c in self.clients if c.name.startswith("root/0.0")] or self.clients[:1]

    def _node(self, name: str, parent: Node | None, repository: ResourceRepository | None) -> Node:
        core = ServerCore(name, repository)
        core.on_election(True, name, self.now)
        return Node(name, parent, repository, core)

    # --- event loop --------------------------------------------------------------------

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (when, next(self._seq), action))

    def run(self) -> Result:
        c = self.config
        for client in self.clients:
            self.at(self.rng.uniform(0, 2), lambda client=client: self._refresh(client))  # type: ignore[misc]
        for node in self.nodes:
            if node.parent is not None:
                self._schedule_upstream(node, self.rng.uniform(0, 2))
        self.at(c.drift_every, self._drift)
        self._plan_spikes()
        self._plan_crashes()
        for when, factor in c.shifts:
            self.at(when, lambda factor=factor: self._shift(factor))  # type: ignore[misc]
        times: list[float] = []
        allocated: list[float] = []
        demand: list[float] = []
        capacity: list[float] = []
        per_client: dict[str, list[float]] = {cl.name: [] for cl in self.clients}

        def sample() -> None:
            times.append(self.now)
            allocated.append(sum(cl.has(self.now) for cl in self.clients))
            demand.append(sum(cl.demand() for cl in self.clients))
            capacity.append(c.capacity)
            for cl in self.clients:
                per_client[cl.name].append(cl.has(self.now))
            if self.now + SAMPLE_EVERY <= c.duration:
                self.at(self.now + SAMPLE_EVERY, sample)

        self.at(0.0, sample)
        while self._queue:
            when, _, action = heapq.heappop(self._queue)
            if when > c.duration:
                break
            self.now = when
            action()
        return Result(c, times, allocated, demand, capacity, per_client, sorted(self.events))

    # --- actors ------------------------------------------------------------------------

    def _refresh(self, client: SimClient) -> None:
        now = self.now
        server = client.server
        if not server.up:
            self.at(now + client.backoff.failed(), lambda: self._refresh(client))
            return
        request = pb.GetCapacityRequest(client_id=client.name)
        r = request.resource.add(resource_id=RESOURCE, priority=1, wants=client.demand())
        if client.expiry > now:
            r.has.CopyFrom(
                pb.Lease(expiry_time=int(client.expiry), refresh_interval=1, capacity=client.capacity)
            )
        response = server.core.get_capacity(request, now)
        client.backoff.succeeded()
        gets = response.response[0].gets
        client.capacity, client.expiry = gets.capacity, float(gets.expiry_time)
        self.at(now + max(1.0, float(gets.refresh_interval)), lambda: self._refresh(client))

    def _schedule_upstream(self, node: Node, delay: float) -> None:
        if not node.upstream_scheduled:
            node.upstream_scheduled = True
            self.at(self.now + delay, lambda: self._upstream(node))

    def _upstream(self, node: Node) -> None:
        node.upstream_scheduled = False
        if not node.up:
            return  # rescheduled when it comes back
        assert node.parent is not None
        request = node.core.upstream_request(self.now)
        if request is None or not request.resource:
            wait = 1.0
        elif node.parent.up:
            response = node.parent.core.get_server_capacity(request, self.now)
            wait = node.core.apply_upstream(response, self.now)
        else:
            wait = node.core.upstream_failed()
        self._schedule_upstream(node, wait)

    def _drift(self) -> None:
        c = self.config
        for client in self.clients:
            step = self.rng.gauss(0, c.drift) * client.base
            client.wants = min(client.base * 1.5, max(client.base * 0.5, client.wants + step))
        self.at(self.now + c.drift_every, self._drift)

    def _plan_spikes(self) -> None:
        c = self.config
        for _ in range(c.spikes):
            start = self.rng.uniform(c.warmup + 60, c.duration - 400)
            length = self.rng.uniform(120, 300)
            client = self.rng.choice(self.clients)

            def begin(client: SimClient = client) -> None:
                client.spike += 100
                self.events.append((self.now, f"spike +100 at {client.name}"))

            def end(client: SimClient = client) -> None:
                client.spike -= 100
                self.events.append((self.now, f"spike over at {client.name}"))

            self.at(start, begin)
            self.at(start + length, end)

    def _plan_crashes(self) -> None:
        c = self.config
        for _ in range(c.crashes):
            when = self.rng.uniform(c.warmup + 60, c.duration - 200)
            node = self.rng.choice(self.nodes)
            self.at(when, lambda node=node: self._crash(node, c.failover))  # type: ignore[misc]

    def _crash(self, node: Node, downtime: float) -> None:
        if not node.up:
            return
        node.up = False
        self.events.append((self.now, f"{node.name} crashed"))

        def restart() -> None:
            # A fresh process wins the election: empty state, learning mode.
            node.core = ServerCore(node.name, node.repository)
            node.core.on_election(True, node.name, self.now)
            node.up = True
            self.events.append((self.now, f"{node.name} back"))
            if node.parent is not None:
                self._schedule_upstream(node, 0.0)

        self.at(self.now + downtime, restart)

    def _shift(self, factor: float) -> None:
        for client in self.region0:
            client.factor = factor
        self.events.append((self.now, f"region 0 demand x{factor}"))


SCENARIOS = [
    Config("one root, 5 clients", capacity=500, shape=(), clients_per_leaf=5, base_wants=100, duration=1800),
    Config(
        "tree of 45 clients, no faults",
        capacity=500,
        shape=(3, 3),
        clients_per_leaf=5,
        base_wants=14,
        duration=3600,
        spikes=6,
        shifts=((1500.0, 0.15), (2100.0, 1.0)),
    ),
    Config(
        "tree of 45 clients, with faults",
        capacity=500,
        shape=(3, 3),
        clients_per_leaf=5,
        base_wants=14,
        duration=3600,
        spikes=6,
        crashes=4,
        shifts=((1500.0, 0.15), (2100.0, 1.0)),
    ),
]


def run_all(refresh_interval: int | None = None) -> list[Result]:
    configs = (
        SCENARIOS
        if refresh_interval is None
        else [replace(c, refresh_interval=refresh_interval) for c in SCENARIOS]
    )
    return [Simulation(c).run() for c in configs]


# --- report -------------------------------------------------------------------------


def _plot(result: Result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, height_ratios=(2, 1))
    minutes = [t / 60 for t in result.times]
    top.plot(minutes, result.capacity, color="red", label="capacity")
    top.plot(
        minutes,
        [min(d, 2 * result.config.capacity) for d in result.demand],
        color="grey",
        lw=0.8,
        label="sum of wants",
    )
    top.plot(minutes, result.allocated, color="blue", lw=0.9, label="sum of grants")
    for at, what in result.events:
        if "crashed" in what:
            top.axvline(at / 60, color="orange", lw=0.6, ls="--")
    top.set_ylabel("capacity units")
    top.set_title(result.config.name)
    top.legend(loc="lower right")
    for _name, series in sorted(result.per_client.items()):
        bottom.plot(minutes, series, lw=0.5)
    bottom.set_ylabel("grant per client")
    bottom.set_xlabel("simulated minutes")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _row(r: Result) -> str:
    episodes, peak, mean = r.shortfalls()
    failover = f"{r.slowest(crashes=True):.0f} s" if r.config.crashes else "-"
    return (
        f"| {r.config.name} | {r.config.refresh_interval} s | {100 * r.share_allocated():.1f}% "
        f"| {100 * r.mean_gap():.1f}% | {episodes} | {peak:.1f}% | {mean:.1f}% "
        f"| {r.slowest(crashes=False):.0f} s | {failover} |"
    )


HEADER = (
    "| scenario | root refresh | allocated (mean) | mean tracking gap | shortfalls | peak allocation "
    "| mean during shortfalls | slowest re-convergence after a demand change | slowest recovery after a failover |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def report(results: list[Result], others: list[Result], out_dir: Path) -> str:
    images = out_dir / "doorman"
    images.mkdir(parents=True, exist_ok=True)
    sections = []
    for n, r in enumerate(results):
        image = images / f"scenario{n + 1}.png"
        _plot(r, image)
        events = "\n".join(f"| {at / 60:.1f} | {what} | {s:.0f} s |" for at, what, s in r.convergence())
        sections.append(
            f"### {r.config.name}\n\n![{r.config.name}](doorman/{image.name})\n\n"
            + (f"| minute | event | re-converged after |\n|---|---|---|\n{events}\n" if events else "")
        )
    return "\n".join(
        [
            HEADER,
            *[_row(r) for r in results],
            "",
            "With slower refreshes (same scenarios and seeds; the root's refresh interval, halved per level):",
            "",
            HEADER,
            *[_row(r) for r in others],
            "",
            *sections,
        ]
    )


DOC_HEAD = """# Doorman

Doorman is Partita's global, distributed, cooperative rate limiter (seed 002, the
design of youtube/doorman): clients ask a server for capacity on a resource and get a
lease (`capacity` until `expiry_time`, refresh every `refresh_interval`); the servers
share each resource's capacity among the clients that want it, and a tree of servers
spreads that work (leaf servers get their capacity from their parent with
GetServerCapacity). The DynamoDB admission control (routers as clients of
`table/<name>/rcu` and `table/<name>/wcu`) is built on it.

## Parts

| part | where |
|---|---|
| protocol (proto3 port of doorman's final proto, names and field numbers kept) | `proto/partita/doorman.proto` |
| lease store, algorithms NONE / STATIC / PROPORTIONAL_SHARE / FAIR_SHARE, learning | `services/partita/doorman/leases.py`, `algorithms.py` |
| resource templates (glob, exact match first, `*` last, validated, YAML or JSON) | `services/partita/doorman/repository.py` |
| per-resource state: clean-up, insert, decide, the 5-second rule, learning mode, safe capacity | `services/partita/doorman/resource.py` |
| server core (sans-I/O; tree: upstream requests, decaying refresh intervals) | `services/partita/doorman/core.py` |
| election (etcd via aetcd: lease + transaction on create revision; in-memory) | `services/partita/doorman/election.py` |
| gRPC server, configuration reload, parent loop | `services/partita/doorman/server.py`, `main.py` |
| client library (asyncio and blocking; RateResource, GaugeResource; modes) | `services/partita/doorman/client.py`, `connection.py` |
| metrics (`partita_doorman_has/wants/capacity/clients/learning_mode/is_master`, `partita_doorman_requests_total{method,result}`, `partita_doorman_master_changes_total`) | `services/partita/doorman/metrics.py` |

## Decisions

- **Fair share is water-filling.** youtube/doorman's FAIR_SHARE redistributes what
  modest clients leave in two rounds; ours computes the max-min fair level directly
  (`water_level`), which gives the same answers on every documented example and the
  exact fixed point when more rounds would be needed. The lease store keeps the
  demands sorted as leases change, so a decision is C-level prefix sums plus a
  binary search (figures: docs/benchmarks.md, P4). Every algorithm grants at most
  the unused capacity, so the sum of grants stays within capacity in any order of
  requests (checked after every grant in the tests). PROPORTIONAL_SHARE also counts
  the requester's new wants (doorman's compares the store's old total).
- **Expired leases are swept at most once a second per resource** (seed 002's
  optimisation); a lease up to a second past its expiry still counts as held, which
  can only make grants smaller.
- **The 5-second rule answers with the lease already held** instead of leaving the
  resource out of the answer, and never applies to a client that waited its refresh
  interval (if that is below 5 s).
- **Learning mode** lasts `learning_mode_duration` (default: `lease_length`) after an
  election victory (and after a restart); the server echoes what clients say they
  hold and gives new clients nothing.
- **Refresh intervals decay towards the clients**: a server that obtains a resource
  from its parent with refresh interval R gives its own clients `R * decay_factor`
  (parameter `decay_factor`, default 0.5), so each level reacts before the one it
  depends on asks again. A server never leases beyond its own lease.
- **Election**: the master holds `/partita/doorman/<node>/master` (value: its address)
  on an etcd lease (TTL `--election-ttl`, 5 s; keep-alive every third), created in a
  transaction that succeeds only if the key's create revision is 0. A master steps
  down when two thirds of the TTL pass without a confirmed keep-alive, before a
  standby can win. Stopping resigns (revokes the lease): the standby takes over at
  once. Non-masters answer every RPC with `Mastership{master_address}`; the client
  follows it immediately and backs off exponentially (1 s doubling to 60 s) only
  when no master answers.

## Configuration

A root server reads a `ResourceRepository` in YAML or JSON from a file (`--config`)
or an etcd key (`--config-key /partita/doorman/config`, written for example with
`etcdctl put /partita/doorman/config "$(cat doorman.yaml)"`). It is checked every 2 s
and reloaded when it changed; a configuration that fails validation leaves the
previous one in force, and a root server does not start without a valid one:

```yaml
resources:
  - identifier_glob: table/Music/wcu      # exact ids win over globs
    capacity: 100
    safe_capacity: 10                     # absent: capacity / number of clients
    algorithm:
      kind: FAIR_SHARE                    # NO_ALGORITHM, STATIC, PROPORTIONAL_SHARE, FAIR_SHARE
      lease_length: 60                    # >= refresh_interval >= 1
      refresh_interval: 16
      learning_mode_duration: 60          # default: lease_length
      parameters: [{name: decay_factor, value: "0.5"}]
  - identifier_glob: "*"                  # required, last; fnmatch (`*` matches `/` too)
    capacity: 1000
    algorithm: {kind: PROPORTIONAL_SHARE, lease_length: 60, refresh_interval: 16}
```

A non-root server (`--parent host:port,...`) needs no file: its parent pushes each
resource's capacity, algorithm and safe capacity down with every lease.

## Client library

```python
from partita.doorman.client import BlockingClient, Client, Mode

async with Client(["127.0.0.1:5101", "127.0.0.1:5102"], mode=Mode.SAFE) as doorman:
    writes = doorman.rate("table/Music/wcu")        # wants estimated from use
    await writes.wait()                              # evenly paced at the leased rate
    async with doorman.gauge("mysql/tx", wants=8):   # at most the leased number at once
        ...

with BlockingClient("127.0.0.1:5101") as doorman:   # the same for threads
    doorman.rate("batch/export", wants=50).wait()
```

One refresh loop per client asks for all its resources in one GetCapacity, at the
shortest refresh interval granted; a new resource is asked for at once. Closing a
client releases its leases (ReleaseCapacity). Wants: the caller's figure, or the
observed rate (gauges: the peak of holders and waiters) plus 25%, doubled while the
caller is held back so a growing demand is seen. When a lease lapses with no server
answering: PESSIMISTIC uses nothing, OPTIMISTIC what it wants, SAFE the last safe
capacity.

## Simulation

`python -m bench.doorman_sim` (or `make doorman-report`) runs the scenarios below
in virtual time with the real server core and rewrites this file; `make sim` checks
the targets (tests/sim/doorman). Capacity 500, FAIR_SHARE, lease 60 s, refresh
interval 4 s at the root (2 s at regions, 1 s for the datacenters' clients); tree
scenarios: 1 root, 3 regions, 3 datacenters each, 5 clients each wanting 14 with a
random walk (10% steps every 10 s), six spikes of +100 wants for 2-5 minutes, region
0's demand cut to 15% at minute 25 and restored at minute 35; with faults, four
masters (one of them the root's) die and a standby with empty state takes over 10 s
later (election TTL 5 s plus detection), in learning mode. Samples every 0.25 s.
"Allocated" is the clients' summed grants over what can be allocated (the capacity,
or the summed wants when lower), averaged after the first learning mode (2 minutes);
the tracking gap is the mean distance between the two. A shortfall is a moment when
the grants exceed the capacity. Re-convergence: time from an event until the
allocation stays within 2% of capacity of what can be allocated for 5 s.
Seed 002's figures: 96.6% allocated with faults, 96.8% without; 14 shortfalls
peaking at 106.05% (mean 102%); re-convergence within 2 minutes.

Why there are no shortfalls here: every grant is bounded by the capacity nobody else
holds, at every level; and a server that just took over does not ask its parent for
capacity while it is learning (its clients' wants are still partial, and asking
would let the parent hand the rest to other servers while its clients hold, and it
echoes, their old leases). Before that rule, the faulty scenario peaked at 110.4%.

"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", default="docs", help="where doorman.md and its images go")
    args = parser.parse_args(argv)
    out = Path(args.docs)
    results = run_all()
    others = run_all(8) + run_all(16)
    text = report(results, others, out)
    (out / "doorman.md").write_text(DOC_HEAD + text)
    print(text.split("\n\n### ")[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
