"""Table lifecycle: CREATING -> ACTIVE once every replica serves; DELETING -> gone once
every replica dropped its data. Pure decision plus a small driver.

The decision is a function of the record and the replicas' ready markers, so any
number of drivers (every router today, the autoadmin later) can run it: the store's
compare-and-swap makes each transition happen once.
"""

from __future__ import annotations

import logging
from typing import Literal

from partita.control.model import TableRecord
from partita.control.store import ControlStore

log = logging.getLogger(__name__)

Transition = Literal["activate", "remove"]


def next_transition(record: TableRecord, ready: set[tuple[str, str]]) -> Transition | None:
    if record.status == "CREATING":
        wanted = {(p.partition_id, node) for p in record.partitions for node in p.replicas}
        return "activate" if wanted <= ready else None
    if record.status == "DELETING":
        return "remove" if not ready else None
    return None


async def drive_lifecycle(store: ControlStore, tables: list[TableRecord]) -> bool:
    """Apply due transitions; True if any happened."""
    changed = False
    for record in tables:
        if record.status not in ("CREATING", "DELETING"):
            continue
        transition = next_transition(record, await store.list_ready(record.table_id))
        # A lost compare-and-swap means another driver moved the table first: no log.
        if transition == "activate" and await store.replace_table(record.with_status("ACTIVE")):
            changed = True
            log.info("table %s is ACTIVE", record.name)
        elif transition == "remove" and await store.remove_table(record):
            changed = True
            log.info("table %s is deleted", record.name)
    return changed
