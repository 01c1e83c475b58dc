"""A transaction whose coordinator dies is finished by the routers' sweepers.

Real cluster (`partita up`: etcd, three storage nodes with their routers). The test
plays a coordinator that dies half way: from this process, with a router context of
its own on the cluster's etcd and storage nodes, it records a transaction across
partitions in the ledger and prepares every partition (the items are locked), then
stops, either before deciding or after deciding "committed". Meanwhile the items are
locked (a plain write is TransactionConflictException, a read sees the old values);
within the sweepers' time the transaction is finished either way: aborted (the old
values, writable again) or committed (every new value), and its ledger record gone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from partita._proto import storage_pb2 as pb
from partita.api.operations import transactions as requests
from partita.control.store import EtcdControlStore
from partita.router.actions import transactions
from partita.router.context import RouterContext, RouterSettings
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from tests.integration.cluster import Cluster, running, wait_active, with_store

pytestmark = pytest.mark.integration

ITEMS = 8  # on every partition of the table
FINISH_SECONDS = 60.0  # the sweepers' staleness (10 s) and period (5 s), with room


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(Path(tmp_path_factory.mktemp("tx-recovery"))) as c:
        yield c


@pytest.fixture(scope="module")
def ddb(cluster: Cluster) -> Any:
    from botocore.config import Config

    client = cluster.client(config=Config(retries={"total_max_attempts": 1}))
    client.create_table(
        TableName="ledgered",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    wait_active(client, "ledgered", timeout=30)
    return client


async def _prepare_and_die(
    cluster: Cluster, pks: list[str], decide: bool, *, recorded: bool = True, at: float | None = None
) -> str:
    """What a coordinator does up to its death: the ledger record (unless not
    `recorded`), every partition prepared (locked at `at`, now by default), and
    (`decide`) the outcome "committed"; the transaction's id."""
    store = EtcdControlStore("127.0.0.1", cluster.ports["etcd"])
    storage = StorageClient()
    try:
        tables = TableCache(store)
        await tables.refresh()
        ctx = RouterContext(tables, store, storage, RouterSettings())
        req = requests.validate_write(
            {
                "TransactItems": [
                    {"Put": {"TableName": "ledgered", "Item": {"pk": {"S": pk}, "v": {"S": "new"}}}}
                    for pk in pks
                ]
            }
        )
        participants, _ = transactions.participants_of(ctx, req.actions)
        assert len(participants) > 1, "the transaction must span partitions"
        tx = f"dead-coordinator-{time.time_ns()}"
        if recorded:
            await store.put_transaction(tx, transactions.ledger_record(participants))
        locked_at = time.time() if at is None else at
        for participant in participants:
            await transactions.send_to(
                ctx, participant, pb.TX_PREPARE, {"tx": tx, "at": locked_at, "actions": participant.actions}
            )
        if decide:
            assert await store.decide_transaction(tx, "committed") == "committed"
        return tx
    finally:
        await storage.close()
        await store.close()


def _values(ddb: Any, pks: list[str]) -> list[str | None]:
    out = []
    for pk in pks:
        item = ddb.get_item(TableName="ledgered", Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")
        out.append(item["v"]["S"] if item else None)
    return out


def _ledger_holds(cluster: Cluster, tx: str) -> bool:
    async def listed(store: EtcdControlStore) -> list[tuple[str, dict[str, Any]]]:
        return await store.list_transactions()

    return any(t == tx for t, _ in with_store(cluster, listed))


def _wait_until(check: Any, what: str) -> None:
    deadline = time.monotonic() + FINISH_SECONDS
    while not check():
        assert time.monotonic() < deadline, f"not {what} within {FINISH_SECONDS} s"
        time.sleep(0.5)


@pytest.mark.parametrize("decided", [False, True], ids=["undecided-is-aborted", "committed-is-applied"])
def test_a_transaction_left_by_a_dead_coordinator_is_finished(
    cluster: Cluster, ddb: Any, decided: bool
) -> None:
    pks = [f"{'c' if decided else 'a'}-{i}" for i in range(ITEMS)]
    for pk in pks:
        ddb.put_item(TableName="ledgered", Item={"pk": {"S": pk}, "v": {"S": "old"}})
    tx = asyncio.run(_prepare_and_die(cluster, pks, decided))

    # Locked: a plain write is refused, a read sees the values from before.
    with pytest.raises(ClientError) as err:
        ddb.put_item(TableName="ledgered", Item={"pk": {"S": pks[0]}, "v": {"S": "plain"}})
    assert err.value.response["Error"]["Code"] == "TransactionConflictException"
    assert err.value.response["Error"]["Message"] == "Transaction is ongoing for the item"
    assert "LockedBy" not in str(err.value.response)  # which transaction is Partita's own business
    assert _values(ddb, pks) == ["old"] * ITEMS

    expected = ["new" if decided else "old"] * ITEMS
    _wait_until(lambda: not _ledger_holds(cluster, tx), "swept")
    assert _values(ddb, pks) == expected
    ddb.put_item(TableName="ledgered", Item={"pk": {"S": pks[0]}, "v": {"S": "plain"}})  # unlocked


def test_a_lock_the_ledger_no_longer_knows_is_dropped_by_the_next_write(cluster: Cluster, ddb: Any) -> None:
    """The lock of a prepare that landed after its transaction was aborted and swept (no
    ledger record), old enough: the next plain write drops it and is applied."""
    pks = [f"orphan-{i}" for i in range(ITEMS)]
    for pk in pks:
        ddb.put_item(TableName="ledgered", Item={"pk": {"S": pk}, "v": {"S": "old"}})
    asyncio.run(_prepare_and_die(cluster, pks, False, recorded=False, at=time.time() - 120))
    ddb.put_item(TableName="ledgered", Item={"pk": {"S": pks[0]}, "v": {"S": "plain"}})
    assert _values(ddb, pks[:2]) == ["plain", "old"]
    # A recent lock of an unrecorded transaction is left alone: its coordinator may be alive.
    fresh = [f"fresh-{i}" for i in range(ITEMS)]
    asyncio.run(_prepare_and_die(cluster, fresh, False, recorded=False))
    with pytest.raises(ClientError) as err:
        ddb.put_item(TableName="ledgered", Item={"pk": {"S": fresh[0]}, "v": {"S": "plain"}})
    assert err.value.response["Error"]["Code"] == "TransactionConflictException"
