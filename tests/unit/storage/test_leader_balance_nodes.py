"""Leadership rebalancing on three in-process nodes: real engines (RocksDB and the WAL in
tmp_path), the real node-pair transport on 127.0.0.1, the real consensus core, each node
running its rebalancing driver. Every group starts led by one node; each is handed to
its preferred leader while writes go on, and a node that has just come back gets nothing
before its hold-off."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from partita.common.partition_map import Partition
from partita.control.model import ReplicaMove
from partita.storage import metrics
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.leader_balance import LeaderBalancer, preferred_counts
from partita.storage.leader_balance_driver import LeaderBalanceDriver
from partita.storage.node import NodeState, PeerDirectory, kept_from_rebalance
from partita.storage.peer_transport import PeerTransport
from partita.storage.replica_host import ReplicaHost, Superseded
from partita.storage.replication.core import NotLeader
from partita.storage.replication.types import Role
from tests.unit.storage.polling import wait_until

NODES = ("node-a", "node-b", "node-c")
GROUPS = [f"9/p{i}" for i in range(24)]
PREFERRED = preferred_counts((g, {n: Role.FULL for n in NODES}) for g in GROUPS)
PASS_SECONDS = 0.1


@dataclass
class Node:
    name: str
    engine: Engine
    host: ReplicaHost
    transport: PeerTransport


class Nodes:
    """The three nodes, each hosting every group; `visible` is what every node's
    balancer is told is alive (the registrations less the suspected, in a node)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.addresses: dict[str, str] = {}
        self.nodes: dict[str, Node] = {}
        self.visible: set[str] = set(NODES)
        self.drivers: dict[str, LeaderBalanceDriver] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for name in NODES:
            engine = Engine.open(self.root / name, sync=False)
            holder: list[ReplicaHost] = []
            transport = PeerTransport(self.addresses.get, lambda env, h=holder: h[0].receive(env))
            host = ReplicaHost(name, engine, transport.send)
            holder.append(host)
            port = await transport.listen("127.0.0.1", 0)
            self.addresses[name] = f"127.0.0.1:{port}"
            self.nodes[name] = Node(name, engine, host, transport)
        for node in self.nodes.values():
            for group in GROUPS:
                node.host.add_group(group, list(NODES))
            node.host.start()

    def start_balancing(self, hold_off: float) -> None:
        for name, node in self.nodes.items():
            driver = LeaderBalanceDriver(
                node.host,
                lambda: {n: a for n, a in self.addresses.items() if n in self.visible},
                balancer=LeaderBalancer(name, hold_off=hold_off, per_pass=8),
            )
            self.drivers[name] = driver
            self._tasks.append(asyncio.get_running_loop().create_task(driver.run(PASS_SECONDS)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for node in self.nodes.values():
            await node.host.stop()
            await node.transport.close()
            await node.engine.close()

    def leader(self, group: str) -> Node | None:
        leaders = [n for n in self.nodes.values() if n.host.is_leader(group)]
        return leaders[0] if len(leaders) == 1 else None

    def led(self) -> dict[str, int]:
        return {name: len(node.host.multi.leading()) for name, node in self.nodes.items()}

    async def all_led_by(self, name: str) -> None:
        """Move every group to `name` (as a restart or failovers leave a cluster)."""
        await wait_until(lambda: all(self.leader(g) is not None for g in GROUPS), 20)

        def moved() -> bool:
            now = time.monotonic()
            for group in GROUPS:
                leader = self.leader(group)
                if leader is not None and leader.name != name:
                    replica = leader.host.multi.replicas[group]
                    if replica.transfer_target is None:
                        leader.host.multi.transfer_leadership(group, name, now)
                        leader.host.wake()
            return self.led()[name] == len(GROUPS)

        await wait_until(moved, 30)


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[Nodes]:
    out = Nodes(tmp_path)
    await out.start()
    yield out
    await out.stop()


async def test_every_node_comes_to_lead_its_preferred_groups_while_writes_go_on(nodes: Nodes) -> None:
    await nodes.all_led_by("node-a")
    assert PREFERRED["node-a"] < len(GROUPS)  # the test moves something
    written: dict[bytes, bytes] = {}
    failures: list[str] = []
    stop = asyncio.Event()

    async def write(group: str, key: bytes) -> None:
        for _ in range(250):  # bounded: about 5 s of retries
            leader = nodes.leader(group)
            if leader is not None:
                try:
                    await asyncio.wait_for(leader.host.propose(group, [Effect(Kind.PUT, key, b"v")]), 5)
                    written[key] = b"v"
                    return
                except (NotLeader, Superseded):
                    pass  # a transfer under way: the next leader takes it
            await asyncio.sleep(0.02)
        failures.append(f"{group} {key!r}")

    async def writer() -> None:
        i = 0
        while not stop.is_set() and i < 100_000:
            group = GROUPS[i % len(GROUPS)]
            await write(group, f"{group}/{i}".encode())
            i += 1

    writing = asyncio.get_running_loop().create_task(writer())
    nodes.start_balancing(hold_off=1.0)
    try:
        await wait_until(lambda: nodes.led() == PREFERRED, 30)
        during = len(written)
        await asyncio.sleep(0.3)
    finally:
        stop.set()
        await writing
    assert not failures, failures
    assert during > 0 and len(written) > during  # writes went on through it and after
    assert sum(d.started for d in nodes.drivers.values()) >= len(GROUPS) - PREFERRED["node-a"]
    a = nodes.nodes["node-a"]
    metrics.watch_leader_balance(
        NodeState("node-a", "zone-a", a.engine, replicas=a.host), nodes.drivers["node-a"]
    )
    assert metrics.LEADER_BALANCE_TRANSFERS.read is not None
    assert list(metrics.LEADER_BALANCE_TRANSFERS.read()) == [
        (("node-a",), float(nodes.drivers["node-a"].started))
    ]
    assert nodes.drivers["node-a"].started > 0
    for node in nodes.nodes.values():
        await wait_until(lambda node=node: all(node.engine.get(k) == v for k, v in written.items()))  # type: ignore[misc]


async def test_a_node_that_has_just_come_back_gets_nothing_before_the_hold_off(nodes: Nodes) -> None:
    hold_off = 2.0
    await nodes.all_led_by("node-a")
    nodes.visible = {"node-a", "node-c"}  # node-b is down, as the balancers see it
    nodes.start_balancing(hold_off)
    without_b = preferred_counts((g, {"node-a": Role.FULL, "node-c": Role.FULL}) for g in GROUPS)
    # node-c gets the groups it comes first for among the live members (node-b's
    # stand-in), once its own hold-off from the balancers' start is over.
    await wait_until(
        lambda: nodes.led() == {"node-a": without_b["node-a"], "node-b": 0, "node-c": without_b["node-c"]}, 20
    )
    back = time.monotonic()
    nodes.visible = set(NODES)
    while time.monotonic() < back + hold_off - 0.2:
        assert nodes.led()["node-b"] == 0
        await asyncio.sleep(0.05)
    await wait_until(lambda: nodes.led() == PREFERRED, 20)
    assert PREFERRED["node-b"] > 0


async def test_rebalancing_leaves_a_group_splitting_or_with_a_member_moving(node_d: NodeState) -> None:
    peers = PeerDirectory()
    whole = Partition("p0", 0, 2**63, ("d", "e", "f"), "d")
    node_d.groups = {"g-whole": (1, whole), "g-split": (1, dataclasses.replace(whole, split_at=2**62))}
    assert not kept_from_rebalance(node_d, peers, "g-whole")
    assert kept_from_rebalance(node_d, peers, "g-split")
    peers.moves = {"g-whole": ReplicaMove(1, "p0", "d", "d2", 0.0)}
    assert kept_from_rebalance(node_d, peers, "g-whole")
    assert not kept_from_rebalance(node_d, peers, "g-unknown")
