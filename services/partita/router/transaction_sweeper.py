"""Finishing transactions whose coordinator died (router/actions/transactions.py).

Every router runs this loop: every `SWEEP_SECONDS` it reads the transaction ledger, and
for each record older than `STALE_SECONDS` (a coordinator finishes within a second or
two; one still running after that long is gone or stuck) it aborts the transaction if
it is still pending (the ledger's compare-and-swap lets one decision win, so a slow
coordinator that decides "committed" at the same moment either wins, and the
transaction is committed, or loses, and it learns so), tells every participant the
outcome and drops the record. Resolving is idempotent, so routers sweeping at once do
no harm. It also forgets ClientRequestTokens past their ten minutes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from partita.common.errors import DynamoError
from partita.control.store import TransactionLedger
from partita.router.actions.transactions import TOKEN_SECONDS, Participant, resolve
from partita.router.context import RouterContext

SWEEP_SECONDS = 5.0
STALE_SECONDS = 10.0

log = logging.getLogger(__name__)


async def sweep_transactions(ctx: RouterContext, ledger: TransactionLedger) -> None:
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        try:
            await sweep_once(ctx, ledger, time.time())
        except (OSError, DynamoError, RuntimeError) as exc:  # etcd or a node unreachable: next time
            log.warning("transaction sweep failed: %s", exc)


async def sweep_once(ctx: RouterContext, ledger: TransactionLedger, now: float) -> int:
    """One pass; the number of transactions finished."""
    finished = 0
    for tx, record in await ledger.list_transactions():
        if now - float(record["at"]) < STALE_SECONDS:
            continue
        outcome = record["state"]
        if outcome == "pending":
            outcome = await ledger.decide_transaction(tx, "aborted")
            if outcome is None:
                continue  # its coordinator finished it meanwhile
        participants = _participants(ctx, record)
        if participants is None:
            await ledger.delete_transaction(tx)  # its table is gone, and its locks with it
            log.info("transaction %s dropped by a sweeper: a table of it was deleted", tx)
            continue
        if await resolve(ctx, tx, participants, outcome == "committed"):
            await ledger.delete_transaction(tx)
            log.info("transaction %s finished by a sweeper: %s", tx, outcome)
            finished += 1
    for token, record in await ledger.list_tokens():
        if now - float(record["at"]) >= TOKEN_SECONDS:
            await ledger.delete_token(token)
    return finished


def _participants(ctx: RouterContext, record: dict[str, Any]) -> list[Participant] | None:
    out = []
    for entry in record["participants"]:
        table = ctx.tables.get(entry["table"])
        if table is None or table.record.table_id != int(entry["table_id"]):
            return None
        participant = Participant(table, int(entry["hash"]))
        participant.actions = [{"key": key} for key in entry["keys"]]
        out.append(participant)
    return out
