"""EtcdControlStore's own behaviour against a real etcd server on 127.0.0.1: racing
writers, node leases and change notification. The promises every ControlStore keeps
are in test_store_contract.py, run against this store too."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import aetcd
import pytest

from partita.control.model import NodeRecord, TableState
from partita.control.store import LEADERS, NODES, TABLES, EtcdControlStore
from tests.unit.control.conftest import TWO_PARTITIONS, Etcd, eventually, table


@pytest.fixture
async def store(etcd: Etcd, raw: aetcd.Client) -> AsyncIterator[EtcdControlStore]:
    s = EtcdControlStore("127.0.0.1", etcd.port)
    yield s
    await s.close()


# --- tables -----------------------------------------------------------------------


async def test_a_listing_with_nothing_changed_since_gives_the_same_records_without_decoding_again(
    store: EtcdControlStore, raw: aetcd.Client
) -> None:
    for name, table_id in (("A", 1), ("B", 2)):
        await store.create_table_spec(table(name, table_id))
        await store.change_partitions(table_id, TWO_PARTITIONS, ())
    first = await store.list_tables()
    again = await store.list_tables()
    assert again == first and all(a is b for a, b in zip(again, first, strict=True))
    # A write elsewhere in etcd moves the revision: read again, but the records of keys
    # that did not change are the ones decoded before.
    await raw.put(b"/elsewhere", b"x")
    await store.put_table_state(TableState("B", 2, "ACTIVE", 1))
    moved = {r.name: r for r in await store.list_tables()}
    before = {r.name: r for r in first}
    assert moved["B"].status == "ACTIVE" and before["B"].status == "CREATING"
    assert moved["A"].partitions[0] is before["A"].partitions[0]
    assert moved["B"].partitions[0] is before["B"].partitions[0]
    # Another process's writes count as much as this store's own.
    await raw.delete(TABLES + b"A")
    assert [r.name for r in await store.list_tables()] == ["B"]


async def test_two_writers_racing_on_one_revision_only_one_wins(store: EtcdControlStore, etcd: Etcd) -> None:
    other = EtcdControlStore("127.0.0.1", etcd.port)
    try:
        await store.create_table_spec(table())
        seen = await store.get_table_spec("Orders")
        assert seen is not None
        results = await asyncio.gather(
            store.replace_table_spec(dataclasses.replace(seen, read_capacity=6)),
            other.replace_table_spec(dataclasses.replace(seen, deleting=True)),
        )
        assert sorted(results) == [False, True]
    finally:
        await other.close()


# --- nodes ------------------------------------------------------------------------


async def test_node_registration_is_attached_to_a_lease(store: EtcdControlStore, raw: aetcd.Client) -> None:
    node = NodeRecord("n1", "a", "127.0.0.1:1", "127.0.0.1:2", 42)
    await store.register_node(node, ttl=5)
    assert await store.list_nodes() == [node]
    kv = await raw.get(NODES + b"n1")
    assert kv is not None and kv.lease != 0
    info = await raw.get_lease_info(kv.lease)
    assert info.grantedTTL == 5
    assert NODES + b"n1" in list(info.keys)


async def test_node_registration_outlives_its_ttl_while_the_store_is_open(store: EtcdControlStore) -> None:
    node = NodeRecord("n1", "a", "127.0.0.1:1")
    await store.register_node(node, ttl=2)
    await asyncio.sleep(3.0)  # longer than the TTL: only keep-alives keep it
    assert await store.list_nodes() == [node]


async def test_a_node_whose_lease_was_lost_registers_again(
    store: EtcdControlStore, raw: aetcd.Client
) -> None:
    node = NodeRecord("n1", "a", "127.0.0.1:1")
    await store.register_node(node, ttl=2)
    kv = await raw.get(NODES + b"n1")
    assert kv is not None
    await raw.revoke_lease(kv.lease)
    assert await raw.get(NODES + b"n1") is None

    async def back() -> bool:
        return await store.list_nodes() == [node]

    await eventually(back)


async def test_a_closed_stores_node_registration_expires(etcd: Etcd, raw: aetcd.Client) -> None:
    s = EtcdControlStore("127.0.0.1", etcd.port)
    await s.register_node(NodeRecord("gone", "a", "127.0.0.1:1"), ttl=2)
    await s.close()

    async def expired() -> bool:
        return await raw.get(NODES + b"gone") is None

    await eventually(expired)


# --- change notification ----------------------------------------------------------


async def test_wait_for_change_wakes_on_a_put_and_stays_quiet_otherwise(
    store: EtcdControlStore, etcd: Etcd
) -> None:
    # The first call starts the watch and reports "may have changed" once it is up.
    assert await store.wait_for_change(10) is True
    assert await store.wait_for_change(0.3) is False
    writer = EtcdControlStore("127.0.0.1", etcd.port)
    try:

        async def put_later() -> None:
            await asyncio.sleep(0.2)
            await writer.mark_ready(7, "p0", "n1")

        task = asyncio.create_task(put_later())
        assert await store.wait_for_change(10) is True
        await task
        # A change made while nobody waits is not lost: the next wait returns at once.
        await writer.create_table_spec(table())
        await asyncio.sleep(0.3)
        assert await store.wait_for_change(10) is True
    finally:
        await writer.close()


# --- housekeeping -----------------------------------------------------------------


async def test_compacting_and_defragmenting_gives_back_the_space_of_old_revisions(
    store: EtcdControlStore,
) -> None:
    await store.create_table_spec(table())
    await store.compact_and_defragment(keep_revisions=1)
    baseline = await store.database_size()
    padding = "x" * 240
    for i in range(400):  # ~10 KB per revision of the spec
        current = await store.get_table_spec("Orders")
        assert current is not None
        tags = tuple((f"k{j:02d}", f"{padding}{i:06d}") for j in range(40))
        assert await store.replace_table_spec(dataclasses.replace(current, tags=tags))
    grown = await store.database_size()
    assert grown > baseline + 2 * 1024 * 1024
    await store.compact_and_defragment(keep_revisions=10)
    assert await store.database_size() < baseline + 1024 * 1024
    # The latest spec is intact.
    current = await store.get_table_spec("Orders")
    assert current is not None and current.tags[0][1].endswith("000399")


# --- leadership -------------------------------------------------------------------


async def test_one_holder_leads_a_role_and_a_successor_takes_over_when_it_resigns(
    store: EtcdControlStore, etcd: Etcd, raw: aetcd.Client
) -> None:
    await raw.delete_prefix(LEADERS)
    other = EtcdControlStore("127.0.0.1", etcd.port)
    try:
        await asyncio.wait_for(store.campaign("autoadmin", "first", ttl=2, poll=0.1), 5)
        waiting = asyncio.create_task(other.campaign("autoadmin", "second", ttl=2, poll=0.1))
        await asyncio.sleep(2.5)  # longer than the TTL: the leader's keep-alive holds it
        assert not waiting.done()
        await store.resign("autoadmin", "first")
        await asyncio.wait_for(waiting, 5)
        kv = await raw.get(LEADERS + b"autoadmin")
        assert kv is not None and kv.value == b"second"
    finally:
        await other.close()


async def test_a_dead_leaders_role_passes_on_after_its_ttl(etcd: Etcd, raw: aetcd.Client) -> None:
    await raw.delete_prefix(LEADERS)
    dead, heir = EtcdControlStore("127.0.0.1", etcd.port), EtcdControlStore("127.0.0.1", etcd.port)
    try:
        await dead.campaign("autoadmin", "dead", ttl=2, poll=0.1)
        await dead.close()  # stops refreshing without resigning, as a SIGKILL would
        await asyncio.wait_for(heir.campaign("autoadmin", "heir", ttl=2, poll=0.1), 10)
        kv = await raw.get(LEADERS + b"autoadmin")
        assert kv is not None and kv.value == b"heir"
    finally:
        await heir.close()


async def test_leadership_lost_returns_when_the_lease_is_gone(
    store: EtcdControlStore, raw: aetcd.Client
) -> None:
    await raw.delete_prefix(LEADERS)
    await store.campaign("autoadmin", "me", ttl=3, poll=0.1)
    lost = asyncio.create_task(store.leadership_lost())
    await asyncio.sleep(0.3)
    assert not lost.done()
    kv = await raw.get(LEADERS + b"autoadmin")
    assert kv is not None
    await raw.revoke_lease(kv.lease)
    await asyncio.wait_for(lost, 5)
