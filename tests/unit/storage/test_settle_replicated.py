"""How the data plane answers a batch of replicated writes from their proposals' fates,
and when it unstages each (a real engine; the proposals are futures the test decides,
as the replica host would: applied first, then resolved)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from partita._proto import storage_pb2 as pb
from partita.storage import data_server
from partita.storage.data_server import DataPlane
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.hosting import desired_hosting
from partita.storage.node import NodeState
from partita.storage.operations import Plan
from partita.storage.replica_host import Superseded
from partita.storage.replication.core import NotLeader


def _plan(engine: Engine, request_id: int, key: bytes) -> Plan:
    effects = [Effect(Kind.PUT, key, b"v%d" % request_id)]
    engine.stage(effects)
    plan = Plan(pb.Response(id=request_id, status=pb.OK), effects, "g1")
    plan.proposal = asyncio.get_running_loop().create_future()
    return plan


async def _turns(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_each_write_is_answered_from_its_own_proposal_and_unstaged_when_decided(
    tmp_path: Path,
) -> None:
    engine = Engine.open(tmp_path / "node", sync=False)
    plane = DataPlane(NodeState("n1", "a", engine, hosted=desired_hosting([], "n1")))
    committed, dropped, refused = (_plan(engine, i, b"k%d" % i) for i in (1, 2, 3))
    answers = asyncio.ensure_future(plane.commit([committed, dropped, refused]))
    await _turns()
    assert dropped.proposal is not None
    dropped.proposal.set_exception(Superseded("replaced"))
    await _turns()
    # Unstaged at once, while the others are still undecided: a new plan no longer
    # builds on a write that never happened.
    assert not engine.pending(b"k2")
    assert engine.pending(b"k1") and engine.pending(b"k3")
    assert not answers.done()
    assert committed.proposal is not None and refused.proposal is not None
    committed.proposal.set_result(None)
    refused.proposal.set_exception(NotLeader("n2"))
    ok, unavailable, not_leader = await asyncio.wait_for(answers, 5)
    assert (ok.id, ok.status) == (1, pb.OK)
    assert (unavailable.id, unavailable.status) == (2, pb.UNAVAILABLE)
    assert (not_leader.id, not_leader.status, not_leader.leader_hint) == (3, pb.NOT_LEADER, "n2")
    assert not engine.pending(b"k1") and not engine.pending(b"k3")
    await engine.close()


async def test_a_write_undecided_at_the_timeout_is_of_unknown_outcome_and_unstaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(data_server, "PROPOSAL_TIMEOUT_SECONDS", 0.05)
    engine = Engine.open(tmp_path / "node", sync=False)
    plane = DataPlane(NodeState("n1", "a", engine, hosted=desired_hosting([], "n1")))
    decided, stuck = _plan(engine, 1, b"k1"), _plan(engine, 2, b"k2")
    assert decided.proposal is not None and stuck.proposal is not None
    decided.proposal.set_result(None)
    with caplog.at_level(logging.WARNING):
        ok, unknown = await asyncio.wait_for(plane.commit([decided, stuck]), 5)
    assert ok.status == pb.OK
    assert (unknown.id, unknown.status, unknown.error_code) == (2, pb.ERROR, "InternalServerError")
    assert not engine.pending(b"k1") and not engine.pending(b"k2")
    # Decided after nobody waits any more: not cancelled by the timeout, not unstaged
    # twice, and its exception is retrieved (no "never retrieved" at collection).
    assert not stuck.proposal.cancelled()
    stuck.proposal.set_exception(NotLeader(None))
    await _turns()
    assert stuck.proposal.exception() is not None
    assert any("undecided" in r.getMessage() for r in caplog.records)
    await engine.close()
