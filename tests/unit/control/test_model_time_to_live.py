"""The table spec's Time to Live setting in the control store's JSON."""

from __future__ import annotations

import orjson

from partita.control.model import TableSpec, TimeToLive
from tests.unit.records import table_spec


def test_the_setting_survives_the_json_round_trip() -> None:
    spec = table_spec(time_to_live=TimeToLive("ENABLED", "expires", 1.5e9 + 0.25))
    back = TableSpec.from_json(orjson.loads(orjson.dumps(spec.to_json())))
    assert back.time_to_live == TimeToLive("ENABLED", "expires", 1.5e9 + 0.25)
    assert back == spec


def test_a_spec_written_before_time_to_live_existed_reads_as_disabled() -> None:
    data = table_spec().to_json()
    del data["time_to_live"]
    assert TableSpec.from_json(data).time_to_live == TimeToLive("DISABLED", None, None)
    assert not TableSpec.from_json(data).time_to_live.active
