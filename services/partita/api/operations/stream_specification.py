"""StreamSpecification in CreateTable and UpdateTable: DynamoDB's checks and what the
table's stream becomes (`control.model.StreamSpec`).

The member's shape (StreamEnabled required, StreamViewType one of four) is checked from
the service model before this runs. The messages are DynamoDB's, as a 2026 catalogue of
live answers recorded them (DDB-TABLE-035, -050, -437; Alternator's test_streams.py,
run against DynamoDB, matches the UpdateTable ones by pattern).
"""

from __future__ import annotations

from typing import Any

from partita.api.operations.common import INVALID
from partita.common import errors
from partita.control.model import StreamSpec, StreamViewType


def _setting(spec: Any) -> tuple[bool, StreamViewType | None]:
    assert isinstance(spec, dict)
    return spec.get("StreamEnabled") is True, spec.get("StreamViewType")


def on_create(spec: Any, now: float) -> StreamSpec:
    """The new table's stream; no stream when `spec` is None or disables it."""
    if spec is None:
        return StreamSpec()
    enabled, view = _setting(spec)
    if enabled and view is None:
        raise errors.validation(
            INVALID + "Table is being created with a stream enabled, UpdateViewType is required"
        )
    if not enabled and view is not None:
        raise errors.validation(
            INVALID + "Table is being created with a stream disabled, UpdateViewType should not be specified"
        )
    return StreamSpec(enabled=True, view_type=view, created_at=now) if enabled else StreamSpec()


def check_update(spec: dict[str, Any]) -> None:
    """What UpdateTable refuses before it looks at the table."""
    enabled, view = _setting(spec)
    if enabled and view is None:
        raise errors.validation(INVALID + "If stream is being enabled then UpdateViewType is required")
    if not enabled and view is not None:
        raise errors.validation(
            INVALID + "If stream is being disabled, then UpdateViewType must not be specified"
        )


def on_update(current: StreamSpec, spec: dict[str, Any], table_name: str, now: float) -> StreamSpec:
    """The table's stream after UpdateTable's StreamSpecification: a new stream when
    enabled (a stream's view type cannot change in place), the same one closed when
    disabled."""
    enabled, view = _setting(spec)
    if enabled:
        if current.enabled:
            raise errors.validation(f"Table already has an enabled stream: TableName: {table_name}")
        assert view is not None  # check_update refused a missing view type
        return current.started(view, now)
    if not current.enabled:
        raise errors.validation(f"Table has no stream to disable: TableName: {table_name}")
    return current.stopped(now)
