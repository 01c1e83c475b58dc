"""The SPLIT entry of a split at a log index, on three in-process replicas (real engines,
the real transport on 127.0.0.1, the real consensus core; the harness of
test_replica_host): every replica applies it at the same index with the same data,
a follower stopped through the split applies it once back, and the group is sealed."""

from __future__ import annotations

import asyncio

from partita.storage.group_split import decode_split, encode_split
from partita.storage.replication.core import NotLeader
from tests.unit.storage.test_replica_host import GROUP, NODES, Cluster, cluster, put, wait_until

__all__ = ["cluster"]


def test_the_split_payload_round_trips_and_no_write_decodes_as_one() -> None:
    for at in (1, 2**63, 2**64 - 1):
        assert decode_split(encode_split(at)) == at
    from partita.storage.effects import encode_effects

    assert decode_split(encode_effects(put(b"k" * 22, b""))) is None
    assert decode_split(b"") is None


async def test_every_replica_applies_the_split_entry_at_one_index_even_one_stopped_through_it(
    cluster: Cluster,
) -> None:
    leader = await cluster.leader()
    lagging = next(n for n in NODES if n != leader.node)
    await asyncio.wait_for(leader.host.propose(GROUP, put(b"before", b"1")), 5)
    await wait_until(lambda: cluster.members[lagging].engine.get(b"before") == b"1")
    await cluster.stop(lagging)  # cut off: it misses the last writes and the split
    for i in range(5):
        await asyncio.wait_for(leader.host.propose(GROUP, put(f"acked-{i}".encode(), b"v")), 5)
    await asyncio.wait_for(leader.host.propose_split(GROUP, 2**63), 5)
    applied = leader.host.split_entry(GROUP)
    assert applied is not None and applied[0] == 2**63
    assert leader.host.is_sealed(GROUP)
    back = await cluster.start(lagging)
    await wait_until(lambda: back.host.split_entry(GROUP) == applied)
    # At the split's index every replica holds every write acknowledged before it.
    for m in cluster.members.values():
        await wait_until(lambda m=m: m.host.split_entry(GROUP) == applied)  # type: ignore[misc]
        assert all(m.engine.get(f"acked-{i}".encode()) == b"v" for i in range(5)), m.node
        assert m.engine.get(b"before") == b"1"
        assert m.host.is_sealed(GROUP)


async def test_a_follower_cannot_propose_a_split(cluster: Cluster) -> None:
    leader = await cluster.leader()
    follower = next(m for m in cluster.members.values() if m is not leader)
    await wait_until(lambda: follower.host.multi.replicas[GROUP].leader == leader.node)
    try:
        await asyncio.wait_for(follower.host.propose_split(GROUP, 2**63), 5)
    except NotLeader:
        pass
    else:
        raise AssertionError("a follower proposed a SPLIT entry")
    assert follower.host.split_entry(GROUP) is None
