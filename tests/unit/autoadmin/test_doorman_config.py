"""The tables' Doorman resources the autoadmin publishes: one rcu and one wcu resource
per PROVISIONED table at its provisioned throughput, a valid repository Doorman loads,
rewritten (atomically) only when a spec changed, and followed by the local driver."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from partita.autoadmin.doorman_config import (
    TABLE_REFRESH_SECONDS,
    DoormanConfigFile,
    doorman_config,
    load_templates,
)
from partita.autoadmin.local import LocalAutoadmin
from partita.control.model import KeyElement, SecondaryIndex
from partita.control.store import MemoryControlStore
from partita.doorman.repository import ConfigError, ResourceRepository
from tests.unit.autoadmin.test_reconcile import spec
from tests.unit.records import put_record, table_record


def test_a_provisioned_table_has_its_rates_as_resources() -> None:
    repo = ResourceRepository.from_text(doorman_config([spec(read_capacity=300, write_capacity=100)]))
    assert repo.find("table/Orders/rcu").capacity == 300
    assert repo.find("table/Orders/wcu").capacity == 100
    wcu = repo.find("table/Orders/wcu")
    assert wcu.algorithm.kind == wcu.algorithm.FAIR_SHARE
    assert wcu.algorithm.refresh_interval == TABLE_REFRESH_SECONDS
    assert repo.find("something/else").identifier_glob == "*"


def test_an_operators_templates_follow_the_tables_and_a_tables_own_resource_wins() -> None:
    def template(glob: str, capacity: float) -> dict[str, object]:
        algorithm = {"kind": "STATIC", "lease_length": 10, "refresh_interval": 5}
        return {"identifier_glob": glob, "capacity": capacity, "algorithm": algorithm}

    templates = [template("*", 7), template("table/Orders/wcu", 1), template("batch/*", 50)]
    text = doorman_config([spec(read_capacity=300, write_capacity=100)], templates)
    repo = ResourceRepository.from_text(text)
    globs = [t.identifier_glob for t in repo.message.resources]
    assert globs == ["table/Orders/rcu", "table/Orders/wcu", "batch/*", "*"]  # theirs after, "*" last
    assert repo.find("table/Orders/wcu").capacity == 100
    assert repo.find("batch/x").capacity == 50
    assert repo.find("other").capacity == 7  # their catch-all, not the default


def test_the_templates_file_must_be_a_valid_configuration(tmp_path: Path) -> None:
    bad = tmp_path / "doorman.yaml"
    bad.write_text("resources: [{identifier_glob: a, capacity: 1}]")  # no "*", no algorithm
    with pytest.raises(ConfigError):
        load_templates(bad)


def test_deleted_tables_have_no_resources() -> None:
    repo = ResourceRepository.from_text(doorman_config([spec(name="Gone", deleting=True)]))
    assert [t.identifier_glob for t in repo.message.resources] == ["*"]


def test_an_on_demand_table_starts_at_the_initial_allowance_and_follows_its_peak() -> None:
    repo = ResourceRepository.from_text(doorman_config([spec(name="Lazy", billing_mode="PAY_PER_REQUEST")]))
    rcu, wcu = repo.find("table/Lazy/rcu"), repo.find("table/Lazy/wcu")
    assert (rcu.capacity, wcu.capacity) == (12000, 4000)  # twice DynamoDB's initial peak
    assert wcu.algorithm.kind == wcu.algorithm.FAIR_SHARE
    params = {p.name: p.value for p in wcu.algorithm.parameters}
    # The peak of the routers' wants, which are twice their demand.
    assert params == {"peak_memory_seconds": "1800", "peak_multiplier": "1"}


def test_an_on_demand_tables_warm_throughput_raises_its_starting_capacity() -> None:
    warm = spec(name="Warm", billing_mode="PAY_PER_REQUEST", warm_throughput=(0, 9000))
    repo = ResourceRepository.from_text(doorman_config([warm]))
    assert (repo.find("table/Warm/rcu").capacity, repo.find("table/Warm/wcu").capacity) == (12000, 9000)


def test_an_on_demand_tables_maximum_caps_its_capacity_and_its_growth() -> None:
    capped = spec(name="Capped", billing_mode="PAY_PER_REQUEST", on_demand_max=(0, 300))
    repo = ResourceRepository.from_text(doorman_config([capped]))
    rcu, wcu = repo.find("table/Capped/rcu"), repo.find("table/Capped/wcu")
    assert (rcu.capacity, wcu.capacity) == (12000, 300)
    assert {p.name: p.value for p in wcu.algorithm.parameters}["capacity_ceiling"] == "300"
    assert "capacity_ceiling" not in {p.name for p in rcu.algorithm.parameters}  # reads: no maximum


def test_a_global_index_has_its_own_rates_and_a_local_one_none() -> None:
    by_g = SecondaryIndex("by-g", "GLOBAL", KeyElement("g", "S"), None, read_capacity=50, write_capacity=7)
    by_l = SecondaryIndex("by-l", "LOCAL", KeyElement("pk", "S"), KeyElement("l", "S"))
    indexed = spec(read_capacity=300, write_capacity=100, indexes=(by_g, by_l))
    repo = ResourceRepository.from_text(doorman_config([indexed]))
    assert repo.find("table/Orders/index/by-g/rcu").capacity == 50
    assert repo.find("table/Orders/index/by-g/wcu").capacity == 7
    assert repo.find("table/Orders/index/by-l/wcu").identifier_glob == "*"  # the table's own
    on_demand = dataclasses.replace(indexed, billing_mode="PAY_PER_REQUEST", on_demand_max=(0, 300))
    repo = ResourceRepository.from_text(doorman_config([on_demand]))
    wcu = repo.find("table/Orders/index/by-g/wcu")
    assert wcu.capacity == 4000  # an on-demand table's allowance, not the table's maximum
    assert "capacity_ceiling" not in {p.name for p in wcu.algorithm.parameters}


def test_the_file_is_written_only_when_it_changed(tmp_path: Path) -> None:
    path = tmp_path / "doorman.yaml"
    sink = DoormanConfigFile(path)
    tables = [spec(write_capacity=100)]
    assert sink.publish(tables)
    stamp = path.stat().st_mtime_ns
    assert not sink.publish(tables)
    assert not DoormanConfigFile(path).publish(tables)  # a restarted autoadmin: same text
    assert path.stat().st_mtime_ns == stamp
    assert sink.publish([dataclasses.replace(tables[0], write_capacity=200)])
    assert ResourceRepository.from_file(path).find("table/Orders/wcu").capacity == 200
    assert not list(tmp_path.glob("*.tmp"))


async def test_the_driver_publishes_on_every_pass(tmp_path: Path) -> None:
    store = MemoryControlStore()
    path = tmp_path / "doorman.yaml"
    autoadmin = LocalAutoadmin(store, doorman_config=DoormanConfigFile(path))
    await put_record(
        store, table_record(name="Music", billing_mode="PROVISIONED", read_capacity=5, write_capacity=7)
    )
    await autoadmin.reconcile_once()
    assert ResourceRepository.from_file(path).find("table/Music/wcu").capacity == 7
    await put_record(
        store, table_record(name="Music", billing_mode="PROVISIONED", read_capacity=5, write_capacity=70)
    )
    await autoadmin.reconcile_once()
    assert ResourceRepository.from_file(path).find("table/Music/wcu").capacity == 70
