"""Backups' and restores' copies taken over from a router that stopped renewing its claim
(a MemoryControlStore behind a real TableCache; the copies themselves run against real
storage nodes in tests/compat/test_backups.py)."""

from __future__ import annotations

import dataclasses

from partita.api.operations import backups
from partita.control.model import Claim, RestoreInfo, TableSpec
from partita.control.store import MemoryControlStore
from partita.router.context import RouterContext, RouterSettings
from partita.router.copy_jobs import CLAIM_SECONDS, CopyJobs
from partita.router.storage_client import StorageClient
from partita.router.table_cache import TableCache
from tests.unit.control.conftest import table

NOW = 1_800_000_000.0


async def context() -> RouterContext:
    store = MemoryControlStore()
    ctx = RouterContext(TableCache(store), store, StorageClient(), RouterSettings())
    await ctx.tables.refresh()
    return ctx


def backup_spec(claim: Claim) -> TableSpec:
    source = table("Orders")
    info = dataclasses.replace(
        backups.backup_info(source, "arn:aws:dynamodb:us-east-1:000000000000:table/Orders", "b", "x", NOW, 0),
        claim=claim,
    )
    return backups.hidden_spec(source, info, NOW)


async def claims_after_sweep(ctx: RouterContext, jobs: CopyJobs, *specs: TableSpec) -> list[Claim]:
    for spec in specs:
        assert await ctx.catalog.create_table_spec(spec)
    await ctx.tables.refresh()
    await jobs.sweep()
    out = []
    for spec in specs:
        stored = await ctx.catalog.get_table_spec(spec.name)
        assert stored is not None
        info = stored.backup or stored.restore
        assert info is not None
        out.append(info.claim)
    await jobs.close()
    return out


async def test_a_job_whose_claim_expired_is_taken_over_and_a_held_one_is_left() -> None:
    ctx = await context()
    jobs = CopyJobs(ctx, "router-b", clock=lambda: NOW)
    orphaned = backup_spec(Claim("router-a", NOW - 1))
    held = backup_spec(Claim("router-a", NOW + 10))
    restore = dataclasses.replace(
        table("Copy", table_id=99),
        restore=RestoreInfo("arn:b", "arn:t", NOW, orphaned.name, claim=Claim("router-a", NOW - 1)),
    )
    taken, kept, restoring = await claims_after_sweep(ctx, jobs, orphaned, held, restore)
    assert taken == Claim("router-b", NOW + CLAIM_SECONDS)
    assert kept == Claim("router-a", NOW + 10)
    assert restoring == Claim("router-b", NOW + CLAIM_SECONDS)
    assert set(jobs.running) == {orphaned.name, restore.name}


async def test_a_finished_job_is_never_taken_again() -> None:
    ctx = await context()
    jobs = CopyJobs(ctx, "router-b", clock=lambda: NOW)
    available = backup_spec(Claim())
    assert available.backup is not None
    available = dataclasses.replace(
        available, backup=dataclasses.replace(available.backup, status="AVAILABLE")
    )
    (claim,) = await claims_after_sweep(ctx, jobs, available)
    assert claim == Claim() and not jobs.running


async def test_a_backups_table_is_kept_from_the_tables_clients_see() -> None:
    ctx = await context()
    spec = backup_spec(Claim())
    assert await ctx.catalog.create_table_spec(spec)
    await ctx.tables.refresh()
    assert spec.name in ctx.tables.hidden and spec.name not in ctx.tables.tables


async def test_an_import_whose_router_died_is_found_by_its_table_and_taken_over() -> None:
    from partita.api.operations.imports import ImportRecord
    from partita.control.model import NO_REVISION

    ctx = await context()
    ctx.imports = ctx.catalog  # type: ignore[assignment] - the memory store keeps imports too
    jobs = CopyJobs(ctx, "router-b", clock=lambda: NOW)
    arn = "arn:aws:dynamodb:us-east-1:000000000000:table/Loaded/import/01800000000000-abcdef12"
    record = ImportRecord(
        "01800000000000-abcdef12", arn, "Loaded", "arn:t", 7, {}, NOW, claim=Claim("router-a", NOW - 1)
    )
    assert await ctx.catalog.put_import(record.import_id, record.to_json(), NO_REVISION)  # type: ignore[attr-defined]
    # A table whose import record never got written (its router died in between).
    lost = dataclasses.replace(
        table("Lost", table_id=8),
        importing=arn.replace("Loaded", "Lost").replace("abcdef12", "0000aaaa"),
        created_at=NOW - 60,
    )
    for spec in (dataclasses.replace(table("Loaded", table_id=7), importing=arn), lost):
        assert await ctx.catalog.create_table_spec(spec)
    await ctx.tables.refresh()
    await jobs.sweep()
    stored = await ctx.catalog.get_import(record.import_id)  # type: ignore[attr-defined]
    assert stored is not None and Claim.from_json(stored[0]["claim"]) == Claim(
        "router-b", NOW + CLAIM_SECONDS
    )
    assert f"import/{record.import_id}" in jobs.running
    dropped = await ctx.catalog.get_table_spec("Lost")
    assert dropped is not None and dropped.deleting
    await jobs.close()
