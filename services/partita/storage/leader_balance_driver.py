"""Runs leadership rebalancing (`leader_balance.py`) on the groups this node leads: once
a pass, it tells the balancer which peers are alive, shows it the led groups and starts
the transfers it plans, as a graceful shutdown does (`node.hand_off_leadership`): the
core stops taking proposals for the group, brings the target up to date and tells it to
campaign at once (TIMEOUT_NOW)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from partita.storage.leader_balance import PASS_SECONDS, LeaderBalancer, LedGroup
from partita.storage.replica_host import ReplicaHost
from partita.storage.replication.core import NotLeader, Replica
from partita.storage.replication.types import GroupId, NodeId

log = logging.getLogger(__name__)


class LeaderBalanceDriver:
    def __init__(
        self,
        replicas: ReplicaHost,
        live_peers: Callable[[], Mapping[NodeId, str]],
        splitting: Callable[[GroupId], bool] = lambda group: False,
        balancer: LeaderBalancer | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`live_peers`: the peers this node believes alive, each with its replication
        address (a new address is a new process); `splitting`: whether a group is left
        as it is (its partition marked for a split, its leader about to seal it; or a
        member moving off a busy node, a leader there handing over)."""
        self.replicas = replicas
        self.live_peers = live_peers
        self.splitting = splitting
        self.balancer = balancer or LeaderBalancer(replicas.node_id)
        self._clock = clock
        self.started = 0  # transfers started for balance (the metrics read it)

    async def run(self, interval: float = PASS_SECONDS) -> None:
        while True:
            try:
                self.pass_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # advisory work: the next pass tries again
                log.exception("leadership rebalancing pass failed")
            await asyncio.sleep(interval)

    def pass_once(self) -> int:
        """One pass; returns the transfers started."""
        now = self._clock()
        self.balancer.liveness.observe(self.live_peers(), now)
        multi = self.replicas.multi
        led = [(group, r.term, r.members) for group, r in list(multi.replicas.items()) if r.is_leader]
        started = 0
        for transfer in self.balancer.plan(led, lambda group: self._view(group, multi.replicas[group]), now):
            try:
                multi.transfer_leadership(transfer.group, transfer.target, now)
            except (NotLeader, ValueError) as exc:
                log.info("group %s: no transfer to %s: %s", transfer.group, transfer.target, exc)
                continue
            started += 1
        if started:
            self.started += started
            self.replicas.wake()
            log.info("leadership rebalancing: %d transfers started (%d led)", started, len(led))
        return started

    def _view(self, group: GroupId, replica: Replica) -> LedGroup:
        return LedGroup(
            group=group,
            members=replica.members,
            match={peer: pr.match for peer, pr in replica.progress.items()},
            last_index=replica.log.last_index,
            transferring=replica.transfer_target is not None,
            membership_pending=replica.log.newest_membership_index() > replica.commit,
            sealed=self.replicas.is_sealed(group) or self.splitting(group),
        )
