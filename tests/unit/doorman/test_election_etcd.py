"""EtcdElection against a real etcd on 127.0.0.1: one leader at a time, the key on a
lease, resignation and a lost lease hand leadership over."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

import aetcd

from partita.doorman.election import EtcdElection
from tests.unit.control.conftest import Etcd


class Outcome:
    def __init__(self) -> None:
        self.is_master = False
        self.master: str | None = None
        self.changes: list[tuple[bool, str | None]] = []

    def __call__(self, is_master: bool, master: str | None) -> None:
        self.is_master, self.master = is_master, master
        self.changes.append((is_master, master))


async def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.02)


def candidates(etcd: Etcd, n: int = 2, ttl: int = 2) -> list[EtcdElection]:
    name = f"test-{uuid.uuid4().hex[:8]}"
    return [
        EtcdElection("127.0.0.1", etcd.port, name, f"127.0.0.1:{9000 + i}", ttl=ttl, poll=0.05)
        for i in range(n)
    ]


async def test_one_candidate_leads_and_the_other_follows_it(etcd: Etcd) -> None:
    first, second = candidates(etcd)
    a, b = Outcome(), Outcome()
    ta = asyncio.create_task(first.run(a))
    await eventually(lambda: a.is_master)
    tb = asyncio.create_task(second.run(b))
    await eventually(lambda: b.master == first.address)
    assert not b.is_master
    client = aetcd.Client(host="127.0.0.1", port=etcd.port)
    kv = await client.get(first.key)
    assert kv is not None and kv.value == first.address.encode() and kv.lease != 0
    assert (await client.get_lease_info(kv.lease)).grantedTTL == 2
    await client.close()
    for t in (ta, tb):
        t.cancel()
    await asyncio.gather(ta, tb, return_exceptions=True)


async def test_leadership_survives_longer_than_the_ttl(etcd: Etcd) -> None:
    (only,) = candidates(etcd, 1)
    outcome = Outcome()
    task = asyncio.create_task(only.run(outcome))
    await eventually(lambda: outcome.is_master)
    await asyncio.sleep(3.0)  # > ttl: only the keep-alives keep it
    assert outcome.changes == [(True, only.address)]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_cancelled_leader_resigns_and_the_standby_takes_over_at_once(etcd: Etcd) -> None:
    first, second = candidates(etcd, ttl=30)  # only resignation can free the key quickly
    a, b = Outcome(), Outcome()
    ta = asyncio.create_task(first.run(a))
    await eventually(lambda: a.is_master)
    tb = asyncio.create_task(second.run(b))
    await eventually(lambda: b.master == first.address)
    ta.cancel()
    await asyncio.gather(ta, return_exceptions=True)
    await eventually(lambda: b.is_master, timeout=3)
    tb.cancel()
    await asyncio.gather(tb, return_exceptions=True)


async def test_a_leader_whose_lease_is_gone_steps_down(etcd: Etcd) -> None:
    first, second = candidates(etcd)
    a, b = Outcome(), Outcome()
    ta = asyncio.create_task(first.run(a))
    await eventually(lambda: a.is_master)
    client = aetcd.Client(host="127.0.0.1", port=etcd.port)
    kv = await client.get(first.key)
    assert kv is not None
    tb = asyncio.create_task(second.run(b))
    await eventually(lambda: b.master == first.address)
    await client.revoke_lease(kv.lease)  # as if etcd had expired it
    await eventually(lambda: (False, None) in a.changes)
    await eventually(lambda: a.is_master != b.is_master and a.master == b.master is not None)
    await client.close()
    for t in (ta, tb):
        t.cancel()
    await asyncio.gather(ta, tb, return_exceptions=True)
