"""EtcdControlStore against a real etcd server on 127.0.0.1 (free ports, tmp data dir)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import aetcd
import pytest

from partita.cli.supervisor import etcd_binary
from partita.common.partition_map import Partition
from partita.control.model import KeyElement, NodeRecord, TableRecord
from partita.control.store import NODES, PREFIX, EtcdControlStore


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Etcd:
    port: int


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Etcd]:
    data = tmp_path_factory.mktemp("etcd")
    client, peer = free_port(), free_port()
    with open(data / "etcd.log", "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                etcd_binary(),
                "--name=test",
                f"--data-dir={data / 'data'}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                "--log-level=error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (data / "etcd.log").read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", client), timeout=0.5):
                break
            assert time.monotonic() < deadline, "etcd did not start listening"
            time.sleep(0.05)
        yield Etcd(client)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
async def raw(etcd: Etcd) -> AsyncIterator[aetcd.Client]:
    client = aetcd.Client(host="127.0.0.1", port=etcd.port, timeout=5)
    await client.delete_prefix(PREFIX)  # each test starts from an empty store
    yield client
    await client.close()


@pytest.fixture
async def store(etcd: Etcd, raw: aetcd.Client) -> AsyncIterator[EtcdControlStore]:
    s = EtcdControlStore("127.0.0.1", etcd.port)
    yield s
    await s.close()


def table(name: str = "Orders", table_id: int = 11) -> TableRecord:
    return TableRecord(
        name=name,
        table_id=table_id,
        status="CREATING",
        partition_key=KeyElement("pk", "S"),
        sort_key=KeyElement("sk", "N"),
        attribute_definitions=(("pk", "S"), ("sk", "N")),
        billing_mode="PROVISIONED",
        read_capacity=5,
        write_capacity=5,
        created_at=1.5,
        partitions=(
            Partition("p0", 0, 2**63, ("n1",), "n1"),
            Partition("p1", 2**63, 2**64, ("n2",), "n2"),
        ),
    )


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.1)


# --- tables -----------------------------------------------------------------------


async def test_create_table_is_create_if_absent(store: EtcdControlStore) -> None:
    assert await store.create_table(table(table_id=11)) is True
    assert await store.create_table(table(table_id=13)) is False
    stored = await store.get_table("Orders")
    assert stored is not None
    assert stored == table(table_id=11)
    assert stored.revision > 0
    assert await store.list_tables() == [table(table_id=11)]


async def test_get_table_of_an_unknown_name_is_none(store: EtcdControlStore) -> None:
    assert await store.get_table("Nope") is None


async def test_replace_table_is_a_compare_and_swap_on_the_revision(store: EtcdControlStore) -> None:
    await store.create_table(table())
    first = await store.get_table("Orders")
    assert first is not None
    assert await store.replace_table(first.with_status("ACTIVE")) is True
    # `first` is stale now: its revision is not the stored one any more.
    assert await store.replace_table(first.with_status("DELETING")) is False
    current = await store.get_table("Orders")
    assert current is not None
    assert current.status == "ACTIVE"
    assert current.revision > first.revision


async def test_two_writers_racing_on_one_revision_only_one_wins(store: EtcdControlStore, etcd: Etcd) -> None:
    other = EtcdControlStore("127.0.0.1", etcd.port)
    try:
        await store.create_table(table())
        seen = await store.get_table("Orders")
        assert seen is not None
        results = await asyncio.gather(
            store.replace_table(seen.with_status("ACTIVE")),
            other.replace_table(seen.with_status("DELETING")),
        )
        assert sorted(results) == [False, True]
    finally:
        await other.close()


async def test_replace_table_of_a_missing_table_fails_and_creates_nothing(store: EtcdControlStore) -> None:
    # A record never read from the store has revision 0, which is also the mod
    # revision etcd reports for a missing key: the CAS must not turn into a create.
    assert await store.replace_table(table()) is False
    assert await store.get_table("Orders") is None


async def test_remove_table_needs_the_current_revision(store: EtcdControlStore) -> None:
    await store.create_table(table())
    first = await store.get_table("Orders")
    assert first is not None
    assert await store.replace_table(first.with_status("DELETING"))
    assert await store.remove_table(first) is False
    current = await store.get_table("Orders")
    assert current is not None
    assert await store.remove_table(current) is True
    assert await store.get_table("Orders") is None


async def test_remove_table_of_a_missing_table_reports_failure(store: EtcdControlStore) -> None:
    assert await store.remove_table(table()) is False


async def test_remove_table_removes_its_ready_markers_and_no_others(store: EtcdControlStore) -> None:
    # Ids chosen so that one is a decimal prefix of the others.
    for name, table_id in (("A", 1), ("B", 13), ("C", 133)):
        await store.create_table(table(name, table_id))
        await store.mark_ready(table_id, "p0", "n1")
        await store.mark_ready(table_id, "p1", "n2")
    b = await store.get_table("B")
    assert b is not None
    assert await store.remove_table(b)
    assert await store.list_ready(13) == set()
    assert await store.list_ready(1) == {("p0", "n1"), ("p1", "n2")}
    assert await store.list_ready(133) == {("p0", "n1"), ("p1", "n2")}


async def test_ready_markers_are_set_listed_and_cleared(store: EtcdControlStore) -> None:
    await store.mark_ready(5, "0000000000000005-0000", "node-a")
    await store.mark_ready(5, "0000000000000005-0001", "node-b")
    await store.mark_ready(51, "p0", "node-a")
    assert await store.list_ready(5) == {
        ("0000000000000005-0000", "node-a"),
        ("0000000000000005-0001", "node-b"),
    }
    await store.clear_ready(5, "0000000000000005-0000", "node-a")
    assert await store.list_ready(5) == {("0000000000000005-0001", "node-b")}
    assert await store.list_ready(51) == {("p0", "node-a")}


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


async def test_list_nodes_is_sorted_by_id(store: EtcdControlStore) -> None:
    await store.register_node(NodeRecord("n2", "b", "h:2"), ttl=10)
    await store.register_node(NodeRecord("n1", "a", "h:1"), ttl=10)
    assert [n.node_id for n in await store.list_nodes()] == ["n1", "n2"]


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
        await writer.create_table(table())
        await asyncio.sleep(0.3)
        assert await store.wait_for_change(10) is True
    finally:
        await writer.close()
