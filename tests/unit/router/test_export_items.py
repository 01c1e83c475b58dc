"""Which items an export writes: the spooled table as it is, corrected by the history
since the export time."""

from __future__ import annotations

import io
from typing import Any

import orjson

from partita.api import point_in_time
from partita.router.copy_jobs import _exported_items


def test_an_export_writes_items_unchanged_since_its_time_and_the_images_then_of_the_rest() -> None:
    def spooled(pk: str, v: str) -> bytes:
        return orjson.dumps([{"pk": {"S": pk}}, {"pk": {"S": pk}, "v": {"S": v}}]) + b"\n"

    spool = io.BytesIO(spooled("kept", "same") + spooled("changed", "now") + spooled("born", "later"))
    undo = point_in_time.Undo(10.0)
    for index, (pk, old) in enumerate([("changed", "then"), ("born", None), ("gone", "was")]):
        record_: dict[str, Any] = {"k": {"pk": {"S": pk}}, "t": 11.0}
        if old is not None:
            record_["o"] = {"pk": {"S": pk}, "v": {"S": old}}
        undo.add(point_in_time.Change(11.0, index, 0, record_))
    items = {i["pk"]["S"]: i["v"]["S"] for i in _exported_items(spool, undo)}
    assert items == {"kept": "same", "changed": "then", "gone": "was"}
