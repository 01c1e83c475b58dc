"""The table record's Time to Live setting in the control store's JSON."""

from __future__ import annotations

import dataclasses

import orjson

from partita.control.model import TableRecord, TimeToLive
from tests.unit import records


def test_the_setting_survives_the_json_round_trip() -> None:
    record = dataclasses.replace(
        records.table_record(), time_to_live=TimeToLive("ENABLED", "expires", 1.5e9 + 0.25)
    )
    back = TableRecord.from_json(orjson.loads(orjson.dumps(record.to_json())))
    assert back.time_to_live == TimeToLive("ENABLED", "expires", 1.5e9 + 0.25)
    assert back == record


def test_a_record_written_before_time_to_live_existed_reads_as_disabled() -> None:
    data = records.table_record().to_json()
    del data["time_to_live"]
    assert TableRecord.from_json(data).time_to_live == TimeToLive("DISABLED", None, None)
    assert not TableRecord.from_json(data).time_to_live.active
