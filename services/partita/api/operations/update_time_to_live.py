"""UpdateTimeToLive: validate the request, and DynamoDB's rules for changing the setting.

DynamoDB's rules, as documented and as it answers (content checks come before the
cool-down check):
- one TTL attribute per table: enabling while TTL is on is refused ("already enabled"
  for the same attribute, "active on a different AttributeName" for another one), and
  disabling must name the attribute in use;
- disabling while TTL is off is refused ("already disabled");
- after a change, further changes are refused for a cool-down (the documentation says
  up to one hour; DynamoDB has been measured refusing for about 31 minutes).

`change` is pure (the clock is an argument), so the rules are tested without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.api.operations import common
from partita.api.shape import Violations, expect_dict, expect_type
from partita.common import errors
from partita.control.model import TimeToLive

# UpdateTimeToLive's documented cool-down: "It can take up to one hour for the change to
# fully process. Any additional UpdateTimeToLive calls for the same table during this one
# hour duration result in a ValidationException."
COOL_DOWN_SECONDS = 3600.0
MAX_ATTRIBUTE_NAME = 255
_WHERE = "timeToLiveSpecification"
_DIFFERENT = "TimeToLive is active on a different AttributeName: current AttributeName is "


@dataclass(frozen=True)
class UpdateTimeToLiveRequest:
    table_name: str
    attribute_name: str
    enabled: bool


def validate(body: Any) -> UpdateTimeToLiveRequest:
    body = expect_dict(body)
    v = Violations()
    name = common.string(body, "TableName")
    v.table_name(name)
    spec = expect_type(body.get("TimeToLiveSpecification"), dict, "a structure")
    attribute: str | None = None
    enabled: bool | None = None
    if v.not_null(spec, _WHERE):
        attribute = common.string(spec, "AttributeName")
        enabled = common.boolean(spec, "Enabled")
        # Members in the order the request gives them, as DynamoDB reports them.
        for member in _member_order(spec):
            if member == "AttributeName" and v.not_null(attribute, f"{_WHERE}.attributeName"):
                assert attribute is not None
                _attribute_name_length(v, attribute)
            elif member == "Enabled":
                v.not_null(enabled, f"{_WHERE}.enabled")
    v.raise_if_any()
    assert name is not None and attribute is not None and enabled is not None
    return UpdateTimeToLiveRequest(name, attribute, enabled)


def _member_order(spec: dict[str, Any]) -> list[str]:
    members = ["AttributeName", "Enabled"]
    given = [k for k in spec if k in members]
    return given + [m for m in members if m not in given]


def _attribute_name_length(v: Violations, attribute: str) -> None:
    where = f"{_WHERE}.attributeName"
    if len(attribute) > MAX_ATTRIBUTE_NAME:
        v.add(attribute, where, f"Member must have length less than or equal to {MAX_ATTRIBUTE_NAME}")
    if not attribute:
        v.add(attribute, where, "Member must have length greater than or equal to 1")


def change(current: TimeToLive, attribute: str, enabled: bool, now: float) -> TimeToLive:
    """The setting after the request, or DynamoDB's ValidationException refusing it.

    The new status is the settled one at once: DynamoDB's DescribeTimeToLive shows ENABLED
    or DISABLED within about two seconds and was never seen ENABLING at one-second polls,
    and Partita's storage nodes pick the change up within their control-store resync.
    """
    if enabled and current.active:
        if current.attribute_name == attribute:
            raise errors.validation("TimeToLive is already enabled")
        raise errors.validation(_DIFFERENT + str(current.attribute_name))
    if not enabled:
        if not current.active:
            raise errors.validation("TimeToLive is already disabled")
        if current.attribute_name != attribute:
            raise errors.validation(_DIFFERENT + str(current.attribute_name))
    if current.changed_at is not None and now - current.changed_at < COOL_DOWN_SECONDS:
        raise errors.validation("Time to live has been modified multiple times within a fixed interval")
    if enabled:
        return TimeToLive("ENABLED", attribute, now)
    return TimeToLive("DISABLED", None, now)
