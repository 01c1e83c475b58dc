"""The table spec's Time to Live setting in the control store's JSON."""

from __future__ import annotations

import dataclasses

import orjson

from partita.control.model import KeyElement, TableSpec, TimeToLive


def _spec(**changes: object) -> TableSpec:
    spec = TableSpec(
        name="t",
        table_id=7,
        partition_key=KeyElement("pk", "S"),
        sort_key=None,
        attribute_definitions=(("pk", "S"),),
        billing_mode="PAY_PER_REQUEST",
        read_capacity=0,
        write_capacity=0,
        created_at=0.0,
    )
    return dataclasses.replace(spec, **changes)  # type: ignore[arg-type]


def test_the_setting_survives_the_json_round_trip() -> None:
    spec = _spec(time_to_live=TimeToLive("ENABLED", "expires", 1.5e9 + 0.25))
    back = TableSpec.from_json(orjson.loads(orjson.dumps(spec.to_json())))
    assert back.time_to_live == TimeToLive("ENABLED", "expires", 1.5e9 + 0.25)
    assert back == spec


def test_a_spec_written_before_time_to_live_existed_reads_as_disabled() -> None:
    data = _spec().to_json()
    del data["time_to_live"]
    assert TableSpec.from_json(data).time_to_live == TimeToLive("DISABLED", None, None)
    assert not TableSpec.from_json(data).time_to_live.active
