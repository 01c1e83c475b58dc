"""MemoryControlStore's own behaviour. The promises every ControlStore keeps (etcd's
compare-and-swap semantics among them) are in test_store_contract.py, run against this
store too."""

from __future__ import annotations

from partita.control.store import MemoryControlStore


async def test_wait_for_change_returns_promptly_with_true() -> None:
    assert await MemoryControlStore().wait_for_change(30) is True
