"""Clearing a transaction's lock that nothing else will clear.

A lock whose transaction has no ledger record belongs to an aborted transaction: the
coordinator records a transaction before it locks anything, and drops the record only
once every partition has resolved it, and a committed transaction's locks are all
found when it is resolved (every prepare was acknowledged, so every later leader has
applied it before it plans: `ReplicaHost.ready_to_plan`). The one way such a lock can
outlive its record is a prepare so delayed that it lands after the sweeper aborted and
resolved its transaction (storage/transactions.py). A plain write that meets a lock
older than `ORPHAN_SECONDS` whose transaction the ledger does not know drops it (abort)
and is tried once more.
"""

from __future__ import annotations

import base64
import time

import orjson

from partita._proto import storage_pb2 as pb
from partita.common.errors import DynamoError
from partita.router.context import RouterContext
from partita.router.table_cache import CachedTable

# Past the sweepers' staleness (10 s) and period (5 s), with room for a slow coordinator.
ORPHAN_SECONDS = 30.0


async def clear_orphan(
    ctx: RouterContext, table: CachedTable, key_hash: int, storage_key: bytes, conflict: DynamoError
) -> bool:
    """Whether the lock `conflict` reports was an orphan and is now gone."""
    tx = conflict.extra.get("LockedBy")
    at = conflict.extra.get("LockedAt")
    if ctx.ledger is None or not isinstance(tx, str) or not isinstance(at, (int, float)):
        return False
    if time.time() - at < ORPHAN_SECONDS or await ctx.ledger.get_transaction(tx) is not None:
        return False  # its coordinator or a sweeper will resolve it
    body = {"tx": tx, "commit": False, "keys": [base64.b64encode(storage_key).decode()]}
    await ctx.send(table, pb.Request(op=pb.TX_RESOLVE, key_hash=key_hash, body=orjson.dumps(body)))
    return True
