"""OnDemandThroughput in CreateTable and UpdateTable: an on-demand table's maximum read
and write request units per second. The routers and Doorman hold the table to it
(`common.throughput.on_demand_ceiling`), refusing what goes past it with the throttling
reason `Table{Read,Write}MaxOnDemandThroughputExceeded`.

The rules and words are DynamoDB's as nubo-db's dynoxide captured them (eu-west-2,
2026-07-24): a member only with PAY_PER_REQUEST billing (the first present one named,
read first); at least 1, and -1 on UpdateTable to remove one; an UpdateTable merges
member by member over what the table has, its answer echoes the merge with a -1 as sent
while DescribeTable shows what is left; a switch to PROVISIONED drops both; an object
with no member asks for nothing.
"""

from __future__ import annotations

from typing import Any

from partita.api.shape import expect_type
from partita.common import errors

_INVALID = "One or more parameter values were invalid: "
MEMBERS = ("MaxReadRequestUnits", "MaxWriteRequestUnits")
REMOVE = -1  # an UpdateTable member that drops the table's maximum
Requested = tuple[int | None, int | None]  # (read, write) as sent; None: not given


def requested(value: Any) -> Requested | None:
    """The members an OnDemandThroughput sends; None when it sends none (or is absent)."""
    odt = expect_type(value, dict, "a structure")
    if odt is None:
        return None
    read, write = (expect_type(odt.get(name), int, "a number") for name in MEMBERS)
    return None if read is None and write is None else (read, write)


def on_create(asked: Requested | None, billing_mode: str) -> tuple[int, int]:
    """The maximum (read, write) a new table keeps; 0 for none."""
    if asked is None:
        return (0, 0)
    if billing_mode == "PROVISIONED":
        raise errors.validation(
            _INVALID + f"{_first_present(asked)} for OnDemandThroughput cannot be specified when table "
            "BillingMode is PROVISIONED."
        )
    _check_range(asked, allow_remove=False)
    return (asked[0] or 0, asked[1] or 0)


def on_update(
    asked: Requested, billing_mode: str, current: tuple[int, int]
) -> tuple[Requested, tuple[int, int]]:
    """(what UpdateTable's answer echoes, what the table keeps) for a table whose billing
    mode after the update is `billing_mode`."""
    if billing_mode == "PROVISIONED":
        raise errors.validation(
            _INVALID + f"{_first_present(asked)} for OnDemandThroughput cannot be specified when the table "
            "BillingMode is PROVISIONED"
        )
    _check_range(asked, allow_remove=True)
    echo = (
        asked[0] if asked[0] is not None else current[0] or None,
        asked[1] if asked[1] is not None else current[1] or None,
    )
    kept = tuple(0 if units is None or units == REMOVE else units for units in echo)
    return echo, (kept[0], kept[1])


def described(units: tuple[int, int] | Requested) -> dict[str, int] | None:
    """OnDemandThroughput as a table description shows it (None: it has none)."""
    out = {name: value for name, value in zip(MEMBERS, units, strict=True) if value}
    return out or None


def _first_present(asked: Requested) -> str:
    return next(name for name, value in zip(MEMBERS, asked, strict=True) if value is not None)


def _check_range(asked: Requested, *, allow_remove: bool) -> None:
    for name, value in zip(MEMBERS, asked, strict=True):
        if value is not None and value < 1 and not (allow_remove and value == REMOVE):
            raise errors.validation(
                _INVALID + f"Requested {name} for OnDemandThroughput for table is outside of valid range"
            )
