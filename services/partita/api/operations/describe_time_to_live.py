"""DescribeTimeToLive: the request names one table; the answer is its TTL setting.

DynamoDB answers `{"TimeToLiveStatus": "DISABLED"}` without an AttributeName both for a
table that never had TTL and for one where it was turned off.
"""

from __future__ import annotations

from typing import Any

from partita.api.operations import table_name_only
from partita.common import errors
from partita.control.model import TableStatus, TimeToLive


def validate(body: Any) -> str:
    return table_name_only.validate(body)


def description(ttl: TimeToLive, table_status: TableStatus) -> dict[str, Any]:
    """The TimeToLiveDescription of a table in `table_status`, or DynamoDB's refusal."""
    if table_status in ("CREATING", "DELETING"):
        raise errors.validation(f"Cannot describe time to live while table is in {table_status} state")
    out: dict[str, Any] = {"TimeToLiveStatus": ttl.status}
    if ttl.status != "DISABLED" and ttl.attribute_name is not None:
        out["AttributeName"] = ttl.attribute_name
    return out
